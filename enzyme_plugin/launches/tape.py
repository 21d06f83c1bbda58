"""``LaunchTape``: reverse-mode AD of a host program that launches kernels (NVIDIA Warp's ``wp.Tape``).

::

    tape = LaunchTape()
    with tape:                                  # launches are recorded (and run)
        square[blocks, 256, "cpu"](x, y)
        total[blocks, 256, "cpu"](y, loss)
    tape.backward(loss)                         # gradient kernels, in reverse launch order
    tape.gradient(x)                            # d loss / d x

Every float array a recorded launch takes gets a shadow (its gradient),
made like the array by the array's library and kept by the tape; the seeds
of ``backward`` are added into them, and each launch's gradient kernel adds
into the shadows of its inputs. The arrays a kernel writes (read from its
typed IR, :mod:`.writes`) are copied before its launch when its gradient
needs their old values: when the kernel reads them too, or an earlier
launch took them, or a hand-written gradient replaces the generated one (an
array the kernel only stores into gets the same stores again from its
gradient kernel). ``backward`` puts the copies back as it walks the launches
in reverse, so each gradient kernel sees the memory its kernel saw, also
when later launches overwrote it. After ``backward`` the arrays hold their
values from the end of the recording.

What a launch needs to know of its kernel (the shadowed parameters, the
written and read arrays, the gradient kernel's argument types) is worked out
once per kernel and signature (:class:`LaunchPlan`), the launches behind it
once per configuration (:class:`Runs`), and a GPU launch repeating the last recording's at its place takes
what that one found (:class:`Repeat`), its record too when it copies nothing (and then, once it repeated a
few times, it launches through a native entry of the CUDA runtime's made for its values, :attr:`Repeat.native`,
without its signature read in Python); its float arrays get their
shadows when the recording ends (all of the last recording's at once when every launch repeated it and
nothing else holds those that were handed out). A recorded launch keeps its gradient's launch, and
``backward`` calls those in reverse. On a GPU, copies and launches on CUDA's legacy default stream are
ordered by the stream, without a synchronisation; the heap-exhaustion flags of
kernels whose tapes allocate on the device are read once at the end of the
recording and once after ``backward`` (:func:`gpucompiler.runtime.device_heap.deferring`):
a recording that ran out is incomplete, never reversed.

With ``LaunchTape(split=True)`` each launch runs the augmented forward sweep
of its kernel instead (Enzyme's split mode): every thread keeps what its
reverse sweep needs on the device heap (the CPU heap in the grid emulation),
and ``backward`` launches the reverse sweeps from those tapes, without
running the kernels' forward sweeps again. A split tape is consumed by its
``backward`` (each reverse sweep frees its thread's tape: repeated
record-and-backward rounds do not grow the heap); :meth:`reset` frees the
tapes of launches never reversed. A split tape dropped before either keeps
its tapes on the heap until the process ends (freeing them means launching
the reverse sweeps, which a garbage collector's finalizer must not do): a
``ResourceWarning`` says so.
"""

from __future__ import annotations

import contextvars
import functools
import math
import operator
import sys
import warnings
from collections.abc import Mapping
from collections.abc import Callable, Iterable
from typing import Any, NoReturn

import attrs
import numpy as np

from gpucompiler import types as T
from gpucompiler.errors import DeviceHeapError, GPUCompilerError, LaunchError, SourceError, for_user
from gpucompiler.interpreter import widen
from gpucompiler.kernel import (CPU, Kernel, Launch, current_recorder, set_recorder, start_recording,
                                stop_recording)
from gpucompiler.runtime import cuda as cuda_runtime, device_heap
from gpucompiler.runtime.arguments import SCALAR_TYPES, cuda_array_type
from gpucompiler import settings

from ..ad.helpers import TAPE_INLINE
from ..locations import caller_location
from .arrays import NUMPY, ArrayOps, ops_of
from .gradients import (GRADIENT_ATTRIBUTE, REGISTRATIONS, differentiable, gradient_kernel, registered_gradient,
                        split_kernel)
from . import signed
from .graphs import GraphReplay, graph_key
from .replay import W_COUNT, W_CURSOR, Replay, compiled as replay_code, weak_recorder
from .signed import SignedLaunch
from .writes import accumulated_parameters, read_parameters, written_parameters


def _size(a) -> int:
    return math.prod(tuple(a.shape))


def _shape_text(a) -> str:
    return f"shape {tuple(a.shape)}"


class LaunchTapeError(SourceError, ValueError):
    """A launch tape used out of order: a split tape reversed twice, a gradient of an array it never saw,
    arrays that overlap in memory. Located at the user's call."""

    def __init__(self, message: str, hint: str = ""):
        super().__init__(message, caller_location(), "", hint)


@attrs.define(eq=False)
class LaunchRecord:
    """One recorded launch: the kernel with its configuration, the bound arguments, the copies of the
    arrays it writes that its gradient needs (taken before it ran), in split mode its per-thread tapes,
    and its gradient's launch, built when it was recorded (``reverse(args)``, ``args`` from
    :meth:`LaunchTape._gradient_args`)."""

    launch: Launch
    args: tuple
    plan: LaunchPlan
    snapshots: list[tuple[int, Any]]
    """(parameter index, copy before the launch)"""
    ops: ArrayOps
    holders: Any = None
    """split mode: the per-thread tapes (one row of int64 words per thread)"""
    reverse: Callable[[tuple], None] | None = None
    """the launch of the gradient (generated, hand-written or split mode's reverse sweep); None: no float array"""
    reverse_args: tuple | None = ()
    """its arguments (a hand-written gradient's: the launch's, then one adjoint each; split mode's: ``1, holders``,
    then the launch's, each float array followed by its shadow); None: a generated gradient's, the launch's with
    each float array followed by its shadow, taken from the tape's shadows when they are needed"""
    split: bool = False
    """split mode's augmented launch: reversed from its per-thread tapes"""
    hand: Kernel | None = None
    """the hand-written gradient ``reverse`` launches (None: a generated one)"""
    stream: int | None = None
    """the handle of the CUDA stream the launch went to (None: the CPU grid emulation)"""
    gradient: Kernel | None = None
    """the kernel ``reverse`` launches (generated or hand-written; None: split mode or no float array)"""

    @property
    def on_cpu(self) -> bool:
        return self.launch.stream == CPU


