; ModuleID = 'guide.cu'
source_filename = "guide.cu"
target datalayout = "e-i64:64-i128:128-v16:16-v32:32-n16:32:64"
target triple = "nvptx64-nvidia-cuda"

@enzyme_dup = dso_local addrspace(1) externally_initialized global i32 0, align 4
@enzyme_const = dso_local local_unnamed_addr addrspace(1) externally_initialized global i32 0, align 4
@llvm.compiler.used = appending global [1 x ptr] [ptr addrspacecast (ptr addrspace(1) @enzyme_dup to ptr)], section "llvm.metadata"

; Function Attrs: mustprogress nofree noinline norecurse nosync nounwind willreturn memory(argmem: readwrite)
define dso_local void @cube(ptr nocapture noundef readonly %x, ptr nocapture noundef writeonly %y) #0 {
entry:
  %0 = load double, ptr %x, align 8, !tbaa !4
  %mul = fmul contract double %0, %0
  %mul1 = fmul contract double %0, %mul
  %mul2 = fmul contract double %0, 2.000000e+00
  %add = fadd contract double %mul2, %mul1
  store double %add, ptr %y, align 8, !tbaa !4
  ret void
}

; Function Attrs: convergent mustprogress nounwind
define dso_local void @dcube_at(i32 noundef %i, ptr noundef %x, ptr noundef %dx, ptr noundef %y, ptr noundef %dy, i32 noundef %n) local_unnamed_addr #1 {
entry:
  %cmp = icmp slt i32 %i, %n
  br i1 %cmp, label %if.then, label %if.end

if.then:                                          ; preds = %entry
  %idx.ext = sext i32 %i to i64
  %add.ptr6 = getelementptr inbounds double, ptr %dy, i64 %idx.ext
  %add.ptr4 = getelementptr inbounds double, ptr %y, i64 %idx.ext
  %add.ptr2 = getelementptr inbounds double, ptr %dx, i64 %idx.ext
  %add.ptr = getelementptr inbounds double, ptr %x, i64 %idx.ext
  %0 = load i32, ptr addrspacecast (ptr addrspace(1) @enzyme_dup to ptr), align 4, !tbaa !8
  tail call void (ptr, ...) @__enzyme_autodiff(ptr noundef nonnull @cube, i32 noundef %0, ptr noundef %add.ptr, ptr noundef %add.ptr2, i32 noundef %0, ptr noundef %add.ptr4, ptr noundef %add.ptr6) #5
  br label %if.end

if.end:                                           ; preds = %if.then, %entry
  ret void
}

; Function Attrs: convergent nounwind
declare dso_local void @__enzyme_autodiff(ptr noundef, ...) local_unnamed_addr #2

; Function Attrs: convergent mustprogress norecurse nounwind
define dso_local void @dcube(ptr noundef %x, ptr noundef %dx, ptr noundef %y, ptr noundef %dy, i32 noundef %n) local_unnamed_addr #3 {
entry:
  %0 = tail call range(i32 0, 2147483647) i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
  %1 = tail call range(i32 1, 1025) i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
  %mul = mul nuw nsw i32 %0, %1
  %2 = tail call range(i32 0, 1024) i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %add = add nuw nsw i32 %mul, %2
  %cmp.i = icmp slt i32 %add, %n
  br i1 %cmp.i, label %if.then.i, label %dcube_at.exit

if.then.i:                                        ; preds = %entry
  %idx.ext.i = zext nneg i32 %add to i64
  %add.ptr.i = getelementptr inbounds double, ptr %x, i64 %idx.ext.i
  %add.ptr2.i = getelementptr inbounds double, ptr %dx, i64 %idx.ext.i
  %add.ptr4.i = getelementptr inbounds double, ptr %y, i64 %idx.ext.i
  %add.ptr6.i = getelementptr inbounds double, ptr %dy, i64 %idx.ext.i
  %3 = load i32, ptr addrspacecast (ptr addrspace(1) @enzyme_dup to ptr), align 4, !tbaa !8
  tail call void (ptr, ...) @__enzyme_autodiff(ptr noundef nonnull @cube, i32 noundef %3, ptr noundef %add.ptr.i, ptr noundef %add.ptr2.i, i32 noundef %3, ptr noundef %add.ptr4.i, ptr noundef %add.ptr6.i) #5
  br label %dcube_at.exit

dcube_at.exit:                                    ; preds = %entry, %if.then.i
  ret void
}

; Function Attrs: mustprogress nocallback nofree nosync nounwind speculatable willreturn memory(none)
declare noundef i32 @llvm.nvvm.read.ptx.sreg.ctaid.x() #4

; Function Attrs: mustprogress nocallback nofree nosync nounwind speculatable willreturn memory(none)
declare noundef i32 @llvm.nvvm.read.ptx.sreg.ntid.x() #4

; Function Attrs: mustprogress nocallback nofree nosync nounwind speculatable willreturn memory(none)
declare noundef i32 @llvm.nvvm.read.ptx.sreg.tid.x() #4

attributes #0 = { mustprogress nofree noinline norecurse nosync nounwind willreturn memory(argmem: readwrite) "frame-pointer"="all" "no-trapping-math"="true" "stack-protector-buffer-size"="8" "target-cpu"="sm_90" "target-features"="+ptx85,+sm_90" }
attributes #1 = { convergent mustprogress nounwind "frame-pointer"="all" "no-trapping-math"="true" "stack-protector-buffer-size"="8" "target-cpu"="sm_90" "target-features"="+ptx85,+sm_90" }
attributes #2 = { convergent nounwind "frame-pointer"="all" "no-trapping-math"="true" "stack-protector-buffer-size"="8" "target-cpu"="sm_90" "target-features"="+ptx85,+sm_90" }
attributes #3 = { convergent mustprogress norecurse nounwind "frame-pointer"="all" "no-trapping-math"="true" "stack-protector-buffer-size"="8" "target-cpu"="sm_90" "target-features"="+ptx85,+sm_90" "uniform-work-group-size"="true" }
attributes #4 = { mustprogress nocallback nofree nosync nounwind speculatable willreturn memory(none) }
attributes #5 = { convergent nounwind }

!nvvm.annotations = !{!0}
!llvm.module.flags = !{!1, !2, !3}

!0 = !{ptr @dcube, !"kernel", i32 1}
!1 = !{i32 1, !"wchar_size", i32 4}
!2 = !{i32 4, !"nvvm-reflect-ftz", i32 0}
!3 = !{i32 7, !"frame-pointer", i32 2}
!4 = !{!5, !5, i64 0}
!5 = !{!"double", !6, i64 0}
!6 = !{!"omnipotent char", !7, i64 0}
!7 = !{!"Simple C++ TBAA"}
!8 = !{!9, !9, i64 0}
!9 = !{!"int", !6, i64 0}
