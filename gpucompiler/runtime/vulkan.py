"""Launching kernels as Vulkan compute shaders (the SPIR-V target's runtime).

::

    from gpucompiler.runtime import vulkan
    vulkan.launch(saxpy, blocks, 256, (2.0, x, y))     # NumPy arrays: copied in and back
    xd = vulkan.to_device(x)                            # a VulkanArray stays on the device
    vulkan.launch(saxpy, blocks, 256, (2.0, xd, yd)); yd.copy_to_host()

A launch compiles the kernel for :class:`~gpucompiler.targets.spirv.SPIRVTarget`
with the launch's block as the shader's workgroup (through the compile cache),
checks the shader's capabilities against the device
(:class:`~.vulkan_device.DeviceFeatureError`), binds one storage buffer per
array and the parameter block (:mod:`gpucompiler.targets.spirv.entry`) and
dispatches ``grid`` workgroups, then waits. A shader whose AD tape grows at run time has
one more binding, the tape heap (:mod:`gpucompiler.targets.spirv.heap`): one device buffer
of ``GPUC_DEVICE_HEAP`` bytes per device, its header reset before each dispatch and its
status read after (:class:`~gpucompiler.errors.DeviceHeapError` when it ran out). NumPy arrays are copied to
host-visible device memory and written arrays copied back; the same array
passed twice is one buffer, overlapping distinct views are refused.
"""

from __future__ import annotations

import struct
import weakref

import attrs
import numpy as np

from .. import types as T
from ..errors import ArgumentTypeError, DeviceHeapError, LaunchError
from ..settings import RuntimeSettings
from ..targets.spirv import SPIRVTarget
from ..targets.spirv.heap import EXHAUSTED, HEADER, STOPPED, UNIT, binding as heap_binding
from ..targets.spirv.tools import bindings, float_controls, validate_binary
from .arguments import cuda_array_type, kernel_argument
from .launchers import register_runtime
from .vulkan_device import DeviceFeatureError, VulkanDevice, VulkanError, device, vk

_HOST = 0x2 | 0x4  # HOST_VISIBLE | HOST_COHERENT
_LOCAL = 0x1       # DEVICE_LOCAL


class VulkanArray:
    """A C-contiguous array in Vulkan device memory (host-visible unless made with ``host=False``)."""

    def __init__(self, shape, dtype, *, host: bool = True, dev: VulkanDevice | None = None):
        self.device = dev or device()
        self.dtype = np.dtype(dtype)
        self.shape = tuple(int(s) for s in (shape if isinstance(shape, tuple) else (shape,)))
        self.size = int(np.prod(self.shape, dtype=np.int64))
        self.nbytes = self.size * self.dtype.itemsize
        self.host = host
        self.buffer, self.memory = _allocate(self.device, max(self.nbytes, 16), host)
        self._mapped = (vk.vkMapMemory(self.device.handle, self.memory, 0, max(self.nbytes, 16), 0)
                        if host else None)
        weakref.finalize(self, _free, self.device, self.buffer, self.memory)

    @property
    def strides(self) -> tuple[int, ...]:
        out, step = [], self.dtype.itemsize
        for s in reversed(self.shape):
            out.insert(0, step)
            step *= s
        return tuple(out)

    def view(self):
        """A NumPy array over the mapped memory (host-visible arrays only)."""
        if self._mapped is None:
            raise LaunchError("this VulkanArray is device-local (host=False): it has no host view")
        return np.frombuffer(self._mapped, self.dtype, self.size).reshape(self.shape)

    def copy_to_host(self):
        """A NumPy copy of the contents."""
        return self.view().copy()

    def frontend_type(self) -> T.ArrayType:
        t = cuda_array_type({"typestr": self.dtype.str, "shape": self.shape, "strides": None,
                             "data": (0, False)})
        if t is None:
            raise LaunchError(f"a Vulkan kernel cannot take {self.dtype} arrays")
        return t


def to_device(array, dev: VulkanDevice | None = None) -> VulkanArray:
    """A host-visible :class:`VulkanArray` holding a copy of the NumPy ``array``."""
    a = np.ascontiguousarray(array)
    out = VulkanArray(a.shape, a.dtype, dev=dev)
    out.view()[...] = a
    return out


