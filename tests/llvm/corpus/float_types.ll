; Floating-point types other than float/double: half, bfloat, x86_fp80,
; fp128, ppc_fp128 constants (hex forms 0xH, 0xR, 0xK, 0xL, 0xM), their
; arithmetic and conversions.
target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128"
target triple = "x86_64-unknown-linux-gnu"

@h.one = constant half 0xH3C00
@h.inf = constant half 0xH7C00
@h.nan = constant half 0xH7E00
@h.negzero = constant half 0xH8000
@bf.one = constant bfloat 0xR3F80
@bf.nan = constant bfloat 0xR7FC0
@x87.one = constant x86_fp80 0xK3FFF8000000000000000
@x87.pi = constant x86_fp80 0xK4000C90FDAA22168C235
@q.one = constant fp128 0xL00000000000000003FFF000000000000
@q.negzero = constant fp128 0xL00000000000000008000000000000000
@ppc.one = constant ppc_fp128 0xM3FF00000000000000000000000000000
@halves = constant <4 x half> <half 0xH3C00, half 0xH4000, half 0xH0000, half 0xHBC00>

define half @half_math(half %a, half %b) {
  %s = fadd half %a, %b
  %m = fmul fast half %s, 0xH4000
  %c = fcmp olt half %m, 0xH0000
  %r = select i1 %c, half 0xH0000, half %m
  ret half %r
}

define bfloat @bf_math(bfloat %a, float %f) {
  %t = fptrunc float %f to bfloat
  %s = fadd bfloat %a, %t
  %n = fneg bfloat %s
  ret bfloat %n
}

define x86_fp80 @ext_math(x86_fp80 %a, double %d) {
  %e = fpext double %d to x86_fp80
  %s = fadd x86_fp80 %a, %e
  %m = fmul x86_fp80 %s, 0xK3FFF8000000000000000
  ret x86_fp80 %m
}

define fp128 @quad_math(fp128 %a, i64 %i) {
  %f = sitofp i64 %i to fp128
  %s = fadd fp128 %a, %f
  %d = fdiv fp128 %s, 0xL00000000000000004000000000000000
  ret fp128 %d
}

define double @convert_all(half %h, bfloat %b, x86_fp80 %x, fp128 %q) {
  %h2 = fpext half %h to double
  %b2 = fpext bfloat %b to double
  %x2 = fptrunc x86_fp80 %x to double
  %q2 = fptrunc fp128 %q to double
  %a = fadd double %h2, %b2
  %c = fadd double %a, %x2
  %d = fadd double %c, %q2
  ret double %d
}

define void @half_loop(ptr noalias %out, ptr noalias readonly %in, i64 %n) {
entry:
  br label %loop

loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %loop ]
  %pi = getelementptr inbounds half, ptr %in, i64 %i
  %v = load half, ptr %pi, align 2
  %w = fpext half %v to float
  %sq = fmul float %w, %w
  %t = fptrunc float %sq to half
  %po = getelementptr inbounds half, ptr %out, i64 %i
  store half %t, ptr %po, align 2
  %i.next = add nuw i64 %i, 1
  %done = icmp eq i64 %i.next, %n
  br i1 %done, label %exit, label %loop

exit:
  ret void
}
