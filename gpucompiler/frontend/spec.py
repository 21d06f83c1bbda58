"""``FunctionSpec``: a Python function and argument types, as a job source.

Its fingerprint covers the source text of the function and of every function
it reaches, and the value of every global it reads (found by running the
abstract interpreter), so rebinding a captured constant changes the job key.
"""

from __future__ import annotations

import inspect
import json
import types as pytypes
from typing import Any

import attrs

from ..errors import TypeInferenceError


def _encode(value) -> Any:
    if isinstance(value, (bool, int, float, str, type(None))):
        return value
    if isinstance(value, tuple):
        return [_encode(v) for v in value]
    if isinstance(value, pytypes.FunctionType):
        try:
            src = inspect.getsource(value)
        except (OSError, TypeError):
            src = value.__code__.co_code.hex()
        return {"function": f"{value.__module__}.{value.__qualname__}", "source": src,
                "defaults": _encode(value.__defaults__)}
    if isinstance(value, pytypes.ModuleType):
        return {"module": value.__name__}
    name = getattr(value, "__qualname__", None)
    if name is not None:
        return {"object": f"{getattr(value, '__module__', '')}.{name}"}
    return {"object": type(value).__qualname__, "repr": repr(value)}


def _holder(holder) -> str:
    if isinstance(holder, dict):
        return f"globals:{holder.get('__name__', '?')}"
    if isinstance(holder, pytypes.ModuleType):
        return f"module:{holder.__name__}"
    return "closure"


@attrs.frozen
class FunctionSpec:
    """Compile ``fn`` for ``argtypes`` (a tuple of :mod:`gpucompiler.types`)."""

    fn: Any
    argtypes: tuple = attrs.field(converter=tuple)
    _cache: dict = attrs.field(factory=dict, eq=False, repr=False, alias="_cache")

    @property
    def entry(self) -> str:
        return f"{self.fn.__module__}.{self.fn.__qualname__}"

    def infer(self, target_name: str = "native", plugins=(), python_errors: bool = False):
        """``(interpreter, entry frame)``, computed once per setting."""
        from ..interpreter import BOTTOM, Interpreter

        key = (target_name, tuple(plugins), python_errors)
        if key not in self._cache:
            interp = Interpreter(target_name, plugins, python_errors)
            frame = interp.infer(self.fn, list(self.argtypes))
            if frame.rettype is BOTTOM:
                raise TypeInferenceError("the function never returns", (),
                                         (frame.ir.filename, frame.ir.line, 0), frame.ir.name)
            self._cache[key] = (interp, frame)
        return self._cache[key]

    def dependencies(self, *settings) -> list[tuple]:
        """Every global read: ``(holder, name, value)``; ``settings`` as for :meth:`infer`."""
        return list(self.infer(*settings)[0].deps.values())

    def fingerprint_for(self, job) -> Any:
        """:meth:`fingerprint` under ``job``'s target and plugins (their rules decide what is read)."""
        return self.fingerprint(job)

    def fingerprint(self, job=None) -> Any:
        """Content of the source; ``job`` (when given) selects its target's and plugins' rules."""
        from ..interpreter.infer import MISSING

        settings = () if job is None else (job.target.name, job.config.plugins,
                                           bool(job.config.param("python_abi", False)))
        deps = [[_holder(h), n, "<builtin>" if v is MISSING else _encode(v)]
                for h, n, v in self.dependencies(*settings)]
        deps.sort(key=lambda d: json.dumps(d, sort_keys=True))
        return {"python": _encode(self.fn), "argtypes": [repr(t) for t in self.argtypes],
                "globals": deps}

    def generate_ir(self, job) -> str:
        """The LLVM IR of the entry specialization and every callee."""
        from ..codegen import ModuleCodegen
        from ..codegen.wrapper import emit_wrapper

        abi = bool(job.config.param("python_abi", False))
        interp, frame = self.infer(job.target.name, job.config.plugins, abi)
        # with the Python ABI errors stop execution (a status) and a bad index raises
        # IndexError; elsewhere a bad index traps (on the GPU: a launch error)
        mod = ModuleCodegen(self.entry, interp, status=abi,
                            boundscheck=bool(job.config.param("boundscheck", False)),
                            on_error="python" if abi else "trap")
        entry = mod.emit(frame, self.entry)
        if abi:
            emit_wrapper(mod, frame, entry, self.entry + ".pywrap")
        return str(mod.module)

