"""Compiled functions shipped to Dask's and Ray's local clusters come from the shared cache in the workers
(no compile there). Starting a cluster takes seconds: this file is one of the slow ones (tests/conftest.py);
CI installs the `scale` extra for it. Each test skips with the reason where its library is missing."""

from __future__ import annotations

import os

import pytest

import scaling_shipped as shipped
from test_pickling import _warm, cache_dir  # noqa: F401  (its autouse fixture: a fresh GPUC_CACHE_DIR)


def test_dask_local_cluster():
    distributed = pytest.importorskip("distributed", reason="Dask's distributed is not installed (optional)")
    _warm()
    try:
        cluster = distributed.LocalCluster(n_workers=1, processes=True, threads_per_worker=1)
    except Exception as exc:  # the machine cannot start one (sandboxes without process spawning...)
        pytest.skip(f"Dask could not start a local cluster here: {exc!r}")
    with cluster, distributed.Client(cluster) as client:
        value, compiles = client.submit(shipped.call, shipped.poly, 2.0).result(timeout=180)
    assert value == 9.0 and compiles == 0


def test_ray_local_cluster():
    ray = pytest.importorskip("ray", reason="Ray is not installed (optional)")
    _warm()
    here = os.path.dirname(os.path.abspath(__file__))  # where scaling_shipped lives: Ray's workers import it
    path = os.pathsep.join(p for p in (here, os.environ.get("PYTHONPATH", "")) if p)
    try:
        ray.init(num_cpus=1, runtime_env={"env_vars": {"GPUC_CACHE_DIR": os.environ["GPUC_CACHE_DIR"],
                                                       "PYTHONPATH": path}})
    except Exception as exc:  # the machine cannot start Ray (no /dev/shm, a container's limits...)
        pytest.skip(f"Ray could not start here: {exc!r}")
    try:
        value, compiles = ray.get(ray.remote(shipped.call).remote(shipped.poly, 2.0), timeout=180)
    finally:
        ray.shutdown()
    assert value == 9.0 and compiles == 0
