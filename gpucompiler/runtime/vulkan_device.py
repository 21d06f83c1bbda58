"""A Vulkan compute device through the ``vulkan`` package (cffi bindings of ``libvulkan.so.1``).

:func:`device` opens the first physical device with a compute queue (once per
process) with every optional feature a kernel may need that it supports;
:meth:`VulkanDevice.require` checks a SPIR-V module's capabilities against
them and raises :class:`DeviceFeatureError` naming the missing feature. Why
this binding: docs/vulkan.md.
"""

from __future__ import annotations

import functools
import struct

from typing import Any

import attrs

from ..errors import LaunchError, ToolchainError
from ..targets.spirv.tools import DENORM_PRESERVE, SIGNED_ZERO_INF_NAN_PRESERVE

try:  # an optional dependency: pip install 'gpucompiler[vulkan]'
    import vulkan as _binding
except (ImportError, OSError) as _missing:  # OSError: the package is there, libvulkan.so.1 is not
    _binding = None
    _WHY = str(_missing)
else:
    _WHY = ""
vk: Any = _binding
"""The ``vulkan`` module (cffi: its functions and structures are untyped), or None without it."""

SUBGROUP = 32
"""The lanes of a ``shfl_down`` (CUDA's warp): shaders with shuffles run with 32-lane subgroups."""


class VulkanError(ToolchainError):
    """Vulkan is missing (binding, loader, driver) or a Vulkan call failed; the message says which."""


class DeviceFeatureError(VulkanError, LaunchError):
    """The device lacks a feature a kernel needs; ``feature`` names it (a Vulkan feature or property)."""

    def __init__(self, feature: str, device: str, why: str):
        self.feature, self.device = feature, device
        super().__init__(f"the Vulkan device {device!r} lacks {feature}, which this kernel needs ({why}); "
                         "run it on a device that has it, on PTX, or in the CPU emulation (\"cpu\")")


def _has_workgroup_memory(binary: bytes) -> bool:
    """Whether the module declares ``Workgroup`` variables (``OpVariable`` of storage class 4)."""
    words = struct.unpack(f"<{len(binary) // 4}I", binary)
    at = 5
    while at < len(words):
        count, opcode = words[at] >> 16, words[at] & 0xFFFF
        if opcode == 59 and count >= 4 and words[at + 3] == 4:
            return True
        at += max(count, 1)
    return False


def _capabilities(binary: bytes) -> set[int]:
    """The ``OpCapability`` operands of a SPIR-V module."""
    words = struct.unpack(f"<{len(binary) // 4}I", binary)
    caps, at = set(), 5
    while at < len(words):
        count, opcode = words[at] >> 16, words[at] & 0xFFFF
        if opcode == 17:
            caps.add(words[at + 1])
        elif opcode not in (11, 10, 17) and caps:  # capabilities come first in a module
            break
        at += max(count, 1)
    return caps


#: SPIR-V capability -> (feature attribute, what needs it)
_CAPABILITY_FEATURES = {
    10: ("shaderFloat64", "float64 arithmetic"),
    11: ("shaderInt64", "64-bit integers (indices, shapes)"),
    12: ("shaderBufferInt64Atomics", "64-bit atomics (int64 atomics, float64 atomic adds)"),
    22: ("shaderInt16", "16-bit integers"),
    39: ("shaderInt8", "8-bit integers"),
    9: ("shaderFloat16", "float16 arithmetic"),
    4448: ("storageBuffer8BitAccess", "bool or int8 arrays"),
    4433: ("storageBuffer16BitAccess", "16-bit arrays"),
    6033: ("shaderBufferFloat32AtomicAdd", "float32 atomic adds (VK_EXT_shader_atomic_float)"),
    6034: ("shaderBufferFloat64AtomicAdd", "float64 atomic adds, e.g. a gradient's accumulation "
                                           "(VK_EXT_shader_atomic_float)"),
    5612: ("shaderBufferFloat32AtomicMinMax", "float32 atomic min/max (VK_EXT_shader_atomic_float2)"),
    5613: ("shaderBufferFloat64AtomicMinMax", "float64 atomic min/max (VK_EXT_shader_atomic_float2)"),
}
#: capabilities whose ``shaderShared...`` feature a shader with shared memory needs too
_SHARED_TWIN = {6033: "shaderSharedFloat32AtomicAdd", 6034: "shaderSharedFloat64AtomicAdd",
                5612: "shaderSharedFloat32AtomicMinMax", 5613: "shaderSharedFloat64AtomicMinMax"}
