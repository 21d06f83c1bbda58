; Vectors: extractelement, insertelement, shufflevector (poison/undef mask
; lanes, splat idiom), vector constants (splat, mixed, poison lanes),
; vector select/icmp, and a vectorisable saxpy loop.
target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128"
target triple = "x86_64-unknown-linux-gnu"

@vconst = constant <4 x float> <float 1.0, float 2.0, float 3.0, float 4.0>
@vsplat = constant <8 x i16> splat (i16 7)
@vmixed = constant <3 x i8> <i8 1, i8 poison, i8 undef>
@vptrs = global <2 x ptr> <ptr @vconst, ptr null>

define float @elements(<4 x float> %v, i32 %i) {
  %a = extractelement <4 x float> %v, i32 0
  %b = extractelement <4 x float> %v, i32 %i
  %c = extractelement <4 x float> %v, i64 3
  %w = insertelement <4 x float> %v, float %a, i32 2
  %x = insertelement <4 x float> %w, float %b, i32 %i
  %y = insertelement <4 x float> poison, float %c, i64 0
  %d = extractelement <4 x float> %x, i32 1
  %e = extractelement <4 x float> %y, i32 0
  %s = fadd float %d, %e
  ret float %s
}

define <8 x i32> @shuffles(<4 x i32> %a, <4 x i32> %b, i32 %s) {
  %cat = shufflevector <4 x i32> %a, <4 x i32> %b, <8 x i32> <i32 0, i32 1, i32 2, i32 3, i32 4, i32 5, i32 6, i32 7>
  %rev = shufflevector <8 x i32> %cat, <8 x i32> poison, <8 x i32> <i32 7, i32 6, i32 5, i32 4, i32 3, i32 2, i32 1, i32 0>
  %holes = shufflevector <8 x i32> %rev, <8 x i32> undef, <8 x i32> <i32 0, i32 poison, i32 2, i32 poison, i32 4, i32 5, i32 poison, i32 7>
  %ins = insertelement <8 x i32> poison, i32 %s, i64 0
  %splat = shufflevector <8 x i32> %ins, <8 x i32> poison, <8 x i32> zeroinitializer
  %narrow = shufflevector <8 x i32> %splat, <8 x i32> %holes, <2 x i32> <i32 1, i32 9>
  %wide = shufflevector <2 x i32> %narrow, <2 x i32> poison, <8 x i32> <i32 0, i32 1, i32 0, i32 1, i32 0, i32 1, i32 0, i32 1>
  %sum = add <8 x i32> %holes, %splat
  %r = xor <8 x i32> %sum, %wide
  ret <8 x i32> %r
}

define <4 x i1> @masks(<4 x i32> %a) {
  %c = icmp ult <4 x i32> %a, <i32 1, i32 2, i32 3, i32 4>
  %d = and <4 x i1> %c, <i1 true, i1 false, i1 true, i1 false>
  %e = xor <4 x i1> %d, splat (i1 true)
  %f = select <4 x i1> %e, <4 x i1> %c, <4 x i1> zeroinitializer
  ret <4 x i1> %f
}

define <2 x i64> @vector_of_ptrs(<2 x ptr> %ps) {
  %a = ptrtoint <2 x ptr> %ps to <2 x i64>
  %p0 = extractelement <2 x ptr> %ps, i32 0
  %l = load <2 x i64>, ptr %p0, align 16
  %r = add <2 x i64> %a, %l
  ret <2 x i64> %r
}

define void @saxpy(ptr noalias %y, ptr noalias readonly %x, float %a, i64 %n) {
entry:
  %pos = icmp sgt i64 %n, 0
  br i1 %pos, label %loop, label %exit

loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %loop ]
  %px = getelementptr inbounds float, ptr %x, i64 %i
  %py = getelementptr inbounds float, ptr %y, i64 %i
  %vx = load float, ptr %px, align 4
  %vy = load float, ptr %py, align 4
  %ax = fmul float %a, %vx
  %r = fadd float %ax, %vy
  store float %r, ptr %py, align 4
  %i.next = add nuw nsw i64 %i, 1
  %done = icmp eq i64 %i.next, %n
  br i1 %done, label %exit, label %loop, !llvm.loop !0

exit:
  ret void
}

define <4 x double> @vector_math(<4 x double> %a, <4 x double> %b) {
  %f = call <4 x double> @llvm.fma.v4f64(<4 x double> %a, <4 x double> %b, <4 x double> splat (double 1.0))
  %s = call fast double @llvm.vector.reduce.fadd.v4f64(double -0.0, <4 x double> %f)
  %m = call <4 x double> @llvm.maxnum.v4f64(<4 x double> %f, <4 x double> zeroinitializer)
  %x = call i32 @llvm.vector.reduce.add.v4i32(<4 x i32> <i32 1, i32 2, i32 3, i32 4>)
  %ins = insertelement <4 x double> %m, double %s, i32 0
  ret <4 x double> %ins
}

declare <4 x double> @llvm.fma.v4f64(<4 x double>, <4 x double>, <4 x double>)
declare double @llvm.vector.reduce.fadd.v4f64(double, <4 x double>)
declare <4 x double> @llvm.maxnum.v4f64(<4 x double>, <4 x double>)
declare i32 @llvm.vector.reduce.add.v4i32(<4 x i32>)

!0 = distinct !{!0, !1, !2}
!1 = !{!"llvm.loop.vectorize.enable", i1 true}
!2 = !{!"llvm.loop.vectorize.width", i32 4}