def _memory_type(dev: VulkanDevice, bits: int, host: bool) -> list[int]:
    """Memory types allowed by ``bits``, best first: device-local and (for ``host``) host-visible."""
    want = _HOST if host else _LOCAL
    ranked = []
    for k, (flags, _size) in enumerate(dev.memory_types):
        if bits & (1 << k) and flags & want == want:
            ranked.append((-(flags & _LOCAL), k))
    return [k for _, k in sorted(ranked)]


def _allocate(dev: VulkanDevice, nbytes: int, host: bool):
    usage = (vk.VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | vk.VK_BUFFER_USAGE_TRANSFER_SRC_BIT
             | vk.VK_BUFFER_USAGE_TRANSFER_DST_BIT)
    buffer = vk.vkCreateBuffer(dev.handle, vk.VkBufferCreateInfo(
        sType=vk.VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO, size=nbytes, usage=usage,
        sharingMode=vk.VK_SHARING_MODE_EXCLUSIVE), None)
    req = vk.vkGetBufferMemoryRequirements(dev.handle, buffer)
    for k in _memory_type(dev, req.memoryTypeBits, host):
        try:
            memory = vk.vkAllocateMemory(dev.handle, vk.VkMemoryAllocateInfo(
                sType=vk.VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO, allocationSize=req.size,
                memoryTypeIndex=k), None)
        except vk.VkError:  # that heap is full: try the next type
            continue
        vk.vkBindBufferMemory(dev.handle, buffer, memory, 0)
        return buffer, memory
    vk.vkDestroyBuffer(dev.handle, buffer, None)
    raise VulkanError(f"no Vulkan memory for {nbytes} bytes ({'host-visible' if host else 'device-local'})")


def _free(dev: VulkanDevice, buffer, memory) -> None:
    vk.vkDestroyBuffer(dev.handle, buffer, None)
    vk.vkFreeMemory(dev.handle, memory, None)


# -- compiled shaders ---------------------------------------------------------------------
@attrs.frozen
class Shader:
    """A kernel's SPIR-V for one signature and workgroup, and its Vulkan pipeline."""

    binary: bytes
    arrays: int
    heap: bool
    """whether the shader takes the tape heap (the binding after the parameter block)"""
    pipeline: object
    layout: object
    set_layout: object


_SHADERS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
"""kernel -> {(argtypes, workgroup): Shader}; dropped by :meth:`VulkanRuntime.forget` (world age)."""


def compile_spirv(kernel, argtypes: tuple, workgroup: tuple[int, int, int], subgroups: bool = True) -> bytes:
    """The SPIR-V binary of ``kernel`` for ``argtypes`` with ``workgroup`` (through the compile cache);
    ``subgroups``: whether the device sums over subgroups (else one atomic add per lane); the kernel's own
    ``SPIRVTarget(aggregate_atomics=False)`` is kept."""
    own = kernel.target
    aggregate = own.aggregate_atomics if isinstance(own, SPIRVTarget) else True
    binary = kernel.compile(argtypes, SPIRVTarget(workgroup=workgroup, subgroups=subgroups,
                                                  aggregate_atomics=aggregate))[0]
    assert isinstance(binary, bytes)
    return binary


def shader(kernel, argtypes: tuple, workgroup: tuple[int, int, int], dev: VulkanDevice) -> Shader:
    """The loaded :class:`Shader` (compiled, checked against ``dev`` and built once)."""
    kernel.refresh()
    table = _SHADERS.setdefault(kernel, {})
    key = (argtypes, workgroup)
    hit = table.get(key)
    if hit is None:
        binary = float_controls(compile_spirv(kernel, argtypes, workgroup, dev.subgroup_sums), dev.float_modes)
        # required, not optional here: LLVM 22 sometimes structures control flow wrongly, which only
        # spirv-val tells; a driver given such a module computes wrong numbers (seen on NVIDIA's)
        validate_binary(binary, required=True)
        shuffles = dev.require(binary)
        arrays = sum(isinstance(t, T.ArrayType) for t in argtypes)
        heap = heap_binding(arrays) in bindings(binary)
        hit = table[key] = Shader(binary, arrays, heap, *_pipeline(dev, binary, arrays + 1 + heap, kernel.symbol,
                                                                    shuffles))
    return hit