_ATOMIC_FLOAT = "VK_EXT_shader_atomic_float"
_ATOMIC_FLOAT2 = "VK_EXT_shader_atomic_float2"
SHUFFLE = 65
"""SPIR-V's ``GroupNonUniformShuffle`` capability."""
SUBGROUP_SUMS = frozenset({62, 63})
"""SPIR-V's ``GroupNonUniformVote`` and ``GroupNonUniformArithmetic`` capabilities."""


@attrs.define(eq=False)
class VulkanDevice:
    """An open logical device, its compute queue and what it supports."""

    name: str
    instance: object
    physical: object
    handle: object
    queue: object
    family: int
    features: dict[str, bool]
    subgroup_sizes: tuple[int, int]
    """the smallest and largest subgroup a pipeline may require (equal where it cannot choose)"""
    shuffle: bool
    """whether compute shaders have subgroup shuffles"""
    memory_types: list = attrs.field(factory=list)
    timestamp_period: float = 1.0
    max_invocations: int = 128
    max_groups: tuple[int, int, int] = (65535, 65535, 65535)
    float_modes: list = attrs.field(factory=list)
    """the float controls the device honours (``SignedZeroInfNanPreserve``, ``DenormPreserve``) by width:
    every shader asks for them (:func:`~gpucompiler.targets.spirv.tools.float_controls`)"""
    max_buffer_range: int = 1 << 27
    """``maxStorageBufferRange``: the most bytes one storage buffer binding may span"""
    subgroup_sums: bool = False
    """whether compute shaders have the subgroup vote and arithmetic operations the warp-aggregated
    adjoints use (:mod:`gpucompiler.targets.spirv.warp`); without them shaders keep one atomic per lane"""

    def require(self, binary: bytes) -> bool:
        """Raise :class:`DeviceFeatureError` for a capability of ``binary`` the device lacks; True when
        the shader needs 32-lane subgroups (it shuffles)."""
        caps, shared = _capabilities(binary), _has_workgroup_memory(binary)
        for cap, (feature, why) in _CAPABILITY_FEATURES.items():
            if cap in caps and not self.features.get(feature, False):
                raise DeviceFeatureError(feature, self.name, why)
            twin = _SHARED_TWIN.get(cap)
            if cap in caps and shared and twin is not None and not self.features.get(twin, False):
                raise DeviceFeatureError(twin, self.name, why + " in a shader with shared memory")
        if caps & SUBGROUP_SUMS and not self.subgroup_sums:
            raise DeviceFeatureError("subgroupSupportedOperations VOTE and ARITHMETIC in compute shaders",
                                     self.name, "adjoints summed over a subgroup (SPIRVTarget(subgroups=False) "
                                     "compiles one atomic per lane)")
        if SHUFFLE not in caps:
            return False
        if not self.shuffle:
            raise DeviceFeatureError("subgroupSupportedOperations SHUFFLE in compute shaders", self.name,
                                     "gd.shfl_down")
        low, high = self.subgroup_sizes
        if not low <= SUBGROUP <= high or not self.features.get("subgroupSizeControl", False):
            raise DeviceFeatureError(f"32-lane subgroups (its subgroups have {low} to {high} lanes)", self.name,
                                     "gd.shfl_down exchanges values among 32 lanes, as a CUDA warp")
        return True


def _check(result, call: str) -> None:
    if result != vk.VK_SUCCESS:
        raise VulkanError(f"{call} failed with VkResult {result}")


