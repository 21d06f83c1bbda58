"""Typed errors of the compiler.

Every error a user can meet derives from :class:`GPUCompilerError`. Each says
*where* (source line, function, stage, plugin) and *what to do*; none is a bare
``assert``. Later rooms (frontend, interpreter, cache, service) add their own
subclasses here so that ``except GPUCompilerError`` catches them all.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable


class ErrorModel(enum.Enum):
    """What math errors do in compiled code (Numba's ``error_model``).

    ``PYTHON``: as in CPython, ``math.sqrt(-1.0)`` raises ValueError,
    ``math.exp(1000.0)`` OverflowError, ``0.0 ** -1.0`` ZeroDivisionError.
    ``NUMPY``: IEEE results (nan, inf), no checks. Part of the job key.
    """

    PYTHON = "python"
    NUMPY = "numpy"


class GPUCompilerError(Exception):
    """Base class of every error raised by gpucompiler."""


def for_user(exc: BaseException, debug: bool = False) -> BaseException:
    """``exc`` to raise again at the API boundary: without the compiler's internal frames and causes
    (the user's frame on top), unless ``debug`` (``GPUC_DEBUG_TRACEBACKS``) keeps them."""
    if debug:
        return exc
    exc.__cause__, exc.__suppress_context__ = None, True
    return exc.with_traceback(None)


class ConfigError(GPUCompilerError, ValueError):
    """A job or configuration is malformed."""


def error_model_option(value) -> ErrorModel:
    """``value`` checked as an :class:`ErrorModel` (the option of ``@jit`` and ``@kernel``); Numba's
    spellings ``"python"`` and ``"numpy"`` are accepted."""
    if isinstance(value, str) and value in ("python", "numpy"):
        return ErrorModel(value)
    if not isinstance(value, ErrorModel):
        raise ConfigError(f"error_model must be an ErrorModel (ErrorModel.PYTHON or ErrorModel.NUMPY) or "
                          f"'python' or 'numpy', got {value!r}")
    return value


class UnknownNameError(ConfigError, LookupError):
    """A name (target, plugin, stage, ...) is not known; lists the known ones."""

    kind = "name"

    def __init__(self, name: str, known: Iterable[str], hint: str = ""):
        self.name = name
        self.known = sorted(known)
        msg = f"unknown {self.kind} {name!r}; known: {', '.join(self.known) or '(none)'}"
        if hint:
            msg += f". {hint}"
        super().__init__(msg)


class UnknownTargetError(UnknownNameError):
    kind = "target"


class UnknownPluginError(UnknownNameError):
    kind = "plugin"


class UnknownStageError(UnknownNameError):
    kind = "stage"


class IRParseError(GPUCompilerError):
    """LLVM IR text that does not parse or verify.

    ``line`` is the 1-based line of the offending text when known, ``column``
    the 1-based column of the offending token when known, and
    ``llvm_message`` is LLVM's (or the model parser's) own diagnostic.
    """

    def __init__(self, message: str, line: int | None = None, source_line: str | None = None,
                 column: int | None = None):
        self.llvm_message = message
        self.line = line
        self.column = column
        self.source_line = source_line
        where = f"line {line}{f':{column}' if column is not None else ''}: " if line is not None else ""
        text = f"{where}{message}"
        if source_line is not None:
            text += f"\n    {source_line.strip()}"
        super().__init__(text)


class UnsupportedIRError(IRParseError):
    """IR that is valid LLVM but that the Python model does not understand.

    Raised instead of dropping text: the message names the construct.
    """


class IRBuildError(GPUCompilerError, TypeError):
    """An instruction built through the IR model's ``Builder`` whose operands have the wrong number or
    types (LLVM would reject the module a stage later, or, through an opaque pointer, run it wrongly)."""


class PluginError(GPUCompilerError):
    """A plugin hook failed; names the plugin, the hook (``stage``: a stage, ``call handler``...)
    and the callback, and, for interpreter hooks, the user's ``file:line`` (``loc``)."""

    def __init__(self, plugin: str, stage: str, callback: str, cause: BaseException, loc=None,
                 function: str = "", at: tuple[str, int] | None = None):
        self.plugin = plugin
        self.stage = stage
        self.callback = callback
        self.cause = cause
        self.loc, self.function = loc, function
        self.at = at
        """``(file, line)`` in the plugin's own code where it failed (None when unknown)"""
        where = f"{loc[0]}:{loc[1]}: " if loc else ""
        super().__init__(
            f"{where}plugin {plugin!r} failed in {_hook_words(stage)} (callback {callback}"
            f"{f' on a call in {function}' if function else ''}{f', at {at[0]}:{at[1]}' if at else ''}): "
            f"{type(cause).__name__}: {cause}"
        )

    def located(self, loc, function: str = "") -> PluginError:
        """This error at the user's source location ``loc`` (``(file, line, col)``)."""
        return PluginError(self.plugin, self.stage, self.callback, self.cause, loc, function, self.at)


def _hook_words(stage: str) -> str:
    return stage if stage in ("call handler", "lowering") else f"stage {stage!r}"


class ToolchainError(GPUCompilerError):
    """An external tool or library (ptxas, libdevice, CUDA driver) is missing or failed."""


class ToolNotFoundError(ToolchainError, FileNotFoundError):
    """An external tool or library was not found; the message says where we looked."""


class CompileError(GPUCompilerError):
    """A stage of the pipeline failed for a reason that is not a plugin's fault."""


class ErrorKind(str, enum.Enum):
    """What validation (and the kernel checks) found; a ``str`` so that it prints and
    serialises as its name."""

    UNKNOWN_FUNCTION = "UNKNOWN_FUNCTION"
    """a call to a function that is neither defined nor provided by the target"""
    RECURSION = "RECURSION"
    """a call graph cycle on a target without recursion"""
    DYNAMIC_ALLOCATION = "DYNAMIC_ALLOCATION"
    """heap allocation where the target has none"""
    POINTER_CONSTANT = "POINTER_CONSTANT"
    """a runtime address baked into the IR (not cacheable, not portable)"""
    PROCESS_SYMBOL = "PROCESS_SYMBOL"
    """a reference to a symbol of this process (not cacheable)"""
    SCALABLE_VECTOR = "SCALABLE_VECTOR"
    """a scalable vector type, which LLVM aborts on for these targets"""
    RETURN_VALUE = "RETURN_VALUE"
    """a kernel that returns a value"""

    def __str__(self) -> str:
        return self.value


class InvalidIRError(CompileError):
    """Validation found IR the target cannot run.

    ``errors`` holds ``(kind, message)`` pairs, e.g. ``(ErrorKind.UNKNOWN_FUNCTION,
    "call to undefined @foo in @kernel")``; all of them are collected before
    raising once.
    """

    def __init__(self, errors: list[tuple[str, str]], job_name: str = ""):
        self.errors = list(errors)
        head = f"invalid IR for {job_name}" if job_name else "invalid IR"
        lines = [f"  [{kind}] {msg}" for kind, msg in self.errors]
        super().__init__(head + f" ({len(self.errors)} error(s)):\n" + "\n".join(lines))


class SourceError(CompileError):
    """An error located in Python source; the message starts with ``file:line:``.

    ``loc`` is ``(filename, line, col)`` or None; ``function`` the function name.
    """

    def __init__(self, message: str, loc=None, function: str = "", hint: str = ""):
        self.message = message
        """the message without location, function and hint"""
        self.loc = loc
        self.filename, self.line = (loc[0], loc[1]) if loc else (None, None)
        self.function = function
        self.hint = hint
        where = f"{loc[0]}:{loc[1]}: " if loc else ""
        text = where + message + (f" (in {function})" if function else "")
        if hint:
            text += f"\n  hint: {hint}"
        super().__init__(text)


class UnsupportedError(SourceError):
    """A Python construct the compiler does not support; names the construct."""

    def __init__(self, construct: str, loc=None, function: str = "", hint: str = ""):
        self.construct = construct
        super().__init__(f"unsupported construct: {construct}", loc, function, hint)


class TypeInferenceError(SourceError, TypeError):
    """Types that do not fit together; ``types`` holds the types involved."""

    def __init__(self, message: str, types=(), loc=None, function: str = "", hint: str = ""):
        self.types = tuple(types)
        super().__init__(message, loc, function, hint)


class TargetUnsupportedError(TypeInferenceError):
    """Something the compilation target cannot do (a math function without a lowering there...);
    the message names the target, the location the user's line."""


class ArgumentTypeError(TypeInferenceError):
    """A call whose argument cannot be compiled; ``parameter`` names it."""

    def __init__(self, parameter: str, value_type, loc=None, function: str = "", hint: str = ""):
        self.parameter = parameter
        super().__init__(f"parameter {parameter!r} has a type that cannot be compiled: {value_type}",
                         (value_type,), loc, function, hint)


PLUGIN_ATTRIBUTE = "__gpuc_plugin__"
"""Set on a function or class to the name of the plugin that compiles calls of it (``autodiff``: ``"enzyme"``)."""


class PluginRequiredError(TypeInferenceError):
    """Compiled code calls an object a plugin owns (its ``__gpuc_plugin__``) and the job does not enable
    that plugin. ``@jit`` and kernels enable it and compile again; elsewhere the message says which."""

    def __init__(self, plugin: str, callee, loc=None, function: str = ""):
        self.plugin, self.callee = plugin, callee
        name = getattr(callee, "__qualname__", repr(callee))
        super().__init__(f"{name} belongs to the plugin {plugin!r}, which this job does not enable", (), loc,
                         function, f"enable it: plugins=({plugin!r},)")


class ReadOnlyArrayError(TypeInferenceError, ValueError):
    """Compiled code writes an array that is read-only (NumPy's ``flags.writeable`` is off)."""


class AxisError(TypeInferenceError, ValueError, IndexError):
    """An ``axis=`` outside the array's dimensions, found when compiling (NumPy's ``AxisError`` is a
    ValueError and an IndexError too)."""


class ArgumentBindingError(SourceError, TypeError):
    """A call whose arguments do not bind to the function's parameters (too many, missing, unknown keyword)."""


class RuleConflictError(ConfigError):
    """Two enabled rule sets (plugins) claim the same call."""

    def __init__(self, function: str, claimants):
        self.claimants = tuple(claimants)
        super().__init__(f"{function} is claimed by several plugins: {', '.join(self.claimants)}; "
                         "enable only one of them for this job")


# -- cache and compile service -------------------------------------------------

class CacheError(GPUCompilerError):
    """The compile cache cannot be used as configured (bad URL, bad size, missing client library)."""


class CacheCorruptionError(CacheError):
    """A cache entry failed its checks (checksum, length, key); ``reason`` says which."""

    def __init__(self, where: str, reason: str):
        self.where = where
        self.reason = reason
        super().__init__(f"corrupt cache entry {where}: {reason}")


class CacheForgeryError(CacheCorruptionError):
    """An entry from a shared tier without a valid MAC under this deployment's secret (refused)."""

    def __init__(self, where: str, reason: str):
        super().__init__(where, reason)
        self.args = (f"refused cache entry {where}: {reason}",)

    def __str__(self) -> str:
        return self.args[0]


class CacheWarning(UserWarning):
    """The cache could not be read or written; the compile went on without it."""


class UnserialisableIRError(InvalidIRError):
    """IR that holds runtime pointers or process-specific symbols and so cannot be cached or sent."""


class ServiceError(GPUCompilerError):
    """The compile service answered with an error or could not be reached.

    ``status`` is the HTTP status (None when no answer came) and ``kind``
    the error kind the service named (``"plugin_mismatch"``, ``"too_large"``...).
    """

    def __init__(self, message: str, status: int | None = None, kind: str = ""):
        self.status = status
        self.kind = kind
        super().__init__(message)


class CompilerCrashError(GPUCompilerError):
    """LLVM aborted the process compiling ``what`` (``crash``: the signal's name); contained in a
    child process, so only this job failed. ``detail`` is LLVM's message when it printed one."""

    def __init__(self, what: str, crash: str, detail: str = ""):
        self.what, self.crash, self.detail = what, crash, detail
        super().__init__(f"the compiler crashed ({crash}) while compiling {what}"
                         + (f": {detail}" if detail else "")
                         + "; this input makes LLVM abort: check it with `opt -passes=verify`, or report it")


class PluginMismatchError(ServiceError):
    """The service lacks a plugin the job needs, or has it at another version."""


class KernelError(SourceError):
    """A kernel uses something a GPU cannot do; ``kind`` names it.

    Kinds: ``RETURN_VALUE`` (kernels return nothing), ``RECURSION``,
    ``ARGUMENT`` (an argument a kernel cannot take).
    """

    def __init__(self, kind: ErrorKind, message: str, loc=None, function: str = "", hint: str = ""):
        self.kind = kind
        super().__init__(f"[{kind}] {message}", loc, function, hint)


class LaunchError(GPUCompilerError, ValueError):
    """A kernel launch is malformed: grid/block shape, device, arguments."""


class DeviceMismatchError(LaunchError):
    """An array argument's memory is on another GPU than the launch's (both named)."""


class NotPicklableError(GPUCompilerError, TypeError):
    """A compiled function (``@jit``, kernel, thunk) has no place to be pickled by reference from: a lambda at
    module level, a function made by ``exec``, a recursive closure; or the receiving process lacks that place."""


class CudaError(ToolchainError):
    """A CUDA driver call failed; ``name`` is the driver's error name (``CUDA_ERROR_...``)."""

    def __init__(self, name: str, message: str = "", call: str = "", code: int | None = None):
        self.name, self.code, self.call = name, code, call
        text = f"{call}: {name}" if call else name
        super().__init__(text + (f" ({message})" if message else ""))


class DeviceHeapError(CudaError):
    """A kernel that allocates from the device heap (the AD tape of a loop whose trip count is
    known only as it runs) stopped with a trap: most likely the heap ran out. Raise it with
    ``GPUC_DEVICE_HEAP`` (read before the first such launch of the process)."""


class EmulationError(GPUCompilerError):
    """The CPU grid emulation cannot run a kernel faithfully (e.g. divergent barriers)."""


__all__ = ["PLUGIN_ATTRIBUTE", "ArgumentBindingError", "ArgumentTypeError", "CacheCorruptionError", "CacheError", "CacheForgeryError", "CacheWarning", "CompileError", "CompilerCrashError", "ConfigError", "CudaError", "DeviceHeapError", "DeviceMismatchError", "EmulationError", "GPUCompilerError", "IRParseError", "InvalidIRError", "KernelError", "LaunchError", "NotPicklableError", "PluginError", "PluginMismatchError", "PluginRequiredError", "ReadOnlyArrayError", "RuleConflictError", "ServiceError", "SourceError", "ToolNotFoundError", "ToolchainError", "TypeInferenceError", "UnknownNameError", "UnknownPluginError", "UnknownStageError", "UnknownTargetError", "UnserialisableIRError", "UnsupportedError", "UnsupportedIRError", "for_user"]
