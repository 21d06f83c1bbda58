; ModuleID = 'guide.cu'
source_filename = "guide.cu"
target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128"
target triple = "x86_64-pc-linux-gnu"

@enzyme_dup = dso_local local_unnamed_addr global i32 0, align 4
@enzyme_const = dso_local local_unnamed_addr global i32 0, align 4

; Function Attrs: mustprogress nofree noinline norecurse nosync nounwind willreturn memory(argmem: readwrite) uwtable
define dso_local void @cube(ptr nocapture noundef readonly %x, ptr nocapture noundef writeonly %y) #0 {
entry:
  %0 = load double, ptr %x, align 8, !tbaa !4
  %mul = fmul double %0, %0
  %mul2 = fmul double %0, 2.000000e+00
  %1 = tail call double @llvm.fmuladd.f64(double %mul, double %0, double %mul2)
  store double %1, ptr %y, align 8, !tbaa !4
  ret void
}

; Function Attrs: mustprogress nocallback nofree nosync nounwind speculatable willreturn memory(none)
declare double @llvm.fmuladd.f64(double, double, double) #1

; Function Attrs: mustprogress uwtable
define dso_local void @dcube_at(i32 noundef %i, ptr noundef %x, ptr noundef %dx, ptr noundef %y, ptr noundef %dy, i32 noundef %n) local_unnamed_addr #2 {
entry:
  %cmp = icmp slt i32 %i, %n
  br i1 %cmp, label %if.then, label %if.end

if.then:                                          ; preds = %entry
  %0 = load i32, ptr @enzyme_dup, align 4, !tbaa !8
  %idx.ext = sext i32 %i to i64
  %add.ptr = getelementptr inbounds double, ptr %x, i64 %idx.ext
  %add.ptr2 = getelementptr inbounds double, ptr %dx, i64 %idx.ext
  %add.ptr4 = getelementptr inbounds double, ptr %y, i64 %idx.ext
  %add.ptr6 = getelementptr inbounds double, ptr %dy, i64 %idx.ext
  tail call void (ptr, ...) @__enzyme_autodiff(ptr noundef nonnull @cube, i32 noundef %0, ptr noundef %add.ptr, ptr noundef %add.ptr2, i32 noundef %0, ptr noundef %add.ptr4, ptr noundef %add.ptr6)
  br label %if.end

if.end:                                           ; preds = %if.then, %entry
  ret void
}

declare void @__enzyme_autodiff(ptr noundef, ...) local_unnamed_addr #3

; Function Attrs: mustprogress uwtable
define dso_local void @dcube_host(ptr noundef %x, ptr noundef %dx, ptr noundef %y, ptr noundef %dy, i32 noundef %n) local_unnamed_addr #2 {
entry:
  %cmp4 = icmp sgt i32 %n, 0
  br i1 %cmp4, label %dcube_at.exit.preheader, label %for.cond.cleanup

dcube_at.exit.preheader:                          ; preds = %entry
  %wide.trip.count = zext nneg i32 %n to i64
  br label %dcube_at.exit

for.cond.cleanup:                                 ; preds = %dcube_at.exit, %entry
  ret void

dcube_at.exit:                                    ; preds = %dcube_at.exit.preheader, %dcube_at.exit
  %indvars.iv = phi i64 [ 0, %dcube_at.exit.preheader ], [ %indvars.iv.next, %dcube_at.exit ]
  %0 = load i32, ptr @enzyme_dup, align 4, !tbaa !8
  %add.ptr.i = getelementptr inbounds double, ptr %x, i64 %indvars.iv
  %add.ptr2.i = getelementptr inbounds double, ptr %dx, i64 %indvars.iv
  %add.ptr4.i = getelementptr inbounds double, ptr %y, i64 %indvars.iv
  %add.ptr6.i = getelementptr inbounds double, ptr %dy, i64 %indvars.iv
  tail call void (ptr, ...) @__enzyme_autodiff(ptr noundef nonnull @cube, i32 noundef %0, ptr noundef %add.ptr.i, ptr noundef %add.ptr2.i, i32 noundef %0, ptr noundef %add.ptr4.i, ptr noundef %add.ptr6.i)
  %indvars.iv.next = add nuw nsw i64 %indvars.iv, 1
  %exitcond.not = icmp eq i64 %indvars.iv.next, %wide.trip.count
  br i1 %exitcond.not, label %for.cond.cleanup, label %dcube_at.exit, !llvm.loop !10
}

attributes #0 = { mustprogress nofree noinline norecurse nosync nounwind willreturn memory(argmem: readwrite) uwtable "min-legal-vector-width"="0" "no-trapping-math"="true" "stack-protector-buffer-size"="8" "target-cpu"="x86-64" "target-features"="+cmov,+cx8,+fxsr,+mmx,+sse,+sse2,+x87" "tune-cpu"="generic" }
attributes #1 = { mustprogress nocallback nofree nosync nounwind speculatable willreturn memory(none) }
attributes #2 = { mustprogress uwtable "min-legal-vector-width"="0" "no-trapping-math"="true" "stack-protector-buffer-size"="8" "target-cpu"="x86-64" "target-features"="+cmov,+cx8,+fxsr,+mmx,+sse,+sse2,+x87" "tune-cpu"="generic" }
attributes #3 = { "no-trapping-math"="true" "stack-protector-buffer-size"="8" "target-cpu"="x86-64" "target-features"="+cmov,+cx8,+fxsr,+mmx,+sse,+sse2,+x87" "tune-cpu"="generic" }

!llvm.module.flags = !{!0, !1, !2, !3}

!0 = !{i32 1, !"wchar_size", i32 4}
!1 = !{i32 8, !"PIC Level", i32 2}
!2 = !{i32 7, !"PIE Level", i32 2}
!3 = !{i32 7, !"uwtable", i32 2}
!4 = !{!5, !5, i64 0}
!5 = !{!"double", !6, i64 0}
!6 = !{!"omnipotent char", !7, i64 0}
!7 = !{!"Simple C++ TBAA"}
!8 = !{!9, !9, i64 0}
!9 = !{!"int", !6, i64 0}
!10 = distinct !{!10, !11}
!11 = !{!"llvm.loop.mustprogress"}
