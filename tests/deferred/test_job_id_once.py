"""A nested job's id is hashed once per job (its entry's name, its lookups and its lowering each ask for
it) and is still its content hash: an equal job made anew has the same id, a changed one another, and
a compile of a second-order gradient hashes each nested job once (the result checked exactly)."""

from __future__ import annotations

import attrs
import numpy as np

from gpucompiler import jit
from gpucompiler.hashing import stable_hash
from gpucompiler.interpreter import deferred
from gpucompiler.interpreter.deferred import _REGISTRY, DeferredJob
from tests.enzyme_plugin.ho_funcs import cube_sum, cube_sum_gradient, cube_sum_hvp


def _counting(monkeypatch) -> list[object]:
    hashed: list[object] = []
    real = deferred.stable_hash

    def counting(obj):
        hashed.append(obj)
        return real(obj)

    monkeypatch.setattr(deferred, "stable_hash", counting)
    return hashed


def test_a_nested_job_is_hashed_once_per_job(monkeypatch):
    hashed = _counting(monkeypatch)
    x, v = np.linspace(-1.5, 2.0, 9), np.linspace(1.0, -1.0, 9)
    dx, hv = np.zeros_like(x), np.zeros_like(x)
    jit(cube_sum_hvp, plugins=("enzyme",), cache=False, tier=False)(x, v, dx, hv)
    np.testing.assert_allclose(dx, 3.0 * x * x, rtol=1e-15)
    np.testing.assert_allclose(hv, 6.0 * x * v, rtol=1e-15)
    assert hashed, "no nested job was made"
    assert len(hashed) == len({id(job) for job in hashed}), "a nested job was hashed twice"


def test_the_id_is_the_content_hash(monkeypatch):
    x, dx = np.linspace(0.5, 1.0, 4), np.zeros(4)
    jit(cube_sum_gradient, plugins=("enzyme",), cache=False, tier=False)(x, dx)
    np.testing.assert_allclose(dx, 3.0 * x * x, rtol=1e-15)
    job = next(j for j in _REGISTRY.values() if j.fn is cube_sum)
    assert isinstance(job, DeferredJob)
    hashed = _counting(monkeypatch)
    again = attrs.evolve(job)  # an equal job made anew: hashed anew, to the same id
    assert again.id == job.id == stable_hash(job) and again.id == again.id
    assert len(hashed) == 1
    other = attrs.evolve(job, python_errors=not job.python_errors)
    assert other.id != job.id and other.id == stable_hash(other)
    assert job.name.endswith(f".deferred.{job.id[:16]}")