def _feature_chain(extensions: frozenset[str] = frozenset()):
    """``(features2, vulkan11, vulkan12, vulkan13, atomic_float, atomic_float2)`` linked for a query or
    a device's creation (the atomic-float structures only where the device has the extension)."""
    af2 = (vk.VkPhysicalDeviceShaderAtomicFloat2FeaturesEXT(
        sType=vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_ATOMIC_FLOAT_2_FEATURES_EXT)
        if _ATOMIC_FLOAT2 in extensions else None)
    af = (vk.VkPhysicalDeviceShaderAtomicFloatFeaturesEXT(
        sType=vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_ATOMIC_FLOAT_FEATURES_EXT, pNext=af2)
        if _ATOMIC_FLOAT in extensions else None)
    v12 = vk.VkPhysicalDeviceVulkan12Features(sType=vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES,
                                              pNext=af if af is not None else af2)
    v13 = vk.VkPhysicalDeviceVulkan13Features(sType=vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES,
                                              pNext=v12)
    v11 = vk.VkPhysicalDeviceVulkan11Features(sType=vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES,
                                              pNext=v13)
    f2 = vk.VkPhysicalDeviceFeatures2(sType=vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, pNext=v11)
    return f2, v11, v12, v13, af, af2


_V10 = ("shaderFloat64", "shaderInt64", "shaderInt16")
_V11 = ("storageBuffer16BitAccess",)
_V12 = ("shaderBufferInt64Atomics", "shaderSharedInt64Atomics", "shaderInt8", "shaderFloat16",
        "storageBuffer8BitAccess", "bufferDeviceAddress")
_V13 = ("subgroupSizeControl", "computeFullSubgroups")
_AF = tuple(f"shader{w}Float{b}AtomicAdd" for w in ("Buffer", "Shared") for b in (32, 64))
_AF2 = tuple(f"shader{w}Float{b}AtomicMinMax" for w in ("Buffer", "Shared") for b in (32, 64))


def _groups(chain):
    """``(struct, feature names)`` of each part of a :func:`_feature_chain`."""
    f2, v11, v12, v13, af, af2 = chain
    return [(f2.features, _V10), (v11, _V11), (v12, _V12), (v13, _V13), (af, _AF), (af2, _AF2)]


def _features(physical, extensions: frozenset[str]) -> dict[str, bool]:
    chain = _feature_chain(extensions)
    vk.vkGetPhysicalDeviceFeatures2(physical, chain[0])
    return {n: bool(getattr(part, n)) if part is not None else False for part, names in _groups(chain)
            for n in names}


@functools.cache
def device() -> VulkanDevice:
    """The process's Vulkan device (the first with a compute queue); :class:`VulkanError` without one."""
    if vk is None:
        raise VulkanError(f"the Vulkan binding is not installed or cannot load libvulkan.so.1 ({_WHY}): "
                          "pip install 'gpucompiler[vulkan]' and install a Vulkan loader and driver "
                          "(Debian: apt-get install libvulkan1 mesa-vulkan-drivers)")
    app = vk.VkApplicationInfo(sType=vk.VK_STRUCTURE_TYPE_APPLICATION_INFO, pApplicationName="gpucompiler",
                               apiVersion=vk.VK_MAKE_VERSION(1, 3, 0))
    try:
        instance = vk.vkCreateInstance(vk.VkInstanceCreateInfo(
            sType=vk.VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO, pApplicationInfo=app), None)
        physicals = vk.vkEnumeratePhysicalDevices(instance)
    except vk.VkError as exc:
        raise VulkanError(f"no Vulkan instance ({type(exc).__name__}): is a Vulkan driver installed "
                          "(VK_DRIVER_FILES names its ICD file)?") from exc
    for physical in physicals:
        props = vk.vkGetPhysicalDeviceProperties(physical)
        if props.apiVersion < vk.VK_MAKE_VERSION(1, 3, 0):
            continue
        families = vk.vkGetPhysicalDeviceQueueFamilyProperties(physical)
        family = next((k for k, f in enumerate(families) if f.queueFlags & vk.VK_QUEUE_COMPUTE_BIT), None)
        if family is not None:
            return _open(instance, physical, props, family)
    raise VulkanError("no Vulkan 1.3 device with a compute queue")


