"""The tool that checks the SPIR-V target's output: ``spirv-val`` (SPIRV-Tools) in Vulkan 1.3's environment."""

from __future__ import annotations

import functools
import shutil
import struct
import subprocess
import tempfile

from ...errors import ToolchainError, ToolNotFoundError

VULKAN_ENV = "vulkan1.3"
_OP_DECORATE = 71
"""The ``--target-env`` modules are checked in: the Vulkan rules, not only SPIR-V's."""


class SpirvValidationError(ToolchainError):
    """``spirv-val`` refused a module the SPIR-V target made; ``detail`` is its message."""

    def __init__(self, detail: str):
        self.detail = detail
        super().__init__(f"spirv-val --target-env {VULKAN_ENV} refused the shader: {detail.strip()}")


@functools.cache
def find_spirv_val() -> str | None:
    """Path of ``spirv-val`` (Debian's ``spirv-tools``), or None."""
    return shutil.which("spirv-val")


def validate_binary(binary: bytes, *, required: bool = False) -> bool:
    """Check ``binary`` with ``spirv-val``; True when checked, False when the tool is missing
    (``required``: raise :class:`ToolNotFoundError` instead). Raises :class:`SpirvValidationError`."""
    tool = find_spirv_val()
    if tool is None:
        if required:
            raise ToolNotFoundError("spirv-val is not on PATH: install SPIRV-Tools (apt-get install spirv-tools)")
        return False
    with tempfile.NamedTemporaryFile(suffix=".spv") as f:
        f.write(binary)
        f.flush()
        run = subprocess.run([tool, "--target-env", VULKAN_ENV, f.name], capture_output=True, text=True)
    if run.returncode != 0:
        raise SpirvValidationError(run.stderr or run.stdout)
    return True


_BINDING = 33


def bindings(binary: bytes) -> set[int]:
    """The descriptor bindings a SPIR-V module declares (``OpDecorate ... Binding N``)."""
    words = struct.unpack(f"<{len(binary) // 4}I", binary)
    at, found = 5, set()
    while at < len(words):
        count, opcode = words[at] >> 16, words[at] & 0xFFFF
        if opcode == _OP_DECORATE and count == 4 and words[at + 2] == _BINDING:
            found.add(words[at + 3])
        at += max(count, 1)
    return found


_OP_CONSTANT, _OP_CONTROL_BARRIER = 43, 224
BARRIER_SEMANTICS = 0x8 | 0x40 | 0x100
"""AcquireRelease | UniformMemory | WorkgroupMemory: what ``syncthreads()`` orders (CUDA's
``__syncthreads`` orders global and shared memory among the block's threads)."""


def order_barriers(binary: bytes) -> bytes:
    """Give every ``OpControlBarrier`` the memory semantics :data:`BARRIER_SEMANTICS`.

    LLVM 22 emits HLSL's ``GroupMemoryBarrierWithGroupSync`` with ``SequentiallyConsistent`` and no
    storage class, which orders no memory in Vulkan: drivers may then move shared-memory loads
    above the barrier (Mesa's does). Each barrier's semantics operand becomes a new ``OpConstant``
    (same type, defined beside the old one; the module's id bound grows by one).
    """
    words = list(struct.unpack(f"<{len(binary) // 4}I", binary))
    at, constants, barriers = 5, {}, []
    while at < len(words):
        count, opcode = words[at] >> 16, words[at] & 0xFFFF
        if opcode == _OP_CONSTANT and count == 4:
            constants[words[at + 2]] = at
        elif opcode == _OP_CONTROL_BARRIER:
            barriers.append(at)
        at += max(count, 1)
    if not barriers:
        return binary
    old = words[barriers[0] + 3]
    new = words[3]
    words[3] += 1
    for b in barriers:
        words[b + 3] = new
    where = constants[old]
    words[where + 4:where + 4] = [(4 << 16) | _OP_CONSTANT, words[where + 1], new, BARRIER_SEMANTICS]
    return struct.pack(f"<{len(words)}I", *words)


#: atomics whose words are ``opcode, result type, result, pointer, scope, semantics, ...``: exchange, the
#: integer and bitwise read-modify-writes, and the float ones of SPV_EXT_shader_atomic_float(_min_max)
_ATOMIC_RMW = frozenset({229, *range(232, 243), 5614, 5615, 6035})


def relaxed_atomics(binary: bytes) -> bytes:
    """Give every atomic read-modify-write ``Relaxed`` memory semantics (0), as CUDA's ``atomicAdd`` has.

    LLVM emits them ``AcquireRelease`` (relaxed ones at device scope come out as ``OpConstantNull``
    operands Vulkan refuses: :mod:`.atomics`), and Mesa's lavapipe then runs a loop holding one with
    lanes of different trip counts wrongly: a lane stopped after two or three iterations (an atomic add
    in ``while j > 0`` lost its last ones). The new constant is defined beside the old semantics
    constant (the module's id bound grows by one)."""
    words = list(struct.unpack(f"<{len(binary) // 4}I", binary))
    at, constants, atomics = 5, {}, []
    while at < len(words):
        count, opcode = words[at] >> 16, words[at] & 0xFFFF
        if opcode == _OP_CONSTANT and count == 4:
            constants[words[at + 2]] = at
        elif opcode in _ATOMIC_RMW and count >= 6:
            atomics.append(at)
        at += max(count, 1)
    if not atomics:
        return binary
    old = words[atomics[0] + 5]
    new = words[3]
    words[3] += 1
    for a in atomics:
        words[a + 5] = new
    where = constants[old]
    words[where + 4:where + 4] = [(4 << 16) | _OP_CONSTANT, words[where + 1], new, 0]
    return struct.pack(f"<{len(words)}I", *words)


