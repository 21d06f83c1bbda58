"""Warp-aggregated adjoints on AMD GPUs: the warp intrinsics of :class:`~gpucompiler.core.WarpIntrinsics`
over a wavefront (64 lanes on CDNA, 32 on RDNA), defined in LLVM IR on AMDGPU intrinsics.

The AD engine calls them by the names of :func:`intrinsics` in the shapes of CUDA's ``shfl.sync``
collectives; :func:`definitions` is their IR, linked in by the target's ``finish`` and inlined:

* the active mask: ``-1`` when ``ballot(true)`` (the ``exec`` mask) has every lane of the wavefront;
* ``vote_all(mask, p)``: ``ballot(p) == ballot(true)``;
* ``shuffle_index``/``shuffle_xor``: ``ds_bpermute`` (any lane of the wavefront, by byte address);
* the lane id: ``mbcnt_lo`` (and ``mbcnt_hi`` on a 64-lane wavefront).
"""

from __future__ import annotations

from ...core import WarpIntrinsics

PREFIX = "gpuc.amdgpu.warp."
"""The functions' names start so (defined by :func:`definitions`)."""


def intrinsics(width: int) -> WarpIntrinsics:
    """The record of a ``width``-lane wavefront."""
    return WarpIntrinsics(active_mask=PREFIX + "active.mask", vote_all=PREFIX + "vote.all",
                          shuffle_index=PREFIX + "shuffle.index", shuffle_xor=PREFIX + "shuffle.xor",
                          lane_id=PREFIX + "lane.id", width=width)


def definitions(width: int) -> str:
    """LLVM IR defining the functions of :func:`intrinsics` for a ``width``-lane wavefront (32 or 64)."""
    m = f"i{width}"
    lane = ("%id = call i32 @llvm.amdgcn.mbcnt.lo(i32 -1, i32 0)" if width == 32 else
            "%lo = call i32 @llvm.amdgcn.mbcnt.lo(i32 -1, i32 0)\n"
            "  %id = call i32 @llvm.amdgcn.mbcnt.hi(i32 -1, i32 %lo)")
    return f"""
define i32 @{PREFIX}active.mask() #0 {{
  %e = call {m} @llvm.amdgcn.ballot.{m}(i1 true)
  %full = icmp eq {m} %e, -1
  %r = select i1 %full, i32 -1, i32 0
  ret i32 %r
}}

define i1 @{PREFIX}vote.all(i32 %mask, i1 %p) #0 {{
  %a = call {m} @llvm.amdgcn.ballot.{m}(i1 %p)
  %e = call {m} @llvm.amdgcn.ballot.{m}(i1 true)
  %r = icmp eq {m} %a, %e
  ret i1 %r
}}

define i32 @{PREFIX}lane.id() #0 {{
  {lane}
  ret i32 %id
}}

define i32 @{PREFIX}shuffle.index(i32 %mask, i32 %v, i32 %lane, i32 %clamp) #0 {{
  %a = shl i32 %lane, 2
  %r = call i32 @llvm.amdgcn.ds.bpermute(i32 %a, i32 %v)
  ret i32 %r
}}

define i32 @{PREFIX}shuffle.xor(i32 %mask, i32 %v, i32 %bits, i32 %clamp) #0 {{
  {lane}
  %l = xor i32 %id, %bits
  %a = shl i32 %l, 2
  %r = call i32 @llvm.amdgcn.ds.bpermute(i32 %a, i32 %v)
  ret i32 %r
}}

declare {m} @llvm.amdgcn.ballot.{m}(i1) #1
declare i32 @llvm.amdgcn.mbcnt.lo(i32, i32) #2
declare i32 @llvm.amdgcn.mbcnt.hi(i32, i32) #2
declare i32 @llvm.amdgcn.ds.bpermute(i32, i32) #1

attributes #0 = {{ alwaysinline convergent nounwind }}
attributes #1 = {{ convergent nounwind willreturn memory(none) }}
attributes #2 = {{ nounwind willreturn memory(none) }}
"""