def _three(counts) -> tuple[int, int, int]:
    return int(counts[0]), int(counts[1]), int(counts[2])


def _extension_name(props) -> str:
    return _text(props.extensionName)


def _text(value: Any) -> str:
    """A C string field of a structure (the binding gives ``str`` or a char array)."""
    if isinstance(value, str):
        return value
    raw: Any = vk.ffi.string(value)
    return raw.decode()


def _open(instance, physical, props, family: int) -> VulkanDevice:
    name = _text(props.deviceName)
    extensions = frozenset(_extension_name(e) for e in vk.vkEnumerateDeviceExtensionProperties(physical, None))
    extensions &= {_ATOMIC_FLOAT, _ATOMIC_FLOAT2}
    features = _features(physical, extensions)
    sub = vk.VkPhysicalDeviceSubgroupProperties(sType=vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES)
    v12 = vk.VkPhysicalDeviceVulkan12Properties(sType=vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_PROPERTIES,
                                                pNext=sub)
    v13 = vk.VkPhysicalDeviceVulkan13Properties(sType=vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_PROPERTIES,
                                                pNext=v12)
    vk.vkGetPhysicalDeviceProperties2(physical, vk.VkPhysicalDeviceProperties2(
        sType=vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, pNext=v13))
    modes = [(SIGNED_ZERO_INF_NAN_PRESERVE, w) for w in (32, 64)
             if getattr(v12, f"shaderSignedZeroInfNanPreserveFloat{w}")]
    modes += [(DENORM_PRESERVE, w) for w in (32, 64) if getattr(v12, f"shaderDenormPreserveFloat{w}")]
    compute = sub.supportedStages & vk.VK_SHADER_STAGE_COMPUTE_BIT
    shuffle = bool(sub.supportedOperations & vk.VK_SUBGROUP_FEATURE_SHUFFLE_BIT and compute)
    sums = vk.VK_SUBGROUP_FEATURE_VOTE_BIT | vk.VK_SUBGROUP_FEATURE_ARITHMETIC_BIT
    subgroup_sums = bool(compute and sub.supportedOperations & sums == sums)
    sizes = ((v13.minSubgroupSize, v13.maxSubgroupSize)
             if features["subgroupSizeControl"] and v13.requiredSubgroupSizeStages & vk.VK_SHADER_STAGE_COMPUTE_BIT
             else (sub.subgroupSize, sub.subgroupSize))
    chain = _feature_chain(extensions)
    for part, names in _groups(chain):
        for n in names:
            if part is not None:
                setattr(part, n, features[n])
    f2 = chain[0]
    enabled = sorted(extensions)
    queue_info = vk.VkDeviceQueueCreateInfo(sType=vk.VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
                                            queueFamilyIndex=family, queueCount=1, pQueuePriorities=[1.0])
    handle = vk.vkCreateDevice(physical, vk.VkDeviceCreateInfo(
        sType=vk.VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO, pNext=f2, queueCreateInfoCount=1,
        pQueueCreateInfos=[queue_info], enabledExtensionCount=len(enabled), ppEnabledExtensionNames=enabled), None)
    memory = vk.vkGetPhysicalDeviceMemoryProperties(physical)
    types = [(memory.memoryTypes[k].propertyFlags, memory.memoryHeaps[memory.memoryTypes[k].heapIndex].size)
             for k in range(memory.memoryTypeCount)]
    return VulkanDevice(name, instance, physical, handle, vk.vkGetDeviceQueue(handle, family, 0), family, features,
                        sizes, shuffle, types, float(props.limits.timestampPeriod),
                        int(props.limits.maxComputeWorkGroupInvocations),
                        _three(props.limits.maxComputeWorkGroupCount), modes,
                        max_buffer_range=int(props.limits.maxStorageBufferRange), subgroup_sums=subgroup_sums)


__all__ = ["SHUFFLE", "SUBGROUP", "DeviceFeatureError", "VulkanDevice", "VulkanError", "device", "vk"]
