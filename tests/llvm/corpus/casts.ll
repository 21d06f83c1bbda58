; Every cast instruction, with nneg/nuw/nsw flags and vector forms,
; plus ptr<->int and address-space casts.
target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128"
target triple = "x86_64-unknown-linux-gnu"

define i64 @int_casts(i32 %x, i64 %y) {
  %t = trunc i64 %y to i16
  %t.nuw = trunc nuw i64 %y to i32
  %t.nsw = trunc nsw i64 %y to i8
  %t.both = trunc nuw nsw i64 %y to i1
  %z = zext i16 %t to i64
  %zn = zext nneg i32 %x to i64
  %s = sext i8 %t.nsw to i64
  %b = zext i1 %t.both to i64
  %w = zext i32 %t.nuw to i64
  %r0 = add i64 %z, %zn
  %r1 = add i64 %r0, %s
  %r2 = add i64 %r1, %b
  %r3 = add i64 %r2, %w
  ret i64 %r3
}

define double @float_casts(float %f, double %d, i32 %i) {
  %ext = fpext float %f to double
  %tr = fptrunc double %d to float
  %tr.fm = fptrunc nnan afn double %d to float
  %ext2 = fpext fast float %tr.fm to double
  %fi = fptosi double %d to i32
  %fu = fptoui float %tr to i64
  %si = sitofp i32 %i to double
  %ui = uitofp i64 %fu to double
  %uin = uitofp nneg i32 %fi to float
  %back = fpext float %uin to double
  %a = fadd double %ext, %si
  %b = fadd double %a, %ui
  %c = fadd double %b, %back
  %e = fadd double %c, %ext2
  ret double %e
}

define i64 @bit_casts(double %d, <2 x i32> %v) {
  %i = bitcast double %d to i64
  %fv = bitcast <2 x i32> %v to <2 x float>
  %iv = bitcast <2 x float> %fv to i64
  %h = bitcast i16 15360 to half
  %hb = bitcast half %h to bfloat
  %hi = bitcast bfloat %hb to i16
  %hz = zext i16 %hi to i64
  %r0 = xor i64 %i, %iv
  %r1 = xor i64 %r0, %hz
  ret i64 %r1
}

define ptr addrspace(1) @ptr_casts(ptr %p, i64 %addr) {
  %pi = ptrtoint ptr %p to i64
  %pi32 = ptrtoint ptr %p to i32
  %ext = zext i32 %pi32 to i64
  %sum = add i64 %pi, %ext
  %ip = inttoptr i64 %sum to ptr
  %ip2 = inttoptr i64 %addr to ptr
  %d = ptrtoint ptr %ip2 to i64
  %q = getelementptr i8, ptr %ip, i64 %d
  %as = addrspacecast ptr %q to ptr addrspace(1)
  %back = addrspacecast ptr addrspace(1) %as to ptr
  %as2 = addrspacecast ptr %back to ptr addrspace(1)
  ret ptr addrspace(1) %as2
}

define <4 x float> @vector_casts(<4 x i32> %a, <4 x double> %b, <4 x ptr> %ps) {
  %t = trunc <4 x i32> %a to <4 x i16>
  %z = zext <4 x i16> %t to <4 x i64>
  %s = sext <4 x i16> %t to <4 x i32>
  %f = sitofp <4 x i32> %s to <4 x float>
  %g = fptrunc <4 x double> %b to <4 x float>
  %pi = ptrtoint <4 x ptr> %ps to <4 x i64>
  %sum = add <4 x i64> %z, %pi
  %ff = uitofp <4 x i64> %sum to <4 x float>
  %r0 = fadd <4 x float> %f, %g
  %r1 = fadd <4 x float> %r0, %ff
  %ip = inttoptr <4 x i64> %sum to <4 x ptr>
  %fi = fptosi <4 x float> %r1 to <4 x i32>
  ret <4 x float> %r1
}

define i8 @convert_loop(ptr %dst, ptr %src, i32 %n) {
entry:
  %pos = icmp sgt i32 %n, 0
  br i1 %pos, label %loop, label %exit

loop:
  %i = phi i32 [ 0, %entry ], [ %i.next, %loop ]
  %idx = zext nneg i32 %i to i64
  %ps = getelementptr inbounds float, ptr %src, i64 %idx
  %v = load float, ptr %ps, align 4
  %c = fptosi float %v to i32
  %t = trunc i32 %c to i8
  %pd = getelementptr inbounds i8, ptr %dst, i64 %idx
  store i8 %t, ptr %pd, align 1
  %i.next = add nuw nsw i32 %i, 1
  %more = icmp slt i32 %i.next, %n
  br i1 %more, label %loop, label %exit

exit:
  ret i8 0
}
