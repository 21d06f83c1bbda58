; NVPTX block reduction: a kernel marked the legacy way (nvvm.annotations
; "kernel"), dynamic and static shared memory (addrspace 3, extern and
; internal), barriers, warp shuffles and votes, a tree-reduction loop,
; global atomics, and libdevice-style __nv_* declarations.
target datalayout = "e-p6:32:32-i64:64-i128:128-i256:256-v16:16-v32:32-n16:32:64"
target triple = "nvptx64-nvidia-cuda"

@tile = internal addrspace(3) global [256 x float] undef, align 4
@dyn = external addrspace(3) global [0 x float], align 16

define void @block_sum(ptr addrspace(1) readonly %in, ptr addrspace(1) %out, i32 %n) {
entry:
  %tid = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %bid = call i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
  %bdim = call i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
  %off = mul i32 %bid, %bdim
  %gid = add i32 %off, %tid
  %inb = icmp ult i32 %gid, %n
  %gidx = zext i32 %gid to i64
  %pin = getelementptr inbounds float, ptr addrspace(1) %in, i64 %gidx
  br i1 %inb, label %load, label %fill

load:
  %v = load float, ptr addrspace(1) %pin, align 4
  br label %fill

fill:
  %val = phi float [ %v, %load ], [ 0.0, %entry ]
  %tidx = zext i32 %tid to i64
  %slot = getelementptr inbounds [256 x float], ptr addrspace(3) @tile, i64 0, i64 %tidx
  store float %val, ptr addrspace(3) %slot, align 4
  call void @llvm.nvvm.barrier0()
  br label %tree

tree:
  %s = phi i32 [ 128, %fill ], [ %s.next, %tree.latch ]
  %active = icmp ult i32 %tid, %s
  br i1 %active, label %tree.add, label %tree.latch

tree.add:
  %other = add i32 %tid, %s
  %oidx = zext i32 %other to i64
  %oslot = getelementptr inbounds [256 x float], ptr addrspace(3) @tile, i64 0, i64 %oidx
  %a = load float, ptr addrspace(3) %slot, align 4
  %b = load float, ptr addrspace(3) %oslot, align 4
  %sum = fadd float %a, %b
  store float %sum, ptr addrspace(3) %slot, align 4
  br label %tree.latch

tree.latch:
  call void @llvm.nvvm.barrier0()
  %s.next = lshr i32 %s, 1
  %cont = icmp ugt i32 %s.next, 32
  br i1 %cont, label %tree, label %warp

warp:
  %w0 = load volatile float, ptr addrspace(3) %slot, align 4
  %w1 = call float @llvm.nvvm.shfl.sync.down.f32(i32 -1, float %w0, i32 16, i32 31)
  %w2 = fadd float %w0, %w1
  %w3 = call float @llvm.nvvm.shfl.sync.down.f32(i32 -1, float %w2, i32 8, i32 31)
  %w4 = fadd float %w2, %w3
  %ballot = call i32 @llvm.nvvm.vote.ballot.sync(i32 -1, i1 %active)
  %lead = icmp eq i32 %tid, 0
  br i1 %lead, label %publish, label %done

publish:
  %old = atomicrmw fadd ptr addrspace(1) %out, float %w4 monotonic, align 4
  %d0 = getelementptr inbounds [0 x float], ptr addrspace(3) @dyn, i64 0, i64 0
  %cnt = uitofp i32 %ballot to float
  store float %cnt, ptr addrspace(3) %d0, align 16
  br label %done

done:
  ret void
}

define internal float @fast_rsqrt(float %x) {
  %r = call float @__nv_rsqrtf(float %x)
  %e = call float @__nv_expf(float %r)
  %l = call double @__nv_log(double 2.0)
  %lf = fptrunc double %l to float
  %s = fadd float %e, %lf
  ret float %s
}

declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
declare void @llvm.nvvm.barrier0()
declare float @llvm.nvvm.shfl.sync.down.f32(i32, float, i32, i32)
declare i32 @llvm.nvvm.vote.ballot.sync(i32, i1)
declare float @__nv_rsqrtf(float)
declare float @__nv_expf(float)
declare double @__nv_log(double)

!nvvm.annotations = !{!0, !1}

!0 = !{ptr @block_sum, !"kernel", i32 1}
!1 = !{ptr @block_sum, !"maxntidx", i32 256}
