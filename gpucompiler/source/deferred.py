"""The source of a nested job: a deferred call's function under the nested rules.

The interpreter records deferred calls (:mod:`gpucompiler.interpreter.deferred`),
the code generator lowers them (:mod:`gpucompiler.codegen.deferred`), and the
``link_deferred`` stage compiles each recorded job from a :class:`DeferredSpec`.
"""

from __future__ import annotations

from typing import Any

import attrs

from ..codegen import ErrorPolicy, ModuleCodegen
from ..errors import TypeInferenceError
from ..interpreter import BOTTOM, Interpreter
from ..interpreter.deferred import DeferredJob, take_inferred
from .spec import deps_valid, read_fingerprint, sorted_reads


@attrs.frozen
class DeferredSpec:
    """The source of a nested job: ``job.fn(job.argtypes)`` under the nested rules, entry ``job.name``."""

    job: DeferredJob
    _cache: dict = attrs.field(factory=dict, eq=False, repr=False, alias="_cache")

    @property
    def entry(self) -> str:
        return self.job.name

    def infer(self, *_ignored):
        """``(interpreter, entry frame)`` under the parent's rules plus the meta's."""
        if "infer" not in self._cache:
            job = self.job
            interp = Interpreter(job.target, (), job.python_errors)
            interp.plugin_sets = list(job.plugin_sets)
            frame = interp.infer(job.fn, list(job.argtypes))
            if frame.rettype is BOTTOM:
                raise TypeInferenceError("the deferred function never returns", (),
                                         (frame.ir.filename, frame.ir.line, 0), frame.ir.name)
            self._cache["infer"] = (interp, frame)
        return self._cache["infer"]

    def dependencies(self) -> list[tuple]:
        return list(self.infer()[0].deps.values())

    def fingerprint(self) -> Any:
        deps = [read_fingerprint(h, n, v) for h, n, v in self.dependencies()]
        return {"deferred": self.job.id, "globals": sorted_reads(deps)}

    def _inferred(self):
        """``(interpreter, entry frame)`` to generate code from: the parent's inference of the call when it
        made one in this process and every global it read is still bound alike (world age), else
        :meth:`infer`'s. (Its interpreter may hold other frames too: its reads are not this job's
        :meth:`dependencies`, which :meth:`infer` keeps to itself.)"""
        if "codegen" not in self._cache:
            hit = take_inferred(self.job.id)
            if hit is None or hit[1].rettype is BOTTOM or not deps_valid(hit[0].deps.values()):
                hit = self.infer()
            self._cache["codegen"] = hit
        return self._cache["codegen"]

    def generate_ir(self, job) -> str:
        """The LLVM IR of the nested entry and its callees."""
        interp, frame = self._inferred()
        mod = ModuleCodegen(self.entry, interp, **nested_checks(self.job, job.config))
        mod.emit(frame, self.entry)
        return mod.text()


def nested_checks(deferred: DeferredJob, config) -> dict:
    """How the nested job's checks report: ``ModuleCodegen`` options from the parent's config.

    Array indices are checked when the parent's are (``boundscheck``, a frontend
    option, so it is part of the nested job's key). A failed check sets the
    Python error under the Python ABI, calls the CPU grid emulation's
    callback in an emulated kernel, and traps elsewhere (on the GPU). The
    nested functions take an error slot exactly when the job's calling
    convention says so (:attr:`DeferredJob.takes_error_slot`), which every
    caller follows too.
    """
    on_error = (ErrorPolicy.PYTHON if deferred.python_errors
                else ErrorPolicy.EMULATION if deferred.stops_on_errors else ErrorPolicy.TRAP)
    return {"boundscheck": config.frontend.boundscheck, "on_error": on_error,
            "error_model": config.frontend.error_model,
            "error_slot": deferred.takes_error_slot,
            "source_lines": bool(getattr(deferred.meta, "source_lines", False))}