def _pipeline(dev: VulkanDevice, binary: bytes, count: int, entry: str, shuffles: bool):
    h = dev.handle
    module = vk.vkCreateShaderModule(h, vk.VkShaderModuleCreateInfo(
        sType=vk.VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO, codeSize=len(binary), pCode=binary), None)
    bindings = [vk.VkDescriptorSetLayoutBinding(
        binding=k, descriptorType=vk.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, descriptorCount=1,
        stageFlags=vk.VK_SHADER_STAGE_COMPUTE_BIT) for k in range(count)]
    set_layout = vk.vkCreateDescriptorSetLayout(h, vk.VkDescriptorSetLayoutCreateInfo(
        sType=vk.VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO, bindingCount=len(bindings),
        pBindings=bindings), None)
    layout = vk.vkCreatePipelineLayout(h, vk.VkPipelineLayoutCreateInfo(
        sType=vk.VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO, setLayoutCount=1,
        pSetLayouts=[set_layout]), None)
    required = (vk.VkPipelineShaderStageRequiredSubgroupSizeCreateInfo(
        sType=vk.VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_REQUIRED_SUBGROUP_SIZE_CREATE_INFO,
        requiredSubgroupSize=32) if shuffles else None)
    stage = vk.VkPipelineShaderStageCreateInfo(
        sType=vk.VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO, pNext=required,
        stage=vk.VK_SHADER_STAGE_COMPUTE_BIT, module=module, pName=entry,
        flags=vk.VK_PIPELINE_SHADER_STAGE_CREATE_REQUIRE_FULL_SUBGROUPS_BIT_EXT if shuffles else 0)
    pipeline = vk.vkCreateComputePipelines(h, None, 1, [vk.VkComputePipelineCreateInfo(
        sType=vk.VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO, stage=stage, layout=layout)], None)[0]
    vk.vkDestroyShaderModule(h, module, None)
    return pipeline, layout, set_layout


# -- arguments and launches --------------------------------------------------------------
def _word(value, t) -> bytes:
    if t == T.float32:
        return struct.pack("<fI", float(value), 0)
    if t == T.float64:
        return struct.pack("<d", float(value))
    if t == T.uint64:
        return struct.pack("<Q", int(value))
    return struct.pack("<q", int(value))


def _arguments(kernel, args, dev: VulkanDevice):
    """``(types, buffers, params, copies)``: each array's :class:`VulkanArray` (NumPy arrays staged),
    the parameter block's bytes and ``(numpy array, staged copy)`` pairs to write back."""
    names, fname = kernel.bind.names, kernel.py_func.__qualname__
    if len(args) != len(names):
        kernel.bind.bind(args, {})
    types, buffers, words, copies, staged = [], [], [], [], []
    for a, n in zip(args, names):
        if isinstance(a, VulkanArray):
            t, arr = a.frontend_type(), a
        else:
            t, v = kernel_argument(a, n, fname)
            if not isinstance(t, T.ArrayType):
                if not isinstance(t, T.Scalar) or t.kind not in "biuf":
                    raise ArgumentTypeError(n, t, function=fname,
                                            hint="a Vulkan kernel takes bool, integer and float scalars (pass a "
                                                 "complex number as its real and imaginary parts) and arrays")
                types.append(t)
                words.append(_word(v, t))
                continue
            arr = next((s for h, s in staged if h is v), None)
            if arr is None:
                for h, _ in staged:
                    if np.shares_memory(h, v):
                        raise LaunchError(f"argument {n!r} overlaps another array argument: pass the same "
                                          "array object, or copies")
                arr = to_device(v, dev)
                staged.append((v, arr))
                if not t.readonly:
                    copies.append((v, arr))
            t = arr.frontend_type() if not t.readonly else attrs.evolve(arr.frontend_type(), readonly=True)
        types.append(t)
        buffers.append(arr)
        words += [struct.pack("<q", s) for s in arr.shape] + [struct.pack("<q", s) for s in arr.strides]
    return tuple(types), buffers, b"".join(words) or bytes(8), copies


def launch(kernel, grid, block, args, dev: VulkanDevice | None = None) -> None:
    """Run ``kernel`` on ``grid`` workgroups of ``block`` invocations with ``args``; wait for it."""
    dev = dev or device()
    grid, block = _dims(grid), _dims(block)
    sh, buffers, copies = prepare(kernel, grid, block, args, dev)
    run(dev, sh, grid, buffers)
    for host, staged in copies:
        host[...] = staged.view()


