; An NVPTX module as a GPU compiler emits it: ptx_kernel calling convention
; and nvvm.annotations, thread-index intrinsics, global (1), shared (3),
; constant (4) and local (5) address spaces, addrspacecast, atomics with
; GPU sync scopes, a grid-stride saxpy loop and kernel attributes.
target datalayout = "e-p6:32:32-i64:64-i128:128-i256:256-v16:16-v32:32-n16:32:64"
target triple = "nvptx64-nvidia-cuda"

@coeffs = internal addrspace(4) constant [4 x float] [float 1.0, float 2.0, float 3.0, float 4.0], align 4
@counter = addrspace(1) global i32 0, align 4
@"$str" = private unnamed_addr addrspace(1) constant [6 x i8] c"n=%d\0A\00", align 1

define ptx_kernel void @saxpy(float %a, ptr addrspace(1) noalias readonly %x, ptr addrspace(1) noalias %y, i32 %n) #0 {
entry:
  %tid = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %ctaid = call i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
  %ntid = call i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
  %nctaid = call i32 @llvm.nvvm.read.ptx.sreg.nctaid.x()
  %base = mul i32 %ctaid, %ntid
  %start = add i32 %base, %tid
  %stride = mul i32 %ntid, %nctaid
  %in = icmp slt i32 %start, %n
  br i1 %in, label %loop, label %exit

loop:
  %i = phi i32 [ %start, %entry ], [ %i.next, %loop ]
  %idx = sext i32 %i to i64
  %px = getelementptr inbounds float, ptr addrspace(1) %x, i64 %idx
  %py = getelementptr inbounds float, ptr addrspace(1) %y, i64 %idx
  %vx = load float, ptr addrspace(1) %px, align 4
  %vy = load float, ptr addrspace(1) %py, align 4
  %r = call float @llvm.fma.f32(float %a, float %vx, float %vy)
  store float %r, ptr addrspace(1) %py, align 4
  %i.next = add nsw i32 %i, %stride
  %more = icmp slt i32 %i.next, %n
  br i1 %more, label %loop, label %exit

exit:
  ret void
}

define ptx_kernel void @poly(ptr addrspace(1) %out, ptr addrspace(1) %in) #1 {
entry:
  %scratch = alloca [4 x float], align 4, addrspace(5)
  %tid = call range(i32 0, 1024) i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %idx = zext nneg i32 %tid to i64
  %pi = getelementptr inbounds float, ptr addrspace(1) %in, i64 %idx
  %x = load float, ptr addrspace(1) %pi, align 4
  %c0 = load float, ptr addrspace(4) @coeffs, align 4
  %pc3 = getelementptr inbounds [4 x float], ptr addrspace(4) @coeffs, i64 0, i64 3
  %c3 = load float, ptr addrspace(4) %pc3, align 4
  store float %c3, ptr addrspace(5) %scratch, align 4
  %generic = addrspacecast ptr addrspace(5) %scratch to ptr
  %s = load float, ptr %generic, align 4
  %t = call float @llvm.nvvm.fma.rn.f(float %s, float %x, float %c0)
  %q = call float @llvm.nvvm.sqrt.rn.f(float %t)
  %po = getelementptr inbounds float, ptr addrspace(1) %out, i64 %idx
  store float %q, ptr addrspace(1) %po, align 4
  %old = atomicrmw add ptr addrspace(1) @counter, i32 1 syncscope("device") monotonic, align 4
  %oldb = atomicrmw fadd ptr addrspace(1) %po, float 1.0 syncscope("block") monotonic, align 4
  fence syncscope("block") acq_rel
  ret void
}

define ptx_kernel void @annotated(ptr addrspace(1) %p) {
  %lane = call i32 @llvm.nvvm.read.ptx.sreg.laneid()
  %w = call i32 @llvm.nvvm.read.ptx.sreg.warpsize()
  %clk = call i64 @llvm.nvvm.read.ptx.sreg.clock64()
  %m = mul i32 %lane, %w
  %t = trunc i64 %clk to i32
  %s = add i32 %m, %t
  store i32 %s, ptr addrspace(1) %p, align 4
  ret void
}

define internal float @device_helper(float %x) #2 {
  %y = call float @__nv_expf(float %x)
  %z = call float @llvm.nvvm.fabs.f(float %y)
  ret float %z
}

declare float @__nv_expf(float)
declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.nctaid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.laneid()
declare i32 @llvm.nvvm.read.ptx.sreg.warpsize()
declare i64 @llvm.nvvm.read.ptx.sreg.clock64()
declare float @llvm.fma.f32(float, float, float)
declare float @llvm.nvvm.fma.rn.f(float, float, float)
declare float @llvm.nvvm.sqrt.rn.f(float)
declare float @llvm.nvvm.fabs.f(float)

attributes #0 = { nounwind "nvvm.maxntid"="256" "nvvm.minctasm"="2" "target-cpu"="sm_80" "target-features"="+ptx80,+sm_80" }
attributes #1 = { nounwind "nvvm.reqntid"="32,4,1" "target-cpu"="sm_90" }
attributes #2 = { alwaysinline nounwind }

!nvvm.annotations = !{!0, !1}
!nvvmir.version = !{!2}
!llvm.module.flags = !{!3}

!0 = !{ptr @annotated, !"maxnreg", i32 64}
!1 = !{ptr addrspace(1) @counter, !"managed", i32 1}
!2 = !{i32 2, i32 0, i32 3, i32 1}
!3 = !{i32 4, !"nvvm-reflect-ftz", i32 0}
