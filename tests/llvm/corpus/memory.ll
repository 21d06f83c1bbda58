; Memory: alloca (array size, align, addrspace), load/store (volatile,
; align, !nontemporal, !invariant.load, !nonnull, !range, !tbaa, !noundef),
; getelementptr flags (inbounds, nuw, nusw, inrange-free), vector GEPs.
target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128-A5"
target triple = "x86_64-unknown-linux-gnu"

%Pair = type { i32, [4 x float] }

define void @allocas(i32 %n) {
entry:
  %a = alloca i32, align 4
  %b = alloca [16 x double], align 16
  %c = alloca i8, i32 %n, align 1
  %d = alloca %Pair, i64 4, align 8
  %e = alloca float, addrspace(5)
  %f = alloca <4 x i32>, align 16, addrspace(5)
  store i32 %n, ptr %a, align 4
  store volatile i32 0, ptr %a, align 4
  store float 1.0, ptr addrspace(5) %e, align 4
  %v = load volatile i32, ptr %a, align 4
  %p = getelementptr inbounds [16 x double], ptr %b, i64 0, i64 3
  store double 2.0, ptr %p, align 8
  %q = getelementptr i8, ptr %c, i32 %v
  store i8 1, ptr %q, align 1
  store <4 x i32> zeroinitializer, ptr addrspace(5) %f, align 16
  ret void
}

define i32 @loads(ptr %p, ptr %pp) {
  %a = load i32, ptr %p, align 4, !range !0, !noundef !1
  %b = load i32, ptr %p, align 4, !nontemporal !2
  %c = load i32, ptr %p, align 4, !invariant.load !1
  %d = load ptr, ptr %pp, align 8, !nonnull !1, !dereferenceable !3, !align !4
  %e = load i32, ptr %d, align 4, !tbaa !5
  %s0 = add i32 %a, %b
  %s1 = add i32 %s0, %c
  %s2 = add i32 %s1, %e
  store i32 %s2, ptr %p, align 4, !nontemporal !2
  store i32 %s2, ptr %d, align 4, !tbaa !5
  ret i32 %s2
}

define ptr @geps(ptr %base, i64 %i, i32 %j) {
  %g0 = getelementptr %Pair, ptr %base, i64 %i
  %g1 = getelementptr inbounds %Pair, ptr %g0, i64 1, i32 1, i32 %j
  %g2 = getelementptr nuw %Pair, ptr %g1, i64 2
  %g3 = getelementptr nusw i8, ptr %g2, i64 -4
  %g4 = getelementptr nusw nuw i8, ptr %g3, i64 8
  %g5 = getelementptr inbounds nuw [10 x [10 x i16]], ptr %g4, i64 0, i64 %i, i32 %j
  %g6 = getelementptr i8, ptr %g5, i128 1
  ret ptr %g6
}

define <4 x ptr> @vector_geps(ptr %base, <4 x i64> %idx, <4 x ptr> %bases) {
  %v0 = getelementptr double, ptr %base, <4 x i64> %idx
  %v1 = getelementptr inbounds double, <4 x ptr> %bases, <4 x i64> %idx
  %v2 = getelementptr %Pair, <4 x ptr> %v1, i64 0, i32 1, <4 x i64> <i64 0, i64 1, i64 2, i64 3>
  %c = icmp eq <4 x ptr> %v0, %v2
  %r = select <4 x i1> %c, <4 x ptr> %v0, <4 x ptr> %v2
  ret <4 x ptr> %r
}

define void @stencil(ptr noalias %out, ptr noalias readonly %in, i64 %n) {
entry:
  %lim = add i64 %n, -1
  %any = icmp sgt i64 %lim, 1
  br i1 %any, label %loop, label %exit

loop:
  %i = phi i64 [ 1, %entry ], [ %i.next, %loop ]
  %im1 = add nsw i64 %i, -1
  %ip1 = add nsw i64 %i, 1
  %pl = getelementptr inbounds float, ptr %in, i64 %im1
  %pc = getelementptr inbounds float, ptr %in, i64 %i
  %pr = getelementptr inbounds float, ptr %in, i64 %ip1
  %l = load float, ptr %pl, align 4, !tbaa !8
  %c = load float, ptr %pc, align 4, !tbaa !8
  %r = load float, ptr %pr, align 4, !tbaa !8
  %s0 = fadd float %l, %r
  %c2 = fmul float %c, 2.0
  %s1 = fadd float %s0, %c2
  %avg = fmul float %s1, 2.500000e-01
  %po = getelementptr inbounds float, ptr %out, i64 %i
  store float %avg, ptr %po, align 4, !tbaa !8
  %i.next = add nuw nsw i64 %i, 1
  %more = icmp slt i64 %i.next, %lim
  br i1 %more, label %loop, label %exit

exit:
  ret void
}

!0 = !{i32 0, i32 100}
!1 = !{}
!2 = !{i32 1}
!3 = !{i64 16}
!4 = !{i64 8}
!5 = !{!6, !6, i64 0}
!6 = !{!"int", !7, i64 0}
!7 = !{!"omnipotent char", !10, i64 0}
!8 = !{!9, !9, i64 0}
!9 = !{!"float", !7, i64 0}
!10 = !{!"Simple C/C++ TBAA"}