def prepare(kernel, grid, block, args, dev: VulkanDevice):
    """``(shader, buffers, copies)`` of a launch: the compiled :class:`Shader`, the storage buffers to bind
    (the arrays', then the parameter block) and the NumPy arrays to copy back after it."""
    grid, block = _dims(grid), _dims(block)
    if block[0] * block[1] * block[2] > dev.max_invocations:
        raise LaunchError(f"a block of {block} is more than the {dev.max_invocations} invocations a "
                          f"workgroup of {dev.name!r} may have")
    for axis, (g, most) in enumerate(zip(grid, dev.max_groups)):
        if g > most:
            raise LaunchError(f"grid.{'xyz'[axis]} is at most {most} on {dev.name!r}, got {g}")
    types, buffers, params, copies = _arguments(kernel, tuple(args), dev)
    sh = shader(kernel, types, block, dev)
    block_params = VulkanArray(len(params), "u1", dev=dev)
    block_params.view()[...] = np.frombuffer(params, np.uint8)
    return sh, [*buffers, block_params, *([tape_heap(dev).memory] if sh.heap else [])], copies


@attrs.frozen
class TapeHeap:
    """A device's tape heap (:mod:`gpucompiler.targets.spirv.heap`) and the host words its status is copied to."""

    memory: VulkanArray
    status: VulkanArray

    @property
    def units(self) -> int:
        """The capacity in 16-byte units, the header's included."""
        return self.memory.nbytes // UNIT


_HEAPS: dict = {}
"""device -> its :class:`TapeHeap` (replaced when ``GPUC_DEVICE_HEAP`` asks for a different size)."""


def tape_heap(dev: VulkanDevice) -> TapeHeap:
    """``dev``'s tape heap: ``GPUC_DEVICE_HEAP`` bytes (read at each launch that needs it; at most what a
    storage buffer may span on the device and 2**32 units), allocated once per size."""
    size = min(RuntimeSettings.from_env().device_heap, dev.max_buffer_range, (2**32 - 1) * UNIT) // UNIT * UNIT
    have = _HEAPS.get(dev)
    if have is None or have.memory.nbytes != size:
        _HEAPS.pop(dev, None)  # the old buffer is freed before the new one is taken
        have = _HEAPS[dev] = TapeHeap(VulkanArray(size, "u1", host=False, dev=dev), VulkanArray(HEADER, "u1", dev=dev))
    return have


def _dims(value) -> tuple[int, int, int]:
    dims = (value,) if isinstance(value, int) else tuple(value)
    if not 1 <= len(dims) <= 3 or not all(isinstance(d, int) and not isinstance(d, bool) and d >= 1 for d in dims):
        raise LaunchError(f"grid and block are a positive int or 1 to 3 positive ints, got {value!r}")
    x, y, z = (*dims, 1, 1)[:3]
    return x, y, z


def run(dev: VulkanDevice, sh: Shader, grid, buffers, repeat: int = 1) -> float:
    """Dispatch ``sh`` on ``grid`` ``repeat`` times in one command buffer; the seconds the device took."""
    h = dev.handle
    pool = vk.vkCreateDescriptorPool(h, vk.VkDescriptorPoolCreateInfo(
        sType=vk.VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO, maxSets=1, poolSizeCount=1,
        pPoolSizes=[vk.VkDescriptorPoolSize(type=vk.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                            descriptorCount=len(buffers))]), None)
    commands = vk.vkCreateCommandPool(h, vk.VkCommandPoolCreateInfo(
        sType=vk.VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO, queueFamilyIndex=dev.family), None)
    try:
        dset = vk.vkAllocateDescriptorSets(h, vk.VkDescriptorSetAllocateInfo(
            sType=vk.VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO, descriptorPool=pool,
            descriptorSetCount=1, pSetLayouts=[sh.set_layout]))[0]
        writes = [vk.VkWriteDescriptorSet(
            sType=vk.VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET, dstSet=dset, dstBinding=k,
            descriptorCount=1, descriptorType=vk.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
            pBufferInfo=[vk.VkDescriptorBufferInfo(buffer=b.buffer, offset=0, range=max(b.nbytes, 16))])
            for k, b in enumerate(buffers)]
        vk.vkUpdateDescriptorSets(h, len(writes), writes, 0, None)
        cmd = vk.vkAllocateCommandBuffers(h, vk.VkCommandBufferAllocateInfo(
            sType=vk.VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO, commandPool=commands,
            level=vk.VK_COMMAND_BUFFER_LEVEL_PRIMARY, commandBufferCount=1))[0]
        heap = _HEAPS.get(dev) if sh.heap else None
        if heap is not None:
            heap.status.view()[...] = 0
        seconds = _submit(dev, cmd, lambda c: _record(c, sh, dset, grid, repeat, heap))
    finally:
        vk.vkDestroyCommandPool(h, commands, None)
        vk.vkDestroyDescriptorPool(h, pool, None)
    if heap is not None:
        _heap_status(heap)
    return seconds


