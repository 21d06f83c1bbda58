; Scalable vectors on an SVE target: vscale types, splat constants,
; insert/extract/shuffle, scalable loads/stores and GEPs, llvm.vscale,
; and a vector-length-agnostic loop.
target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i8:8:32-i16:16:32-i64:64-i128:128-n32:64-S128-Fn32"
target triple = "aarch64-unknown-linux-gnu"

define <vscale x 4 x float> @scale(<vscale x 4 x float> %a, float %s) #0 {
  %ins = insertelement <vscale x 4 x float> poison, float %s, i64 0
  %splat = shufflevector <vscale x 4 x float> %ins, <vscale x 4 x float> poison, <vscale x 4 x i32> zeroinitializer
  %m = fmul <vscale x 4 x float> %a, %splat
  %k = fadd <vscale x 4 x float> %m, splat (float 1.0)
  %e = extractelement <vscale x 4 x float> %k, i64 0
  %e2 = fadd float %e, %s
  %r = insertelement <vscale x 4 x float> %k, float %e2, i64 1
  ret <vscale x 4 x float> %r
}

define <vscale x 2 x i64> @int_ops(<vscale x 2 x i64> %a, <vscale x 2 x i1> %mask) #0 {
  %b = add nsw <vscale x 2 x i64> %a, splat (i64 3)
  %c = icmp sgt <vscale x 2 x i64> %b, zeroinitializer
  %d = and <vscale x 2 x i1> %c, %mask
  %e = select <vscale x 2 x i1> %d, <vscale x 2 x i64> %b, <vscale x 2 x i64> %a
  %f = trunc <vscale x 2 x i64> %e to <vscale x 2 x i32>
  %g = sext <vscale x 2 x i32> %f to <vscale x 2 x i64>
  ret <vscale x 2 x i64> %g
}

define void @memory(ptr %p, ptr %q) #0 {
  %v = load <vscale x 4 x i32>, ptr %p, align 16
  %g = getelementptr <vscale x 4 x i32>, ptr %q, i64 1
  store <vscale x 4 x i32> %v, ptr %g, align 16
  ret void
}

define void @vla_add(ptr noalias %dst, ptr noalias readonly %src, i64 %n) #0 {
entry:
  %vs = call i64 @llvm.vscale.i64()
  %step = shl nuw nsw i64 %vs, 2
  %trip = udiv i64 %n, %step
  %any = icmp ugt i64 %trip, 0
  br i1 %any, label %loop, label %exit

loop:
  %iv = phi i64 [ 0, %entry ], [ %iv.next, %loop ]
  %off = mul i64 %iv, %step
  %ps = getelementptr inbounds float, ptr %src, i64 %off
  %pd = getelementptr inbounds float, ptr %dst, i64 %off
  %x = load <vscale x 4 x float>, ptr %ps, align 4
  %y = load <vscale x 4 x float>, ptr %pd, align 4
  %s = fadd <vscale x 4 x float> %x, %y
  store <vscale x 4 x float> %s, ptr %pd, align 4
  %iv.next = add nuw i64 %iv, 1
  %done = icmp eq i64 %iv.next, %trip
  br i1 %done, label %exit, label %loop

exit:
  ret void
}

declare i64 @llvm.vscale.i64()

attributes #0 = { "target-features"="+sve" vscale_range(1,16) }
