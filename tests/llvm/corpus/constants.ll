; Constants and constant expressions: inttoptr of an absolute address as a
; call target, ptrtoint, getelementptr constexprs (inbounds, inrange),
; addrspacecast, sub/add/xor constexprs, blockaddress, undef/poison,
; zeroinitializer, strings, and special float values.
target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128"
target triple = "x86_64-unknown-linux-gnu"

%S = type { i32, [4 x i64], double }

@arr = global [8 x i32] [i32 1, i32 2, i32 3, i32 4, i32 5, i32 6, i32 7, i32 8]
@s = global %S { i32 -1, [4 x i64] [i64 0, i64 1, i64 -9223372036854775808, i64 9223372036854775807], double 0x7FF8000000000000 }
@third = global ptr getelementptr inbounds ([8 x i32], ptr @arr, i64 0, i64 2)
@field = global ptr getelementptr (%S, ptr @s, i32 0, i32 1, i64 3)
@nuwgep = global ptr getelementptr inbounds nuw (i8, ptr @arr, i64 4)
@vtable = constant { [3 x ptr] } { [3 x ptr] [ptr null, ptr @callee, ptr @callee] }
@vptr = global ptr getelementptr inbounds inrange(-8, 16) ({ [3 x ptr] }, ptr @vtable, i32 0, i32 0, i32 1)
@addr = global i64 ptrtoint (ptr @arr to i64)
@diff = global i64 sub (i64 ptrtoint (ptr @third to i64), i64 ptrtoint (ptr @arr to i64))
@rel = global i32 trunc (i64 sub (i64 ptrtoint (ptr @callee to i64), i64 ptrtoint (ptr @rel to i64)) to i32)
@xored = global i64 xor (i64 ptrtoint (ptr @arr to i64), i64 -1)
@gen = global ptr addrspace(1) addrspacecast (ptr @arr to ptr addrspace(1))
@absolute = global ptr inttoptr (i64 4096 to ptr)
@str = private unnamed_addr constant [13 x i8] c"hello\09\22w\5C\00\FF\0A\00"
@u = global i32 undef
@p = global i32 poison
@z = global [4 x %S] zeroinitializer
@nulls = global { ptr, ptr addrspace(3), i1 } { ptr null, ptr addrspace(3) null, i1 false }

@f.nan = constant double 0x7FF8000000000000
@f.snan = constant double 0x7FF4000000000001
@f.negnan = constant double 0xFFF8000000000000
@f.inf = constant double 0x7FF0000000000000
@f.ninf = constant double 0xFFF0000000000000
@f.negzero = constant double -0.000000e+00
@f.denorm = constant double 4.940656e-324
@f.max = constant double 0x7FEFFFFFFFFFFFFF
@f.tenth = constant double 1.000000e-01
@f.big = constant double 1.0e+300
@f.float.inf = constant float 0x7FF0000000000000
@f.float.nan = constant float 0x7FF8000000000000
@f.float.tenth = constant float 0x3FB99999A0000000
@f.float.negzero = constant float -0.0

define i32 @callee(i32 %x) {
  ret i32 %x
}

define i32 @call_absolute(i32 %x) {
  %r = call i32 inttoptr (i64 140737488355328 to ptr)(i32 %x)
  %s = call i32 @callee(i32 ptrtoint (ptr @arr to i32))
  %t = add i32 %r, %s
  ret i32 %t
}

define i64 @use_constexprs() {
  %v = load i32, ptr getelementptr inbounds ([8 x i32], ptr @arr, i64 0, i64 5), align 4
  %a = load i64, ptr getelementptr (i8, ptr @s, i64 16), align 8
  %w = sext i32 %v to i64
  %r = add i64 %a, %w
  %c = add i64 %r, ptrtoint (ptr @s to i64)
  %d = icmp eq ptr @third, inttoptr (i64 8 to ptr)
  %e = select i1 %d, i64 %c, i64 sub (i64 0, i64 ptrtoint (ptr @arr to i64))
  ret i64 %e
}

define void @store_specials(ptr %p) {
  store double 0x7FF8000000000000, ptr %p, align 8
  store double 0xFFF0000000000000, ptr %p, align 8
  store double -0.0, ptr %p, align 8
  store double 0x400921FB54442D18, ptr %p, align 8
  store float 0x47EFFFFFE0000000, ptr %p, align 4
  store i32 undef, ptr %p, align 4
  store i8 poison, ptr %p, align 1
  store i1 true, ptr %p, align 1
  store i64 -1, ptr %p, align 8
  store i256 115792089237316195423570985008687907853269984665640564039457584007913129639935, ptr %p, align 8
  store <2 x i32> <i32 poison, i32 undef>, ptr %p, align 8
  store ptr addrspace(1) addrspacecast (ptr @arr to ptr addrspace(1)), ptr %p, align 8
  ret void
}

define double @fold_me() {
  %a = fadd double 0x7FF0000000000000, 1.0
  %b = fmul double %a, 0.0
  %c = fdiv double 1.0, -0.0
  %d = fadd double %b, %c
  ret double %d
}