def _heap_status(heap: TapeHeap) -> None:
    """Raise what the shader's tape heap status says went wrong (see :mod:`gpucompiler.targets.spirv.heap`)."""
    status = int(heap.status.view()[8:12].view(np.uint32)[0])
    if status & EXHAUSTED:
        size = heap.memory.nbytes
        raise DeviceHeapError("GPUC_DEVICE_HEAP_EXHAUSTED",
                              f"a kernel's AD tape needed more than the {size} bytes of the Vulkan tape heap: the "
                              "threads that ran out went on without their tape, so the results are wrong. Set "
                              "GPUC_DEVICE_HEAP "
                              f"to more (e.g. GPUC_DEVICE_HEAP={max(2 * size, 1 << 30) >> 20}M; read at each "
                              "launch) or launch fewer threads at a time", "vkQueueSubmit")
    if status & STOPPED:
        raise LaunchError("a thread of the kernel failed a check of its AD tape (a loop ran more times than "
                          "its tape was sized for, or a tape size overflowed) and went on without its tape: the "
                          "results are wrong")


def transfer(dev: VulkanDevice, src: VulkanArray | None, dst: VulkanArray, repeat: int = 1, word: int = 0) -> float:
    """Copy ``src`` into ``dst`` (or fill ``dst`` with the 32-bit ``word`` when ``src`` is None) ``repeat``
    times in one command buffer; the seconds the device took (the reference of the bandwidth benchmark)."""
    commands = vk.vkCreateCommandPool(dev.handle, vk.VkCommandPoolCreateInfo(
        sType=vk.VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO, queueFamilyIndex=dev.family), None)
    barrier = vk.VkMemoryBarrier(sType=vk.VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                                 srcAccessMask=vk.VK_ACCESS_TRANSFER_WRITE_BIT,
                                 dstAccessMask=vk.VK_ACCESS_TRANSFER_READ_BIT | vk.VK_ACCESS_TRANSFER_WRITE_BIT)

    def record(cmd):
        for k in range(repeat):
            if k:
                vk.vkCmdPipelineBarrier(cmd, vk.VK_PIPELINE_STAGE_TRANSFER_BIT, vk.VK_PIPELINE_STAGE_TRANSFER_BIT,
                                        0, 1, [barrier], 0, None, 0, None)
            if src is None:
                vk.vkCmdFillBuffer(cmd, dst.buffer, 0, dst.nbytes // 4 * 4, word)
            else:
                vk.vkCmdCopyBuffer(cmd, src.buffer, dst.buffer, 1,
                                   [vk.VkBufferCopy(srcOffset=0, dstOffset=0, size=min(src.nbytes, dst.nbytes))])
    try:
        cmd = vk.vkAllocateCommandBuffers(dev.handle, vk.VkCommandBufferAllocateInfo(
            sType=vk.VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO, commandPool=commands,
            level=vk.VK_COMMAND_BUFFER_LEVEL_PRIMARY, commandBufferCount=1))[0]
        return _submit(dev, cmd, record)
    finally:
        vk.vkDestroyCommandPool(dev.handle, commands, None)


def _record(cmd, sh: Shader, dset, grid, repeat: int, heap: TapeHeap | None) -> None:
    """Dispatch ``repeat`` times; with a tape heap, its header written before each dispatch (the status
    only before the first: it gathers every dispatch's) and copied to the host words after the last."""
    vk.vkCmdBindPipeline(cmd, vk.VK_PIPELINE_BIND_POINT_COMPUTE, sh.pipeline)
    vk.vkCmdBindDescriptorSets(cmd, vk.VK_PIPELINE_BIND_POINT_COMPUTE, sh.layout, 0, 1, [dset], 0, None)
    barrier = vk.VkMemoryBarrier(sType=vk.VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                                 srcAccessMask=vk.VK_ACCESS_SHADER_WRITE_BIT | vk.VK_ACCESS_TRANSFER_WRITE_BIT,
                                 dstAccessMask=vk.VK_ACCESS_SHADER_READ_BIT | vk.VK_ACCESS_SHADER_WRITE_BIT
                                 | vk.VK_ACCESS_TRANSFER_READ_BIT | vk.VK_ACCESS_TRANSFER_WRITE_BIT)
    both = vk.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | vk.VK_PIPELINE_STAGE_TRANSFER_BIT
    words = [HEADER // UNIT, heap.units if heap is not None else 0] + [0] * (HEADER // 4 - 2)
    header = vk.ffi.new("uint32_t[]", words)
    for k in range(repeat):
        if k or heap is not None:
            if heap is not None:
                vk.vkCmdUpdateBuffer(cmd, heap.memory.buffer, 0, 8 if k else HEADER, header)
            vk.vkCmdPipelineBarrier(cmd, both, both, 0, 1, [barrier], 0, None, 0, None)
        vk.vkCmdDispatch(cmd, *grid)
    if heap is not None:
        vk.vkCmdPipelineBarrier(cmd, both, both, 0, 1, [barrier], 0, None, 0, None)
        vk.vkCmdCopyBuffer(cmd, heap.memory.buffer, heap.status.buffer, 1,
                           [vk.VkBufferCopy(srcOffset=0, dstOffset=0, size=HEADER)])


def _submit(dev: VulkanDevice, cmd, record) -> float:
    """Record ``cmd`` with ``record(cmd)`` between two timestamps, submit, wait; the device's seconds."""
    h = dev.handle
    queries = vk.vkCreateQueryPool(h, vk.VkQueryPoolCreateInfo(
        sType=vk.VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO, queryType=vk.VK_QUERY_TYPE_TIMESTAMP,
        queryCount=2), None)
    fence = vk.vkCreateFence(h, vk.VkFenceCreateInfo(sType=vk.VK_STRUCTURE_TYPE_FENCE_CREATE_INFO), None)
    try:
        vk.vkBeginCommandBuffer(cmd, vk.VkCommandBufferBeginInfo(
            sType=vk.VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
            flags=vk.VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT))
        vk.vkCmdResetQueryPool(cmd, queries, 0, 2)
        vk.vkCmdWriteTimestamp(cmd, vk.VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, queries, 0)
        record(cmd)
        vk.vkCmdWriteTimestamp(cmd, vk.VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, queries, 1)
        vk.vkEndCommandBuffer(cmd)
        vk.vkQueueSubmit(dev.queue, 1, [vk.VkSubmitInfo(
            sType=vk.VK_STRUCTURE_TYPE_SUBMIT_INFO, commandBufferCount=1, pCommandBuffers=[cmd])], fence)
        try:
            vk.vkWaitForFences(h, 1, [fence], vk.VK_TRUE, 600 * 10**9)
        except vk.VkError as exc:  # device lost: a kernel that faulted
            raise VulkanError(f"the Vulkan device failed running the shader ({type(exc).__name__})") from exc
        stamps = vk.ffi.new("uint64_t[2]")
        vk.vkGetQueryPoolResults(h, queries, 0, 2, 16, stamps, 8,
                                 vk.VK_QUERY_RESULT_64_BIT | vk.VK_QUERY_RESULT_WAIT_BIT)
        return (stamps[1] - stamps[0]) * dev.timestamp_period * 1e-9
    finally:
        vk.vkDestroyFence(h, fence, None)
        vk.vkDestroyQueryPool(h, queries, None)


@attrs.frozen
class VulkanRuntime:
    """The runtime of SPIR-V kernels (:class:`~gpucompiler.runtime.launchers.Runtime`): a launch waits
    for the device; the shader is compiled with the launch's block as its workgroup."""

    def stream_handle(self, stream) -> int:
        if stream is not None:
            raise LaunchError(f"Vulkan launches run on the device's queue and wait for it: pass no stream "
                              f"(got {stream!r})")
        return 0

    def launch(self, kernel, grid, block, hstream: int, args) -> None:
        launch(kernel, grid, block, args)

    def forget(self, kernel) -> None:
        _SHADERS.pop(kernel, None)


VULKAN = VulkanRuntime()
register_runtime(SPIRVTarget, VULKAN)

__all__ = ["VULKAN", "TapeHeap", "VulkanRuntime", "prepare", "tape_heap", "transfer", "DeviceFeatureError", "Shader", "VulkanArray", "VulkanDevice", "VulkanError", "compile_spirv",
           "device", "launch", "run", "shader", "to_device"]