class TapeSizes:
    """The bytes of a split tape per thread for one kernel and signature, per side (GPU, emulation).

    Each thread's tape lives in its row of one array allocated before the launch (the header, then the first
    block of its stack: :data:`~enzyme_plugin.ad.helpers.TAPE_INLINE`); a thread whose tape outgrows its row
    moves the stack to the device heap (correct, and slow on a GPU: the device's malloc). The engine's stack
    has no size known before the kernel runs (control flow and loops decide it), so the rows start at
    :attr:`FIRST` bytes and then take the largest stack a reverse launch found (each header keeps its
    stack's size until the reverse sweep pops it) with :attr:`MARGIN` bytes to spare.
    """

    HEADER = 32
    FIRST = 256
    MARGIN = 16
    LARGEST = 1 << 16
    """bytes of stack a row holds at most: a larger stack grows onto the heap from there"""

    def __init__(self):
        self._bytes: dict[bool, int] = {}  # on the CPU grid emulation -> bytes per thread

    def words(self, cpu: bool) -> int:
        """int64 words per thread for the next launch."""
        return -(-self._bytes.get(cpu, self.FIRST) // 8)

    def measured(self, holders, cpu: bool) -> bool:
        """Whether rows as large as ``holders``' have been measured (nothing to learn from them)."""
        return cpu in self._bytes and holders.shape[1] * 8 >= self._bytes[cpu]

    def measure(self, holders, cpu: bool) -> None:
        """Learn from the tapes of an augmented launch, before its reverse launch pops them."""
        used = int(holders[:, 1].max()) if holders.shape[0] else 0
        need = self.HEADER + (min(max(used, 0), self.LARGEST) + self.MARGIN + 15) // 16 * 16
        self._bytes[cpu] = max(need, self._bytes.get(cpu, 0), TAPE_INLINE)


@attrs.frozen
class LaunchPlan:
    """What a launch tape needs to know of a kernel for one signature, worked out once."""

    dup: tuple[bool, ...]
    """per parameter: a float array with a shadow"""
    arrays: tuple[int, ...]
    """the array parameters"""
    written: tuple[int, ...]
    """the array parameters the kernel may write"""
    reads: frozenset[int]
    """the array parameters whose elements the kernel may read"""
    gradient_types: tuple
    """the gradient kernel's argument types: each float array's followed by its shadow's (a writable array of
    its layout: :meth:`~.arrays.ArrayOps.zeros_like`)"""
    pairs: tuple[tuple[int, int], ...]
    """the pairs of array parameters, whose memory must not overlap"""
    copied: tuple[int, ...]
    """the written parameters the kernel also reads: copied before every launch"""
    stored: tuple[int, ...]
    """the written parameters the kernel only stores into (or adds into atomically, the old value unused):
    copied when an earlier launch took the array (one only added into: when an earlier launch's gradient may
    read it), or another parameter that the kernel reads is the same array"""
    accumulated: tuple[int, ...]
    """the written parameters an ``atomic_add`` may add into: their final values are kept aside during
    ``backward`` (the gradient kernel adds the same values again)"""
    tapes: TapeSizes = attrs.field(factory=TapeSizes, eq=False)
    """split mode: the per-thread tape size learned from earlier launches"""
    runs: dict = attrs.field(factory=dict, eq=False)
    """(grid, block, stream, typed directly, split mode) -> :class:`Runs`, made by :func:`_runs`"""

    @property
    def differentiable(self) -> bool:
        """Whether a parameter is a float array (the launch has a gradient)."""
        return True in self.dup


_HOLDERS = T.ArrayType(T.int64, 2, "C")
"""The type of split mode's per-thread tape rows (an int64 array made by :meth:`LaunchTape._tapes`)."""


@functools.lru_cache(maxsize=512)
def _plan(k: Kernel, argtypes: tuple, world_age: int) -> LaunchPlan:
    """The plan of ``k`` for ``argtypes`` while its globals keep the values of ``world_age``."""
    def infer():
        return k.specialization(argtypes).infer(k.target.for_inference(), k.plugins)[1]
    frame = k._enabling_plugins(infer)
    arrays = tuple(j for j, t in enumerate(argtypes) if isinstance(widen(t), T.ArrayType))
    dup = differentiable(argtypes)
    types: list = []
    for t, d in zip(argtypes, dup):
        types += [t, attrs.evolve(widen(t), readonly=False, managed=False)] if d else [t]
    pairs = tuple((i, j) for m, i in enumerate(arrays) for j in arrays[m + 1:])
    written, reads = tuple(sorted(written_parameters(frame))), read_parameters(frame)
    accumulated = accumulated_parameters(frame)
    return LaunchPlan(dup, arrays, written, reads, tuple(types), pairs, tuple(j for j in written if j in reads),
                      tuple(j for j in written if j not in reads), tuple(j for j in written if j in accumulated))


_DEVICE_TYPES: dict = {}
"""``__cuda_array_interface__``'s (typestr, shape, strides, read-only) -> the array's frontend type"""


def _device_arguments(k: Kernel, args: tuple) -> tuple[tuple, list | None, Any]:
    """``(types, spans, stream)`` of a GPU launch's arguments, each array's ``__cuda_array_interface__`` read
    once: its type remembered per layout, its span (:func:`_span`) for the overlap check, the first stream an
    array's producer names (None: none does). Arguments of other kinds take the general path
    (:meth:`~gpucompiler.kernel.Kernel.argument_types`; spans and stream None)."""
    types, spans, named = [], [], None
    for a in args:
        t = SCALAR_TYPES.get(type(a))
        if t is not None:
            types.append(t)
            spans.append(None)
            continue
        cai = getattr(a, "__cuda_array_interface__", None)
        if not isinstance(cai, dict) or type(data := cai.get("data")) is not tuple:
            return k.argument_types(args), None, None
        shape, strides = cai["shape"], cai.get("strides")
        key = (cai["typestr"], shape, strides, data[1])
        try:
            t = _DEVICE_TYPES.get(key)
        except TypeError:  # a list where a tuple was expected
            return k.argument_types(args), None, None
        if t is None:
            t = cuda_array_type(cai)
            if t is None or t.ndim == 0:
                return k.argument_types(args), None, None  # the error naming the argument
            if len(_DEVICE_TYPES) < 4096:
                _DEVICE_TYPES[key] = t
        types.append(t)
        spans.append(_extent(data[0], t.dtype.itemsize, shape, strides))
        if named is None:
            named = cai.get("stream")
    return tuple(types), spans, named


def _host_arguments(k: Kernel, args: tuple) -> tuple[tuple, bool]:
    """``(the kernel's argument types of args, whether they are all NumPy arrays and Python scalars)`` on the
    CPU grid emulation: those it takes as they are, typed directly (:func:`_emulate`)."""
    out = []
    for a in args:
        t = SCALAR_TYPES.get(type(a))
        if t is None:
            t = T.typeof(a) if type(a) is np.ndarray else None
            if t is None:  # another kind of argument, or an array of a dtype kernels do not take (its error)
                return k.host_arguments(args)[0], False
        out.append(t)
    return tuple(out), True


def _emulate(k: Kernel, argtypes: tuple, grid, block, args: tuple) -> None:
    """Launch ``k`` on the CPU grid emulation with arguments of known types (NumPy arrays and Python scalars
    only): what :meth:`~gpucompiler.kernel.Launch.run` does for them, without typing them again."""
    k.refresh()  # world age: a rebound global recompiles
    k.emulated(argtypes).launch(grid, block, args)


def _emulate_refreshed(k: Kernel, argtypes: tuple, grid, block, args: tuple) -> None:
    """:func:`_emulate` of a kernel the caller has just refreshed (the tape, looking up its plan)."""
    k.emulated(argtypes).launch(grid, block, args)


def _launcher(k: Kernel, launch: Launch, argtypes: tuple | None) -> Callable[[tuple], None]:
    """``run(args)``: ``k`` launched with ``launch``'s configuration; on the emulation with ``argtypes`` as
    they are (None: arguments typed at each launch, as any launch)."""
    if argtypes is not None:
        return functools.partial(_emulate, k, argtypes, launch.grid, launch.block)
    where = launch.device if launch.device is not None else launch.stream
    run = k[launch.grid, launch.block, where].run
    return lambda args: run(*args)


@attrs.frozen
class Runs:
    """The launches behind one recorded configuration (kernel, signature, grid, block, stream), made once."""

    forward: Callable[..., None]
    """the kernel (split mode: its split kernel with ``0, holders`` first); on a GPU a
    :class:`~.signed.SignedLaunch`, also given the arguments' signature when the tape read it"""
    reverse: Callable[[tuple], None] | None
    """the generated gradient kernel (its arguments: each float array followed by its shadow; split mode: the
    split kernel, ``1, holders`` first); None without a float array"""
    gradient: Kernel | None = None
    """the generated gradient kernel ``reverse`` launches (not in split mode)"""
    whole: Runs | None = None
    """the same with a gradient kernel that writes again every array the kernel writes, for a launch that
    passes one array object to two parameters (``gradient`` leaves out the writes into the arrays the kernel
    only stores or adds into, where those cannot be read through another parameter: its ``noneed``)"""


def _runs(plan: LaunchPlan, launch: Launch, argtypes: tuple, direct: bool, split: bool) -> Runs:
    """The :class:`Runs` of ``launch`` with arguments of ``argtypes`` (``direct``: NumPy arrays and Python
    scalars on the emulation), in split mode or not, remembered in ``plan`` for configurations of plain
    values."""
    key = (launch.grid, launch.block, launch.stream, direct, split)
    plain = launch.device is None and type(launch.stream) in (str, int, type(None))
    runs = plan.runs.get(key) if plain else None
    if runs is None:
        k, gradient_types = launch.kernel, plan.gradient_types if direct else None
        forward = functools.partial(_emulate_refreshed, k, argtypes, launch.grid, launch.block) if direct \
            else SignedLaunch(k, launch)
        if not plan.differentiable:
            runs = Runs(forward, None)
        elif split:
            types = None if gradient_types is None else (T.int64, _HOLDERS, *gradient_types)
            run = _launcher(split_kernel(k, plan.dup), launch, types)
            runs = Runs(run, run)
        else:
            # the arrays it only stores or adds into: their values stay as the launches left them (backward
            # keeps the added-into ones aside), so the gradient kernel need not store them again
            noneed = tuple(j for j in plan.stored if plan.dup[j])
            g, whole = gradient_kernel(k, plan.dup), None
            if noneed:
                whole = Runs(forward, _launcher(g, launch, gradient_types), g)
                g = gradient_kernel(k, plan.dup, noneed)
            runs = Runs(forward, _launcher(g, launch, gradient_types), g, whole)
        if plain and len(plan.runs) < 64:
            plan.runs[key] = runs
    return runs


@attrs.define(eq=False)
class DeviceForm:
    """What recording a GPU launch of one configuration and argument signature needs, worked out once per
    world age of its kernel (:func:`_device_form`)."""

    age: int
    """the kernel's world age it holds for"""
    argtypes: tuple
    slots: tuple
    """where each array's pointer, shape and strides sit among the signature's values (:func:`.signed.typed`)"""
    plan: LaunchPlan
    runs: Runs | None = None
    """made at the first launch whose arguments passed the overlap check (:func:`_runs`)"""
    ops: tuple = (None, None)
    """(the type of the first array argument, its :class:`~.arrays.ArrayOps`) of the last launch"""
    clear: list | None = None
    """the last signature values whose arrays' bytes were found not to overlap at all (a training loop launches
    on the same arrays each round: the overlap check is one comparison then)"""


NATIVE_AFTER = 16
"""The launches of a :class:`Repeat` through its bound launch before the tape asks for its native entry."""
NATIVE_WAIT = 1024
"""The most such launches between two asks (each later ask waits twice as long as the one before)."""


@attrs.define(eq=False)
class Repeat:
    """What recording a GPU launch found, for the launch at the same place of the next recording: when that one
    is the same launch on the same argument objects with the same signature values (buffers, shapes, strides,
    scalars, the named stream) and its kernel's world age is the form's, and every launch before it in the
    recording was such a repeat (the same arrays taken before it), it gets the same plan, launches, stream,
    library and snapshot choice without working them out again (the overlap check passed on the same values),
    and, when it copies nothing, the same record."""

    launch: Launch
    args: tuple
    """the arguments (kept: an object compared by identity stays itself)"""
    sig: tuple
    """the signature's (key, values, named stream)"""
    form: DeviceForm
    stream: int
    ops: ArrayOps
    keep: tuple[int, ...]
    """the parameters whose arrays were copied before the launch"""
    first: type
    """the type of the first array argument (the arrays of ``ops``)"""
    where: tuple[str, int]
    """what the launch is named by a heap error: ``("recorded launch", its place from 1)``"""
    fresh: tuple[int, ...]
    """the parameters whose float arrays no launch before it took: each gets its shadow here"""
    record: LaunchRecord | None
    """its record, taken again by a repeat (None: the launch copies arrays, its record takes the copies); it
    holds no shadow or copy of the tape's (those are reused only while nothing else holds them)"""
    runs: Runs
    """the launches its records take (``form.runs``, or their :attr:`Runs.whole` for arguments that pass one
    array twice)"""
    go: Callable[[tuple, tuple], None] | None = None
    """the kernel's bound launch given the signature (:attr:`.signed.SignedLaunch.bound`, once a launch bound
    it): what ``form.runs.forward`` calls, called without it"""
    graph_part: tuple | None = None
    """(the tape's generation, the gradient kernel, the launch, its record's part of a backward's graph key)
    (:func:`.graphs.graph_key`)"""
    native: Callable[..., Any] | None = None
    """the runtime's fixed native entry of ``go`` (:meth:`~gpucompiler.runtime.cuda.BoundLaunch.native`), asked
    for when the launch copies nothing, after ``hits`` launches through ``go``: it checks in compiled code what a
    repeat's identity check, signature comparison and world-age check and the bound launch check (the same
    argument objects, signature values and stream, the kernel's global reads, context, device, thread), and
    launches; a miss returns False"""
    hits: int = NATIVE_AFTER
    every: int = NATIVE_AFTER
    """the launches through ``go`` between two asks for ``native`` (doubling, at most ``NATIVE_WAIT``)"""


_FORMS: dict = {}
"""(launch, split mode, signature key) -> :class:`DeviceForm` (a :class:`~gpucompiler.kernel.Launch` of a stream
given as None or a handle: its kernel, grid, block and stream, set when it was made)"""


def _device_form(launch: Launch, key: tuple, split: bool) -> DeviceForm | None:
    """The :class:`DeviceForm` of ``launch`` with arguments of signature ``key``, remembered for a launch
    without a chosen device on a stream given as None or a handle; None: arguments the signature does not type
    (the general path's)."""
    k = launch.kernel
    plain = launch.device is None and type(launch.stream) in (int, type(None))
    fkey = (launch, split, key) if plain else None
    form = _FORMS.get(fkey) if plain else None
    age = k.world_age
    if form is not None and form.age == age:
        return form
    found = signed.typed(key)
    if found is None:
        return None
    form = DeviceForm(age, found[0], found[1], _plan(k, found[0], age))
    if plain and len(_FORMS) < 4096:
        _FORMS[fkey] = form
    return form


def _span(a) -> tuple[int, int] | None:
    """The bytes an array covers, ``(start, end)``; None for scalars."""
    iface = getattr(a, "__cuda_array_interface__", None)
    if iface is None:
        iface = getattr(a, "__array_interface__", None)
    if iface is None or not isinstance(iface.get("data"), (tuple, list)):
        return None
    return _extent(iface["data"][0], np.dtype(iface["typestr"]).itemsize, iface["shape"], iface.get("strides"))


def _extent(start: int, itemsize: int, shape, strides) -> tuple[int, int]:
    """``(start, end)`` bytes of an array at ``start`` (strides None: C-contiguous)."""
    if strides is None:
        return start, start + itemsize * math.prod(shape)
    lo = start + sum(min(0, (n - 1) * s) for n, s in zip(shape, strides))
    hi = start + sum(max(0, (n - 1) * s) for n, s in zip(shape, strides)) + itemsize
    return lo, hi


def _names(k: Kernel) -> tuple[str, ...]:
    """The kernel's parameter names (for messages)."""
    return k.py_func.__code__.co_varnames


def _overlap(a, b) -> bool:
    if type(a) is np.ndarray and type(b) is np.ndarray:
        return bool(np.may_share_memory(a, b))
    return _spans_overlap(_span(a), _span(b))


_is = operator.is_


def _one_array_twice(args: tuple, arrays: tuple[int, ...]) -> bool:
    """Whether one array object is the argument of two of the parameters ``arrays``."""
    return len({id(args[j]) for j in arrays}) != len(arrays)


def _gradient_reads(plan: LaunchPlan, hand, split: bool) -> Iterable[int]:
    """The parameters whose values a launch's gradient may read: the kernel's reads for a generated gradient,
    every array for a hand-written one (``hand``) or a split launch's reverse sweep."""
    return plan.arrays if hand is not None or split else plan.reads


def _missed(*args) -> bool:
    """What a launch's fixed native entry (:attr:`Repeat.native`) returns where it did not launch."""
    return False


_DEFERRING = device_heap.deferring()
"""The context in which this thread's launches defer their heap checks (entered by a recording's first GPU launch)."""


def _same_dtype(a, b) -> bool:
    """Whether two dtypes are the same (the same object mostly: no comparison then)."""
    return a is b or a == b


def _spans_overlap(sa, sb) -> bool:
    return bool(sa and sb and sa[0] < sb[1] and sb[0] < sa[1] and sa[0] != sa[1] and sb[0] != sb[1])


class LaunchTape:
    """Records kernel launches and replays their gradient kernels in reverse (see the module docstring)."""

    def __init__(self, split: bool = False, graphs: bool = True):
        self.split = bool(split)
        self.records: list[LaunchRecord] = []
        self._shadows: dict[int, tuple[Any, Any]] = {}  # id(array) -> (array, shadow); the array kept alive
        self._dropped: dict[int, tuple[Any, Any]] = {}  # the shadows before reset(), as _shadows
        self._taken: set[int] = set()  # id() of the arrays recorded launches took (the records keep them alive)
        #: id() of the arrays whose values the gradients of the launches before may read (:func:`_gradient_reads`)
        self._read: set[int] = set()
        self._registrations = 0  # gradients.REGISTRATIONS when the recording began
        #: the :class:`Repeat` of each GPU launch of this recording and of the last one (None: not repeatable)
        self._repeats: list[Repeat | None] = []
        self._last: list[Repeat | None] = []
        self._same = True  # every launch of this recording so far repeated the last recording's at its place
        self._settled = 0  # the records whose float arrays have their shadows (a repeat's get them later: _settle)
        #: id() of the arrays whose shadows were handed out (gradient(), a hand-written gradient's arguments) since
        #: the last reset, and before it: only those may be held elsewhere
        self._escaped: set[int] = set()
        self._handed: set[int] = set()
        #: moved on by every launch that is not a repeat and every shadow or copy made anew: while it stays, a
        #: repeated launch's record takes the same objects as when its part of a graph key was read
        self._generation = 0
        self._copies: dict[tuple, Any] = {}  # the copies of this recording: snapshots, the final values
        #: (array, shadow) reused from the last recording and not zeroed yet: ``backward`` zeroes them first
        self._unzeroed: list[tuple[Any, Any]] = []
        #: a repeated backward on the GPU replays as one CUDA graph (:mod:`.graphs`); False: launch by launch
        self.graphs = bool(graphs)
        self._graph = GraphReplay()
        self._capturing = False  # the backward is being captured into a graph
        self._buffers: dict[tuple, Any] = {}  # the last recording's, reused by :meth:`_copy`
        self._spare: dict[tuple, list] = {}  # split mode: per-thread tape arrays reversed, for the next recording
        self._recording: contextvars.Token | None = None  # while recording: :func:`stop_recording`'s token
        self._deferring = False  # the recording's GPU launches defer their heap checks (device_heap.deferring)
        self._on_device = False  # a recorded launch went to a GPU (since the last reset)
        #: a launch of the recording ran out of device heap: its results and tapes are incomplete
        self._incomplete = False
        #: the native recorder of a recording repeating the last one (:mod:`.replay`), the one this recording
        #: runs (its launches not yet in ``records``: :meth:`_catch_up`), whether the last recording was one
        #: whole replay (``reset`` keeps the replay then), and whether each of its launches repeated one through
        #: its fixed entry (the next recording makes a replay)
        self._replay: Replay | None = None
        self._replaying: Replay | None = None
        self._replayed = False
        self._replayable = False
        self._native_runs = 0  # this recording's launches through fixed entries (replayed ones once caught up)

    # -- recording -------------------------------------------------------------
    def __enter__(self) -> LaunchTape:
        if self._recording is not None:
            raise LaunchTapeError("this tape is already recording")
        self._replayed = False
        if not self.records:
            self._registrations = REGISTRATIONS[0]  # (after reset(): launches at the last recording's places)
            replay = self._replay
            if replay is None and self._replayable:
                replay = self._replay = self._new_replay()
            self._replayable = False
            if replay is not None and current_recorder() is None:  # (else start_recording raises)
                words = replay.words
                words[W_CURSOR], words[W_COUNT] = 0, replay.count
                self._recording = set_recorder(replay.function)
                self._replaying = replay
                return self
        self._recording = start_recording(self._record)
        return self

    def _new_replay(self) -> Replay | None:
        """A native recorder for a recording of the last one's launches (:mod:`.replay`), where each has a fixed
        entry and a record of its own (None elsewhere, and while the recorder's code compiles)."""
        last, address = self._last, replay_code()
        if address is None or not last or not all(m is not None and m.native is not None and m.record is not None
                                                  and m.record.hand is None for m in last):
            return None
        return Replay(address, last, weak_recorder(self._record), GRADIENT_ATTRIBUTE)

    def _end_replay(self) -> bool:
        """At the end of a recording the native recorder ran: when it took every launch, append their records
        and repeats, and take the last recording's shadows whole (True: nothing left to settle); else
        :meth:`_catch_up`."""
        replay = self._replaying
        assert replay is not None
        if replay.words[W_CURSOR] != replay.count:
            self._replayed = self._catch_up()
            return False
        self._replaying = None  # (the recorder is no longer reachable: its words stay as they are)
        self.records += replay.records
        self._repeats += replay.repeats
        self._on_device = self._replayed = True
        if self._take_whole():
            self._settled = replay.count
            return True
        return False

    def _catch_up(self) -> bool:
        """Append the records and repeats of the launches the native recorder took, and send the recording's
        later launches to :meth:`_record`; whether it took every launch it replays."""
        replay, self._replaying = self._replaying, None
        assert replay is not None
        at = replay.stop()
        if at:
            self.records += replay.records[:at]
            self._repeats += replay.repeats[:at]
            self._native_runs += at
            self._on_device = True
        return at == replay.count

    def __exit__(self, *exc) -> None:
        token, self._recording = self._recording, None
        if token is not None:
            stop_recording(token)
        if self._replaying is not None and self._end_replay():
            return  # every launch replayed natively, the last recording's shadows taken
        deferring, self._deferring = self._deferring, False
        runs, self._native_runs = self._native_runs, 0
        self._replayable = 0 < runs == len(self.records)
        if deferring:  # (set by the launches that entered it: later launches of the thread are not the recording's)
            device_heap.PENDING.where = None
        try:
            if self._settled != len(self.records):
                self._settle()  # the shadows of the repeated launches' arrays
        finally:
            if deferring:  # the heap checks of the recording's GPU launches, read now (none noted: nothing to read)
                _DEFERRING.__exit__(None, None, None)
                if device_heap.PENDING.checks:
                    self._check_heap(recording=True, failed=exc[1] is not None)

    def _check_heap(self, recording: bool, failed: bool = False) -> None:
        """Read the heap flags of the launches made since the last check (one wait per stream; none without
        such a launch); a DeviceHeapError when a thread ran out, and then, for a ``recording``, the recorded
        launches are incomplete: ``backward`` refuses them, :meth:`reset` drops them. ``failed``: the
        recording ended with an exception, kept as the error's context."""
        try:
            cuda_runtime.check_heap()
        except DeviceHeapError as err:
            self._incomplete = self._incomplete or recording
            raise for_user(err, settings.debug_tracebacks() or failed)

    def _record(self, launch: Launch, args: tuple) -> None:
        """Record ``launch`` on ``args`` and launch it. One that repeats the :class:`Repeat` at its place in the
        last recording (the same launch and argument objects, no gradient registered since; the recording so far
        repeats the last one) and has a native entry (:attr:`Repeat.native`) appends the last recording's record
        when the entry launched it; the identity of its arguments, their signature and the world age are checked
        in Python only where the entry did not launch (:meth:`_repeated`)."""
        if self._replaying is not None:
            self._catch_up()
        try:
            if self._same:
                at, last = len(self.records), self._last
                m = last[at] if at < len(last) else None
                if m is not None and m.launch is launch \
                        and launch.kernel.__dict__.get(GRADIENT_ATTRIBUTE) is None:  # registered since: not a repeat
                    native, record = m.native, m.record
                    if native is not None and record is not None and record.hand is None and native(*args) is None:
                        # launched in native code, on the same argument objects (the entry compares them)
                        self._on_device = True  # (a kernel with a native entry has no heap check to defer)
                        self.records.append(record)  # the last recording's record again
                        self._repeats.append(m)
                        self._native_runs += 1
                        return
                    if len(m.args) == len(args) and all(map(_is, m.args, args)):
                        if not self._deferring:  # its heap check, if its kernel has one: read at the recording's end
                            _DEFERRING.__enter__()
                            self._deferring = self._on_device = True
                        if self._repeated(m, launch, args):
                            return
            self._settle()
            self._record_launch(launch, args)
            self._settled = len(self.records)
        except DeviceHeapError as exc:  # read where the host waited for the device (a launch's, a copy's)
            self._incomplete = True
            raise for_user(exc, settings.debug_tracebacks())
        except GPUCompilerError as exc:
            raise for_user(exc, settings.debug_tracebacks())

    def _record_launch(self, launch: Launch, args: tuple) -> None:
        k, where = launch.kernel, launch.stream
        hand = k.__dict__.get(GRADIENT_ATTRIBUTE)  # registered_gradient(k)
        split = self.split and hand is None
        sig = form = None
        if where != CPU:
            if isinstance(where, str):
                raise LaunchError(f"unknown device {where!r}; use {CPU!r} for the CPU grid emulation or a CUDA "
                                  "stream")
            if not self._deferring:  # its heap check, if its kernel has one: read at the end of the recording
                _DEFERRING.__enter__()
                self._deferring = self._on_device = True
            if launch.device is None and (sig := cuda_runtime.signature(args)) is not None:
                k.refresh()  # world age (below for the others): a rebound global gives a new form
                form = _FORMS.get((launch, split, sig[0])) if where is None or type(where) is int else None
                if form is None or form.age != k.world_age:
                    form = _device_form(launch, sig[0], split)
        if self._same:  # (not a repeat: the launches after it are not either)
            self._same = False
            for r in self.records:  # the arrays the repeats before it took
                self._taken.update(id(r.args[j]) for j in r.plan.arrays)
                self._read.update(id(r.args[j]) for j in _gradient_reads(r.plan, r.hand, r.split))
        self._generation += 1
        if form is not None and sig is not None:  # a GPU launch typed by its arguments' signature
            direct, plan, runs, named = False, form.plan, form.runs, sig[2]
            stream = cuda_runtime.stream_handle(where) if where is not None else 0 if named is None or named == 1 \
                else cuda_runtime.producer_handle(named)  # as _stream says
            if plan.pairs and sig[1] != form.clear:  # the spans from the signature's values
                found = signed.overlapping(sig[1], form.slots, plan.pairs)
                if found:
                    self._check_overlaps(k, args, found, signed.spans(sig[1], form.slots))
                else:
                    form.clear = sig[1]
            if runs is None:
                runs = form.runs = _runs(plan, launch, form.argtypes, False, split)
        else:
            sig, spans, stream = None, None, None
            if where == CPU:
                argtypes, direct = _host_arguments(k, args)
            else:
                (argtypes, spans, named), direct = _device_arguments(k, args), False
                stream = self._stream(launch, args, spans is not None, named)
            k.refresh()  # world age: a rebound global the kernel reads (a function it calls) gives a new plan
            plan = _plan(k, argtypes, k.world_age)
            if plan.pairs:
                self._check_overlaps(k, args, plan.pairs, spans)
            runs = _runs(plan, launch, argtypes, direct, split)
        if runs.whole is not None and _one_array_twice(args, plan.arrays):
            runs = runs.whole
        if direct or not plan.arrays:
            ops = NUMPY
        elif form is not None and type(args[plan.arrays[0]]) is form.ops[0]:
            ops = form.ops[1]
        else:
            ops = ops_of(args[plan.arrays[0]], "array argument")
            if form is not None:
                form.ops = (type(args[plan.arrays[0]]), ops)
        keep = self._kept(launch, args, plan, hand, direct) if plan.written else ()
        snapshots = self._snapshots(args, keep, ops, type(args[plan.arrays[0]]), stream) if keep else []
        self._taken.update([id(args[j]) for j in plan.arrays])
        self._read.update([id(args[j]) for j in _gradient_reads(plan, hand, split)])
        place = ("recorded launch", len(self.records) + 1)  # named by a heap error
        if stream is not None:  # on a GPU
            device_heap.PENDING.where = place
        shadows, fresh = self._shadows, []  # every float array's shadow now
        if runs.reverse is not None:
            first = type(args[plan.arrays[0]])
            for j, d in enumerate(plan.dup):
                if d and id(a := args[j]) not in shadows:
                    shadows[id(a)] = (a, self._new_shadow(a, ops if type(a) is first else ops_of(a)))
                    fresh.append(j)
        if runs.reverse is None or (hand is None and not split):
            record = LaunchRecord(launch, args, plan, snapshots, ops, None, runs.reverse, None, False, None, stream,
                                  runs.gradient)
        elif hand is not None:
            record = LaunchRecord(launch, args, plan, snapshots, ops, stream=stream)
            self._hand_written(record, hand)
        else:
            g, b = launch.grid, launch.block
            shape = (g[0] * g[1] * g[2] * b[0] * b[1] * b[2], plan.tapes.words(where == CPU))
            holders = self._tapes(ops, shape, args[plan.arrays[0]])
            with_shadows = self._with_shadows(args, plan.dup)
            record = LaunchRecord(launch, args, plan, snapshots, ops, holders, runs.reverse, (1, holders, *with_shadows),
                                  True, stream=stream)
            runs.forward((0, holders, *with_shadows))
            self.records.append(record)
            self._repeats.append(None)
            return
        runs.forward(args) if sig is None else runs.forward(args, sig)
        self.records.append(record)
        self._repeats.append(
            Repeat(launch, args, sig, form, stream, ops, keep, type(args[plan.arrays[0]] if plan.arrays else None),
                   place, tuple(fresh), None if keep else record, runs)
            if sig is not None and form is not None and stream is not None and hand is None and not split else None)

    def _repeated(self, m: Repeat, launch: Launch, args: tuple) -> bool:
        """Record ``launch``, found by :meth:`_record` to be ``m``'s (its launch, argument objects, no gradient
        registered since), when it also has its signature values and world age: its copies, its fresh shadows and
        its record (the last one's again when it copies nothing), then the launch; False: it is not a repeat."""
        sig = cuda_runtime.signature(args)
        if sig != m.sig or sig is None:
            return False
        k = launch.kernel
        k.refresh()  # world age: a rebound global gives a new form
        form = m.form
        if form.age != k.world_age:
            return False
        ops, runs, record = m.ops, m.runs, m.record
        assert runs is not None
        if m.keep:
            snapshots = self._snapshots(args, m.keep, ops, m.first, m.stream)
            record = LaunchRecord(launch, args, form.plan, snapshots, ops, None, runs.reverse, None, False, None,
                                  m.stream, runs.gradient)
        elif record is None or record.hand is not None:  # a gradient registered after it was recorded replaced it
            record = m.record = LaunchRecord(launch, args, form.plan, [], ops, None, runs.reverse, None, False, None,
                                             m.stream, runs.gradient)
        device_heap.PENDING.where = m.where  # named by a heap error
        go = m.go
        if go is not None:
            go(args, sig)
            m.hits -= 1
            if not m.hits and not m.keep:
                m.every = min(2 * m.every, NATIVE_WAIT)
                m.hits = m.every
                m.native = cuda_runtime.CUDA.native(go, args, _missed, None)
                if m.native is not None:
                    replay_code()  # (its first ask starts the native recorder's compile)
        else:
            runs.forward(args, sig)
            m.go = runs.forward.bound if type(runs.forward) is SignedLaunch else None
        self.records.append(record)
        self._repeats.append(m)
        return True

    def _kept(self, launch: Launch, args: tuple, plan: LaunchPlan, hand, direct: bool) -> tuple[int, ...]:
        """The parameters whose arrays are copied before the launch: those it may overwrite whose old values
        a gradient reads (those it reads too, or an earlier launch took, or all of them for a hand-written
        gradient; an array the kernel only stores into, that no earlier launch took, gets the same stores again
        from the gradient kernel; one it only adds into atomically is copied only where an earlier launch's
        gradient may read it: ``backward`` keeps its final value aside anyway), in order. Each written array's
        library is checked here."""
        keep: list[int] | tuple[int, ...]
        if hand is not None:
            keep = plan.written
        elif not plan.stored:
            keep = plan.copied
        else:
            taken, read, accumulated, keep = self._taken, self._read, plan.accumulated, list(plan.copied)
            for j in plan.stored:
                a = args[j]
                if id(a) in (read if j in accumulated else taken):
                    keep.append(j)
                    continue
                for i in plan.reads:
                    if args[i] is a:
                        keep.append(j)
                        break
        if not direct:  # each written array's library (that of the first array's type is ops): the copies are its own
            first = type(args[plan.arrays[0]])
            for j in plan.written:
                if type(args[j]) is not first:
                    ops_of(args[j], _names(launch.kernel)[j])
        return keep if type(keep) is tuple else tuple(sorted(keep))

    def _snapshots(self, args: tuple, keep: tuple[int, ...], ops: ArrayOps, first: type, stream: int | None) -> list:
        """Copies of the arrays of parameters ``keep`` (:meth:`_kept`), in the buffers of the last recording's
        launch at this place when they fit (``ops``: the library of the arrays of type ``first``)."""
        wait = stream is not None and not self._capturing and stream != ops.current_stream()  # as _waits
        if wait:
            cuda_runtime.synchronize()
        at, copy, snapshots = len(self.records), self._copy, []
        for j in keep:
            a = args[j]
            snapshots.append((j, copy((at, j), a, True, ops if type(a) is first else None)))
        if wait:
            cuda_runtime.synchronize()
        return snapshots

    def _copy(self, key: tuple, a, fill: bool = True, ops: ArrayOps | None = None):
        """A copy of ``a`` in the buffer ``key`` had in the last recording when it fits and nothing else holds
        it (the tape's own copies: the same memory each round, which a replayed graph names), else a new one
        (``fill`` False: a buffer kept is not filled here; ``ops``: ``a``'s library when the caller has it)."""
        if ops is None:
            ops = ops_of(a)
        old = self._buffers.pop(key, None)
        if old is not None and type(old) is type(a) and ops.views_hold_base and sys.getrefcount(old) == 2 \
                and old.shape == a.shape and old.strides == a.strides and _same_dtype(old.dtype, a.dtype):
            if fill:
                ops.copy_into(old, a)
            self._copies[key] = old
            return old
        del old
        self._copies[key] = copy = ops.copy(a)
        self._generation += 1
        return copy

    def _tapes(self, ops: ArrayOps, shape: tuple[int, int], like):
        """An array of one row of int64 words per thread (a reversed one again, or a new one: not zeroed,
        the augmented sweep writes each row's header)."""
        spare = self._spare.get((type(ops), shape))
        if spare:
            return spare.pop()
        try:
            return ops.int64_empty(shape, like)
        except MemoryError:
            raise LaunchTapeError(f"split mode: no memory for the tapes of {shape[0]} threads of {shape[1] * 8} "
                                  "bytes each", hint="launch fewer threads, or record this launch with "
                                  "LaunchTape() (recompute mode: no tapes)") from None

    @staticmethod
    def _stream(launch: Launch, args: tuple, read: bool, named) -> int:
        """The handle of the stream a GPU launch goes to: its own, else the first one the arrays' producers
        name (``named``, read with their types; ``read`` False: not read, asked of the arrays here), else
        the legacy default stream (as :class:`~gpucompiler.runtime.cuda.BoundLaunch` chooses)."""
        if launch.stream is not None:
            return cuda_runtime.stream_handle(launch.stream)
        if not read:
            streams = cuda_runtime.producer_streams(args)
            return streams[0] if streams else 0
        return cuda_runtime.producer_handle(named) if named is not None else 0

    def _sync(self, stream: int | None, ops: ArrayOps) -> None:
        """Copies run on the array library's current stream, a launch on ``stream``: on a GPU, wait between
        them unless they are the same stream (then they are in order), or while a graph is captured (then
        every copy and launch goes to the capturing stream)."""
        if self._waits(stream, ops):
            cuda_runtime.synchronize()

    def _waits(self, stream: int | None, ops: ArrayOps) -> bool:
        """Whether :meth:`_sync` waits (the library's current stream asked once)."""
        return stream is not None and not self._capturing and stream != ops.current_stream()

    @staticmethod
    def _check_overlaps(k: Kernel, args, pairs, spans: list | None) -> None:
        """Two different array objects over the same memory would get two shadows: a wrong gradient.
        ``spans``: each argument's bytes (device arrays), None: found here."""
        for i, j in pairs:
            a, b = args[i], args[j]
            if a is not b and (_overlap(a, b) if spans is None else _spans_overlap(spans[i], spans[j])):
                names = _names(k)
                raise LaunchTapeError(f"{k.py_func.__qualname__}: the arrays {names[i]!r} and {names[j]!r} "
                                      "overlap in memory: a recorded launch takes each array once (or the "
                                      "same object twice), not two views of one buffer")

    # -- shadows ---------------------------------------------------------------
    def gradient(self, a):
        """The shadow of array ``a``: the gradient accumulated into it (zeros until ``backward``)."""
        if self._recording is not None:
            if self._replaying is not None:
                self._catch_up()
            self._settle()
        hit = self._shadows.get(id(a))
        if hit is None:
            self._no_shadow(a, "gradient() of")
        self._escaped.add(id(a))
        if self._unzeroed:
            self._zero_reused()
        return hit[1]

    def knows(self, a) -> bool:
        """Whether a recorded launch took ``a`` (as a float array: it has a shadow)."""
        if self._recording is not None:
            if self._replaying is not None:
                self._catch_up()
            self._settle()
        return id(a) in self._shadows

    def _shadow(self, a):
        hit = self._shadows.get(id(a))
        if hit is None:
            hit = self._shadows[id(a)] = (a, self._new_shadow(a))
        return hit[1]

    def _settle(self) -> None:
        """Give the float arrays of the records that repeats appended their shadows (a repeat makes none): when
        every launch of the recording repeated the last one's, the last recording's shadows all at once, when
        none of those handed out is held elsewhere (:meth:`_take_whole`); else each record's fresh ones
        (:attr:`Repeat.fresh`)."""
        at, records = self._settled, self.records
        if at == len(records):
            return
        self._settled = len(records)
        if at == 0 and self._same and len(records) == len(self._last) and self._take_whole():
            return
        for i in range(at, len(records)):
            m = self._repeats[i]
            assert m is not None
            if m.fresh:
                self._fresh_shadows(records[i].args, m.fresh, m.ops, m.first)

    def _take_whole(self) -> bool:
        """Take the last recording's shadows, all of them, for a recording of the same launches (False: one
        that was handed out is held elsewhere or was reshaped, or its library may hold it through a view;
        nothing taken). A shadow never handed out is held by the tape alone."""
        dropped = self._dropped
        if self._shadows or not dropped:
            return False
        for key in self._handed:
            pair = dropped.get(key)
            if pair is None:
                continue
            a, shadow = pair  # 3: the pair's reference, this name's and getrefcount's argument
            if sys.getrefcount(shadow) != 3 or not ops_of(a).views_hold_base or shadow.shape != a.shape \
                    or shadow.strides != a.strides or (shadow.dtype is not a.dtype and shadow.dtype != a.dtype):
                return False
        self._shadows, self._dropped = dropped, {}
        self._unzeroed.extend(dropped.values())  # zeroed by backward (on the GPU, in its graph)
        return True

    def _fresh_shadows(self, args: tuple, fresh: tuple[int, ...], ops: ArrayOps, first: type) -> None:
        """The shadows of the arrays of parameters ``fresh`` (``ops``: the library of the arrays of type
        ``first``), as :meth:`_new_shadow` makes them; the last recording's (array, shadow) pair is taken again
        as it is when nothing else holds the shadow."""
        shadows, dropped, reuse = self._shadows, self._dropped, ops.views_hold_base and not self.split
        for j in fresh:
            a = args[j]
            key = id(a)
            if key in shadows:
                continue
            pair = dropped.pop(key, None)
            # 2: the pair's reference and getrefcount's argument
            if pair is not None and reuse and pair[0] is a and type(a) is first and sys.getrefcount(pair[1]) == 2:
                shadow = pair[1]
                if shadow.shape == a.shape and shadow.strides == a.strides and _same_dtype(shadow.dtype, a.dtype):
                    self._unzeroed.append(pair)  # zeroed by backward (on the GPU, in its graph)
                    shadows[key] = pair
                    continue
                del shadow
            if pair is not None:  # _new_shadow decides, as for any array
                dropped[key] = pair
                del pair
            shadows[key] = (a, self._new_shadow(a, ops if type(a) is first else None))

    def _new_shadow(self, a, ops: ArrayOps | None = None):
        """A zero shadow of ``a``: the one it had before :meth:`reset` when nothing else holds that any more
        (zeroed in place: no allocation), else a new one (``ops``: ``a``'s library when the caller has it)."""
        if ops is None:
            ops = ops_of(a)
        old = self._dropped.pop(id(a), None)
        if old is not None and old[0] is a and ops.views_hold_base:
            shadow = old[1]
            del old
            # 2: this frame's name and getrefcount's argument; a gradient or a view of it the caller kept adds one
            if sys.getrefcount(shadow) == 2 and shadow.shape == a.shape and shadow.strides == a.strides \
                    and _same_dtype(shadow.dtype, a.dtype):
                if self.split:  # the augmented sweeps take the shadows
                    ops.zero(shadow)
                else:  # only gradient kernels read it: zeroed by backward (on the GPU, in its graph)
                    self._unzeroed.append((a, shadow))
                return shadow
        self._generation += 1
        return ops.zeros_like(a)

    def _zero_reused(self) -> None:
        """Zero the shadows reused from the last recording that are not zeroed yet."""
        for a, shadow in self._unzeroed:
            ops_of(a).zero(shadow)
        self._unzeroed = []

    def zero(self) -> None:
        """Zero every shadow (before another ``backward`` of the same recording)."""
        self._unzeroed = []
        for a, s in self._shadows.values():
            ops_of(a).zero(s)

    # -- replay ----------------------------------------------------------------
    def backward(self, loss=None, grads=()) -> None:
        """Add the seeds into the shadows, then launch the gradient of every recorded launch, last first.

        ``loss``: a one-element array, seeded with 1; ``grads``: ``(array, its adjoint)`` pairs (NumPy
        arrays are not hashable: a dict only for array types that are, such as PyTorch tensors)."""
        try:
            pairs = list(grads.items()) if isinstance(grads, Mapping) else [tuple(p) for p in grads]
            self._backward(pairs, loss, scratch=False)
        except GPUCompilerError as exc:
            raise for_user(exc, settings.debug_tracebacks())

    def _backward(self, grads: list, loss, scratch: bool) -> None:
        if self._recording is not None:
            raise LaunchTapeError("backward() inside the tape's `with` block: leave it first")
        if REGISTRATIONS[0] != self._registrations:
            self._check_registered_since()
        if self._incomplete:
            raise LaunchTapeError("a launch of this recording ran out of device heap (the DeviceHeapError at the "
                                  "end of the recording): its results and tapes are incomplete, so it has no "
                                  "gradient", hint="reset() the tape and record again with more device heap "
                                  "(GPUC_DEVICE_HEAP) or fewer threads a launch")
        if self.split and any(r.split and r.holders is None for r in self.records):
            raise LaunchTapeError("this split tape was already reversed (a split tape is consumed by its "
                                  "backward): record the launches again")
        shadows = self._scratch() if scratch else None
        seeds = []  # (array, its shadow, the adjoint added into it)
        for a, g in grads:
            shadow = self._known_shadow(a)
            if tuple(getattr(g, "shape", ())) not in ((), tuple(a.shape)):
                raise LaunchTapeError(f"backward: the adjoint of an array of {_shape_text(a)} has shape "
                                      f"{tuple(g.shape)}", hint="give each array's adjoint its shape (or a scalar)")
            seeds.append((a, shadow, g))
        if loss is not None:
            shadow = self._known_shadow(loss)
            if _size(loss) != 1:
                raise LaunchTapeError(f"backward: loss= takes a one-element array, got one of {_shape_text(loss)}",
                                      hint="seed a larger result with backward(grads=[(y, dy)])")
            seeds.append((loss, shadow, 1.0))
        finals, unzeroed = self._final_values(), self._unzeroed
        if not self._on_device:  # the emulation's launches: no heap flags
            self._run_backward(unzeroed, seeds, finals, shadows)
            self._unzeroed = []
            return
        with _DEFERRING:  # the gradient launches' heap checks: read once, after the last
            key = graph_key(self.records, self._gradient_args, unzeroed, seeds, finals, self._repeats,
                            self._generation) \
                if self.graphs and shadows is None else None
            if key is None or not self._graph.run(key, self.records[0].ops.module,
                                                  self._captured(unzeroed, seeds, finals)):
                self._run_backward(unzeroed, seeds, finals, shadows)
            self._unzeroed = []
        if device_heap.PENDING.checks:  # (none noted: nothing to read)
            self._check_heap(recording=False)

    def _check_registered_since(self) -> None:
        """A gradient registered since the recording began replaces its kernel's generated one, and may read any
        array of the launch: refused, before anything runs, where a later launch added into one of those that
        the generated gradient does not read, which the tape did not keep (:meth:`_kept`)."""
        records = self.records
        for i, r in enumerate(records):
            if registered_gradient(r.launch.kernel) is r.hand:
                continue
            ids = {id(x) for x in r.args}
            for later in records[i + 1:]:
                kept = {j for j, _ in later.snapshots}
                for j in later.plan.accumulated:
                    if j not in kept and id(later.args[j]) in ids:
                        names = _names(later.launch.kernel)
                        raise LaunchTapeError(
                            f"backward: a gradient of {r.launch.kernel.py_func.__qualname__} was registered after "
                            f"its launch was recorded, and a later launch of "
                            f"{later.launch.kernel.py_func.__qualname__} added into {names[j]!r} of it, whose "
                            "value before that the tape did not keep (the generated gradient does not read it)",
                            hint="register gradients before recording, or reset() the tape and record again")

    def _captured(self, unzeroed: list, seeds: list, finals: list) -> Callable[[int], None]:
        """The backward's work launched on stream ``handle`` (the one a graph is captured from)."""
        def work(handle: int) -> None:
            self._capturing = True
            try:
                self._run_backward(unzeroed, seeds, finals, None, handle)
            finally:
                self._capturing = False
        return work

    def _run_backward(self, unzeroed: list, seeds: list, finals: list, shadows: dict | None,
                      stream: int | None = None) -> None:
        """Zero the reused shadows not zeroed yet, add the seeds, keep the final values, launch the gradients
        of the recorded launches, last first (``shadows``: scratch ones; ``stream``: every launch on that
        stream, not the recorded one's), then put the final values back."""
        for a, shadow in unzeroed:
            ops_of(a).zero(shadow)
        for a, shadow, g in seeds:
            ops_of(a).add_into(shadow, g)
        for a, copy, r in finals:
            self._sync(r.stream, r.ops)
            ops_of(a).assign(copy, a)
        reverse, restore, pending = self._reverse, self._restore, device_heap.PENDING
        try:
            for i in range(len(self.records) - 1, -1, -1):  # before each: the memory as the launch left it
                record = self.records[i]
                pending.where = ("gradient of recorded launch", i + 1)
                snapshots = record.snapshots
                if snapshots and not record.split:  # the gradient kernel reads the memory the launch read
                    restore(record)
                if record.reverse is not None:
                    hand = registered_gradient(record.launch.kernel)
                    if hand is not record.hand:  # registered after the launch was recorded: it replaces the other
                        self._hand_written(record, hand)
                    args = self._gradient_args(record) if shadows is None else self._scratch_args(record, shadows)
                    reverse(record, args, stream)
                if snapshots:
                    restore(record)  # the memory as the launch found it: as the launch before left it
        finally:
            pending.where = None  # (later launches of the thread are not the tape's)
        for a, value, _ in finals:
            ops_of(a).assign(a, value)

    def _gradient_args(self, record: LaunchRecord) -> tuple:
        """The arguments of ``record``'s gradient (see :attr:`LaunchRecord.reverse_args`)."""
        args = record.reverse_args
        return tuple(self._with_shadows(record.args, record.plan.dup)) if args is None else args

    def _with_shadows(self, args: tuple, dup: tuple[bool, ...]) -> list:
        """``args``, each float array followed by its shadow."""
        shadows, out = self._shadows, []
        for a, d in zip(args, dup):
            out.append(a)
            if d:
                out.append(shadows[id(a)][1])
        return out

    def _known_shadow(self, a):
        if id(a) not in self._shadows:
            self._no_shadow(a, "backward: a seed for")
        return self._shadows[id(a)][1]

    def _no_shadow(self, a, what: str) -> NoReturn:
        """The error for an array without a shadow: one a launch took that is not a float array, or another."""
        if any(x is a for r in self.records for x in r.args):
            raise LaunchTapeError(f"{what} a {getattr(a, 'dtype', type(a).__name__)} array, which has no shadow: "
                                  "launch tapes differentiate float32 and float64 arrays",
                                  hint="other arrays of a launch are constants of its gradient kernel")
        raise LaunchTapeError(f"{what} a {type(a).__name__} that no recorded launch took "
                              "(pass the same array object the kernels were launched on)")

    def _final_values(self) -> list:
        """``(array, buffer, the first record that snapshots or accumulates it)`` for the arrays the replay
        changes: those with snapshots and those a launch adds into atomically (its gradient kernel adds the
        same values again); the backward copies each into its buffer first and back at its end. (Another
        array is written by one launch, which only stores into it: its gradient kernel stores the same values.)"""
        seen: dict[int, Any] = {}
        for r in self.records:
            accumulated = r.plan.accumulated
            if not r.snapshots and not accumulated:
                continue
            first = type(r.args[r.plan.arrays[0]])  # the type of the arrays of r.ops
            for j in (*(j for j, _ in r.snapshots), *accumulated):
                a = r.args[j]
                if id(a) not in seen:
                    seen[id(a)] = (a, self._copy(("final", id(a)), a, False, r.ops if type(a) is first else None), r)
        return list(seen.values())

    def _restore(self, record: LaunchRecord) -> None:
        self._sync(record.stream, record.ops)
        for j, value in record.snapshots:
            ops_of(record.args[j]).assign(record.args[j], value)
        self._sync(record.stream, record.ops)

    def _scratch(self) -> dict[int, Any]:
        return {key: ops_of(a).zeros_like(a) for key, (a, _) in self._shadows.items()}

    @staticmethod
    def _scratch_args(record: LaunchRecord, scratch: dict) -> tuple:
        """The gradient's arguments with scratch shadows (:meth:`reset` of a split tape not reversed)."""
        args, dup = record.args, record.plan.dup
        if not record.split:  # a hand-written gradient: the launch's arguments, then one adjoint each
            return args + tuple(scratch[id(a)] if d else a for a, d in zip(args, dup))
        out = [1, record.holders]
        for a, d in zip(args, dup):
            out += [a, scratch[id(a)]] if d else [a]
        return tuple(out)

    def _hand_written(self, record: LaunchRecord, hand) -> None:
        """Reverse ``record`` by the hand-written gradient ``hand``: the launch's arguments, then one adjoint
        each (a split launch's tapes are then not reversed: they stay on the heap)."""
        args, dup = record.args, record.plan.dup
        adjoints = tuple(self._shadow(a) if d else a for a, d in zip(args, dup))
        self._escaped.update(id(a) for a, d in zip(args, dup) if d)
        record.hand, record.split, record.gradient = hand, False, hand
        self._replay = None  # (its records had none)
        record.reverse, record.reverse_args = _launcher(hand, record.launch, None), args + adjoints

    def _reverse(self, record: LaunchRecord, args: tuple, stream: int | None = None) -> None:
        """Launch the gradient of ``record`` (built when it was recorded) on ``args`` (on ``stream`` when one is
        given); a split launch's reverse sweep frees its tapes, and its rows go to the next recording."""
        run = record.reverse
        assert run is not None
        if stream is not None and record.gradient is not None:
            launch = record.launch
            record.gradient[launch.grid, launch.block, stream].run(*args)
            return
        if not record.split:
            run(args)
            return
        holders, record.holders = record.holders, None
        if not record.plan.tapes.measured(holders, record.on_cpu):
            self._sync(record.stream, record.ops)  # the headers as the augmented launch left them
            record.plan.tapes.measure(holders, record.on_cpu)
        run(args)
        record.reverse_args = ()  # the rows are the next recording's
        self._spare.setdefault((type(record.ops), holders.shape), []).append(holders)

    def reset(self) -> None:
        """Forget the recording and the shadows; in split mode first free the tapes of launches not yet
        reversed (their reverse sweeps run into scratch shadows). The next recording zeroes and reuses a
        shadow nothing else holds any more (NumPy and CuPy arrays: a view of a gradient holds it too), and
        recognises the GPU launches that repeat this recording's (:class:`Repeat`: their arguments are kept
        until the next reset)."""
        if self._incomplete:  # tapes a launch left incomplete cannot be reversed: they stay on the heap
            for r in self.records:
                r.holders = None
            self._incomplete = False
        elif self.split and any(r.holders is not None for r in self.records):
            self._backward([], None, scratch=True)
        self.records.clear()
        if not self._replayed:  # the replay is of the recording that becomes the last one only when it replayed it
            self._replay = None
        self._replayed = False
        self._last, self._repeats, self._same = self._repeats, [], True
        self._buffers, self._copies = self._copies, {}
        self._unzeroed = []
        self._on_device = False
        self._dropped, self._shadows = self._shadows, {}  # reused by the next recording when nobody holds them
        self._taken.clear()
        self._read.clear()
        self._settled = 0
        self._handed, self._escaped = self._escaped, set()

    def __del__(self) -> None:
        unfreed = sum(1 for r in getattr(self, "records", ()) if r.holders is not None)
        if unfreed:
            warnings.warn(f"a split LaunchTape dropped with the per-thread tapes of {unfreed} launch(es) never "
                          "reversed: they stay on the heap; call backward() or reset() before dropping it",
                          ResourceWarning, stacklevel=2)

    def __repr__(self) -> str:
        return f"<LaunchTape{' (split)' if self.split else ''} of {len(self.records)} launch(es)>"


__all__ = ["DeviceForm", "LaunchTape", "LaunchTapeError", "LaunchPlan", "LaunchRecord", "NATIVE_AFTER", "NATIVE_WAIT",
           "Repeat", "Runs", "TapeSizes"]
