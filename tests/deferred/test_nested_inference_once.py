"""A nested job's function is inferred once per compile: the code generation of ``link_deferred`` takes the
interpreter and frame of the deferred call that inferred it for the parent's types, unless a global it read
was rebound since (then it infers again, as a fresh job would)."""

from __future__ import annotations

import sys

import numpy as np

from enzyme_plugin import Duplicated, Reverse, autodiff
from gpucompiler import jit
from gpucompiler.interpreter import Interpreter
from gpucompiler.interpreter import deferred as D
from gpucompiler.source import deferred as SD

SCALE = 3.0


def cubed(x):
    s = 0.0
    for i in range(x.shape[0]):
        s += SCALE * x[i] * x[i] * x[i]
    return s


def grad(x, dx):
    autodiff(Reverse, cubed, Duplicated(x, dx))


def _interpreters_running(monkeypatch, fn) -> list[int]:
    """The id of every interpreter that runs inference of ``fn``, once each."""
    seen: list[int] = []
    real = Interpreter._run

    def counting(self, frame):
        if frame.pyfunc is fn and id(self) not in seen:
            seen.append(id(self))
        return real(self, frame)

    monkeypatch.setattr(Interpreter, "_run", counting)
    return seen


def test_the_nested_function_is_inferred_by_one_interpreter(monkeypatch):
    monkeypatch.setenv("GPUC_CACHE", "off")
    seen = _interpreters_running(monkeypatch, cubed)
    x, dx = np.linspace(0.5, 1.5, 7), np.zeros(7)
    jit(grad, tier=False)(x, dx)
    np.testing.assert_allclose(dx, 3 * SCALE * x * x, rtol=1e-14)
    assert len(seen) == 1
    assert not any(job.fn is cubed for job in (D.resolve(i) for i in D._INFERRED))  # taken by its code generation


def test_a_rebound_global_makes_the_code_generation_infer_again(monkeypatch):
    monkeypatch.setenv("GPUC_CACHE", "off")
    x, dx = np.linspace(0.5, 1.5, 7), np.zeros(7)
    jit(grad, tier=False)(x, dx)
    job = next(j for j in D._REGISTRY.values() if j.fn is cubed)
    seen = _interpreters_running(monkeypatch, cubed)
    recorded = SD.DeferredSpec(job).infer()  # as a deferred call records it
    assert len(seen) == 1
    monkeypatch.setitem(D._INFERRED, job.id, recorded)
    assert SD.DeferredSpec(job)._inferred() is recorded and len(seen) == 1  # globals as they were: taken
    monkeypatch.setitem(D._INFERRED, job.id, recorded)
    monkeypatch.setattr(sys.modules[__name__], "SCALE", 4.0)
    again = SD.DeferredSpec(job)._inferred()
    assert again is not recorded and len(seen) == 2  # SCALE rebound: inferred anew