_OP_LOOP_MERGE, _OP_SELECTION_MERGE = 246, 247
_BRANCHES = frozenset({249, 250, 251})  # OpBranch, OpBranchConditional, OpSwitch


def place_merges(binary: bytes) -> bytes:
    """Move each ``OpSelectionMerge``/``OpLoopMerge`` down to just before its block's branch.

    LLVM 22's back end sometimes schedules an instruction between the merge and the branch (seen
    with the offsets of neighbouring elements in a gradient), which SPIR-V forbids. A merge only
    declares the construct: moving it past the block's other instructions changes nothing else.
    """
    words = list(struct.unpack(f"<{len(binary) // 4}I", binary))
    out, at, held = words[:5], 5, None
    while at < len(words):
        count = max(words[at] >> 16, 1)
        inst, opcode = words[at:at + count], words[at] & 0xFFFF
        at += count
        if opcode in (_OP_LOOP_MERGE, _OP_SELECTION_MERGE):
            held = inst
            continue
        if held is not None and opcode in _BRANCHES:
            out += held
            held = None
        out += inst
    return struct.pack(f"<{len(out)}I", *out)


_FLOAT_ARITHMETIC = frozenset({129, 131, 133, 136, 140, 141})  # OpFAdd, OpFSub, OpFMul, OpFDiv, OpFRem, OpFMod
_NO_CONTRACTION = 42


def no_contraction(binary: bytes) -> bytes:
    """Decorate every float add, subtract, multiply, divide and remainder ``NoContraction``.

    Without it a Vulkan driver may fuse and reorder them (NVIDIA's turned a Cody-Waite reduction
    ``((x - k*P1) - k*P2) - ...`` into one rounded product, 1420 ulps off in ``sin``): with it the
    shader rounds each operation as written, as the CPU and the emulation do. The decorations go
    before the first type declaration (the end of the annotations).
    """
    words = list(struct.unpack(f"<{len(binary) // 4}I", binary))
    at, first_type, ids = 5, None, []
    while at < len(words):
        count, opcode = words[at] >> 16, words[at] & 0xFFFF
        if first_type is None and 19 <= opcode <= 39:
            first_type = at
        elif opcode in _FLOAT_ARITHMETIC:
            ids.append(words[at + 2])
        at += max(count, 1)
    if not ids or first_type is None:
        return binary
    added = [w for i in ids for w in ((3 << 16) | _OP_DECORATE, i, _NO_CONTRACTION)]
    words[first_type:first_type] = added
    return struct.pack(f"<{len(words)}I", *words)


_OP_CAPABILITY, _OP_ENTRY_POINT, _OP_EXECUTION_MODE, _OP_TYPE_FLOAT = 17, 15, 16, 22
#: float-control execution modes and their capabilities (SPIR-V 1.4+, Vulkan 1.2)
DENORM_PRESERVE, SIGNED_ZERO_INF_NAN_PRESERVE = (4459, 4464), (4461, 4466)


def float_controls(binary: bytes, modes: list[tuple[tuple[int, int], int]]) -> bytes:
    """Add ``OpExecutionMode entry MODE width`` (and its capability) for each ``((mode, capability),
    width)`` in ``modes`` whose float width the module uses (the runtime picks what its device has)."""
    words = list(struct.unpack(f"<{len(binary) // 4}I", binary))
    at, widths, entry, after_modes, first_cap = 5, set(), None, None, None
    while at < len(words):
        count, opcode = words[at] >> 16, words[at] & 0xFFFF
        if opcode == _OP_CAPABILITY and first_cap is None:
            first_cap = at
        elif opcode == _OP_ENTRY_POINT:
            entry, after_modes = words[at + 2], at + count
        elif opcode == _OP_EXECUTION_MODE:
            after_modes = at + count
        elif opcode == _OP_TYPE_FLOAT:
            widths.add(words[at + 2])
        at += max(count, 1)
    wanted = [(m, c, w) for (m, c), w in modes if w in widths]
    if not wanted or entry is None or after_modes is None or first_cap is None:
        return binary
    exec_modes = [x for m, _, w in wanted for x in ((4 << 16) | _OP_EXECUTION_MODE, entry, m, w)]
    words[after_modes:after_modes] = exec_modes
    caps = [x for c in sorted({c for _, c, _ in wanted}) for x in ((2 << 16) | _OP_CAPABILITY, c)]
    words[first_cap:first_cap] = caps
    return struct.pack(f"<{len(words)}I", *words)
