"""The words a native launch entry reads and the kinds of arguments it takes, laid out once for the code
generator that emits it (:mod:`.launchentry`) and the runtime that fills them
(:mod:`gpucompiler.runtime.launch_entry`). This module needs no llvmlite: the CUDA runtime imports it, and
loads the code generator only when it makes its first entry.
"""

from __future__ import annotations

import enum

#: the items of the entry's ``self`` tuple it reads: the Python launch, the words, the driver-error handler, the
#: launch object (handed to an active launch recorder; None in a fixed entry)
SELF_FALLBACK, SELF_WORDS, SELF_ERROR, SELF_LAUNCH = range(4)
#: the words (see :mod:`.launchentry`): validity, busy flag, owner thread, ``cuLaunchKernel``, the
#: function handle, the given stream (a fixed entry's: the expected one), the ``void*[]`` of parameters, the
#: parameter buffer, the recorder and device context variables, the guard words, CuPy's ``ndarray`` type, the
#: current-stream callable, the attribute names ``dtype``, ``shape``, ``strides``, ``data``, ``ptr`` (``str``
#: objects), the grid, block and shared bytes; then :data:`ARG_WORDS` per argument from ``W_ARGS``
(W_VALID, W_BUSY, W_THREAD, W_LAUNCH, W_FUNCTION, W_STREAM, W_PARAMS, W_BUFFER, W_RECORDER, W_DEVICE, W_GUARD,
 W_NDARRAY, W_CURRENT, W_DTYPE, W_SHAPE, W_STRIDES, W_DATA, W_PTR) = range(18)
W_DIMS = 18
W_ARGS = W_DIMS + 7
#: words per argument: a NumPy scalar's type, or an array's expected ``dtype``, its item size and whether the
#: signature says the array is contiguous (1) or not (0); then, in a fixed entry, the argument object itself
#: (its address: the entry takes that object only)
ARG_WORDS = 4
#: the word of an argument's object (from its first word)
ARG_OBJECT = 3


class Kind(enum.Enum):
    """How an argument is read: its exact type, and what its value is in the parameter buffer."""

    FLOAT = "float"          # a Python float: a double
    INT = "int"              # a Python int: an int64
    BOOL = "bool"            # True or False: one byte
    NP_FLOAT64 = "np.float64"   # NumPy scalars: their obval
    NP_FLOAT32 = "np.float32"
    NP_INT64 = "np.int64"
    NP_INT32 = "np.int32"
    NP_BOOL = "np.bool_"
    ARRAY = "array"          # a CuPy ndarray: data.ptr, its shape and strides written once


class StreamMode(enum.Enum):
    """Where the launch's stream comes from."""

    GIVEN = 0      # W_STREAM
    PTR_CALL = 1   # W_CURRENT() is the current stream's handle (CuPy's get_current_stream_ptr)
    OBJECT = 2     # W_CURRENT().ptr is (CuPy's get_current_stream)


#: an entry's arguments, each ``(kind, ndim)`` (ndim 0 for scalars), its stream, and whether it is *fixed*: a
#: launch tape's entry for a repeated launch, which launches only on the parameter values and stream its buffer
#: and ``W_STREAM`` hold (compared, not written) and leaves the launch recorder to its caller, the recorder
Plan = tuple[tuple[tuple[Kind, int], ...], StreamMode, bool]


def param_sizes(plan: Plan) -> list[int]:
    """The bytes of each argument's parameter (scalars take 8, as the runtime's packer lays them out)."""
    return [8 * (1 + 2 * ndim) if kind is Kind.ARRAY else 8 for kind, ndim in plan[0]]


__all__ = ["ARG_OBJECT", "ARG_WORDS", "SELF_ERROR", "SELF_FALLBACK", "SELF_LAUNCH", "SELF_WORDS", "W_ARGS",
           "W_BUFFER", "W_BUSY", "W_CURRENT", "W_DATA", "W_DEVICE", "W_DIMS", "W_DTYPE", "W_FUNCTION", "W_GUARD", "W_LAUNCH", "W_NDARRAY",
           "W_PARAMS", "W_PTR", "W_RECORDER", "W_SHAPE", "W_STREAM", "W_STRIDES", "W_THREAD", "W_VALID", "Kind", "Plan",
           "StreamMode", "param_sizes"]
