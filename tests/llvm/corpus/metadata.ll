; Metadata: named metadata, module flags (every behaviour), identification,
; distinct and uniqued nodes, strings with escapes, nested nodes, metadata
; as values, !tbaa struct paths, !range, !llvm.loop properties, !prof,
; !alias.scope/!noalias, !annotation, function-level metadata.
target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128"
target triple = "x86_64-unknown-linux-gnu"

%struct.P = type { i32, float }

define float @kernel(ptr noalias %a, ptr noalias %b, ptr %p, i64 %n) !prof !20 !annotation !21 {
entry:
  %pos = icmp sgt i64 %n, 0
  br i1 %pos, label %loop, label %exit, !prof !22

loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %loop ]
  %acc = phi float [ 0.0, %entry ], [ %acc.next, %loop ]
  %pa = getelementptr inbounds float, ptr %a, i64 %i
  %pb = getelementptr inbounds float, ptr %b, i64 %i
  %va = load float, ptr %pa, align 4, !tbaa !10, !alias.scope !30, !noalias !33
  %vb = load float, ptr %pb, align 4, !tbaa !10, !alias.scope !33, !noalias !30
  %m = fmul float %va, %vb, !fpmath !24
  %acc.next = fadd float %acc, %m
  store float %m, ptr %pa, align 4, !tbaa !10, !alias.scope !30, !noalias !33
  %i.next = add nuw nsw i64 %i, 1
  %done = icmp eq i64 %i.next, %n
  br i1 %done, label %exit, label %loop, !llvm.loop !40

exit:
  %r = phi float [ 0.0, %entry ], [ %acc.next, %loop ]
  %fp = getelementptr inbounds %struct.P, ptr %p, i64 0, i32 0
  %k = load i32, ptr %fp, align 4, !tbaa !14, !range !25, !noundef !26
  %kf = sitofp i32 %k to float
  %res = fadd float %r, %kf
  ret float %res
}

define void @unrolled(ptr %x) {
entry:
  br label %loop

loop:
  %i = phi i32 [ 0, %entry ], [ %n, %loop ]
  %g = getelementptr inbounds i32, ptr %x, i32 %i
  store i32 %i, ptr %g, align 4, !annotation !21
  %n = add nuw nsw i32 %i, 1
  %c = icmp ult i32 %n, 64
  br i1 %c, label %loop, label %exit, !llvm.loop !44

exit:
  call void @llvm.dbg.marker(metadata !"a string", metadata i32 7, metadata !{})
  ret void
}

declare void @llvm.dbg.marker(metadata, metadata, metadata) #0

attributes #0 = { nounwind }

!llvm.module.flags = !{!0, !1, !2, !3, !4, !5, !6}
!llvm.ident = !{!7}
!named.empty = !{}
!named.many = !{!8, !9, !8}
!my-named.$meta = !{!26}

!0 = !{i32 1, !"wchar_size", i32 4}
!1 = !{i32 2, !"Debug Info Version", i32 3}
!2 = !{i32 4, !"override", i32 1}
!3 = !{i32 5, !"appended", !{!"x"}}
!4 = !{i32 6, !"appended-unique", !{!"y"}}
!5 = !{i32 7, !"PIE Level", i32 2}
!6 = !{i32 8, !"PIC Level", i32 2}
!7 = !{!"handwritten corpus \22v1\22 \5Cok"}
!8 = !{i32 1, i64 -1, float 1.5, double 0x7FF8000000000000, i1 true, ptr null, ptr @kernel}
!9 = distinct !{!9, !8, null, !"self"}
!10 = !{!11, !11, i64 0}
!11 = !{!"float", !12, i64 0}
!12 = !{!"omnipotent char", !13, i64 0}
!13 = !{!"Simple C/C++ TBAA"}
!14 = !{!15, !16, i64 0}
!15 = !{!"P", !16, i64 0, !11, i64 4}
!16 = !{!"int", !12, i64 0}
!20 = !{!"function_entry_count", i64 1000}
!21 = !{!"auto-init"}
!22 = !{!"branch_weights", i32 1, i32 2000}
!24 = !{float 2.5}
!25 = !{i32 0, i32 10, i32 20, i32 30}
!26 = !{}
!30 = !{!31}
!31 = distinct !{!31, !32, !"scope.a"}
!32 = distinct !{!32, !"domain"}
!33 = !{!34}
!34 = distinct !{!34, !32, !"scope.b"}
!40 = distinct !{!40, !41, !42, !43}
!41 = !{!"llvm.loop.mustprogress"}
!42 = !{!"llvm.loop.vectorize.enable", i1 true}
!43 = !{!"llvm.loop.interleave.count", i32 2}
!44 = distinct !{!44, !45, !41}
!45 = !{!"llvm.loop.unroll.count", i32 4}
