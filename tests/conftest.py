"""Shared fixtures: external tools (skipped with the reason when missing) and the GPU marker."""

from __future__ import annotations

import functools
import importlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from gpucompiler.errors import GPUCompilerError, ToolNotFoundError
from gpucompiler.targets import parse_target
from gpucompiler.toolchain import find_libdevice, find_ptxas
from plugin_authors.installing import install


@functools.cache
def cuda_device_visible() -> bool:
    try:
        from cuda.bindings import driver
    except ImportError:
        return False
    try:
        err, = driver.cuInit(0)[:1]
    except Exception:  # cuda-bindings without an NVIDIA driver library on the machine
        return False
    if int(err) != 0:
        return False
    err, count = driver.cuDeviceGetCount()
    return int(err) == 0 and count > 0


#: the reference plugins (plugins/gpucompiler_plugins): registered for the test run, not in a user's install
REFERENCE_PLUGINS = {"mock_enzyme": "gpucompiler_plugins.mock_enzyme:MockEnzymePlugin",
                     "instrumentation": "gpucompiler_plugins.instrumentation:InstrumentationPlugin"}
#: the directory holding their ``*.dist-info``; set by the first pytest_configure (xdist's workers inherit it)
PLUGIN_SITE = "GPUC_TEST_PLUGIN_SITE"


#: the directories this process made in pytest_configure (xdist's workers inherit them and make none)
CREATED: list[str] = []


def pytest_unconfigure(config):
    """The run's caches and plugin site are removed by the process that made them (hundreds of MB a run)."""
    while CREATED:
        shutil.rmtree(CREATED.pop(), ignore_errors=True)


def pytest_configure(config):
    """Compile caches of a test run live in a fresh directory, never the user's; the reference plugins
    are installed, as pip would, in another, on ``sys.path`` and ``PYTHONPATH`` (subprocesses see them)."""
    if "GPUC_CACHE_DIR" not in os.environ:
        os.environ["GPUC_CACHE_DIR"] = tempfile.mkdtemp(prefix="gpuc-test-cache-")
        CREATED.append(os.environ["GPUC_CACHE_DIR"])
    # one compile per first call, as tests that count compiles expect; tests/frontend/test_tiered_compile.py
    # turns tiered first compiles on (GPUC_TIER=on runs the suite with them)
    os.environ.setdefault("GPUC_TIER", "off")
    site = os.environ.get(PLUGIN_SITE)
    if site is None or not os.path.isdir(site):
        root = tempfile.mkdtemp(prefix="gpuc-test-plugins-")
        CREATED.append(root)
        site = str(install(Path(root), "gpucompiler_reference_plugins", REFERENCE_PLUGINS))
        os.environ[PLUGIN_SITE] = site
    path = os.environ.get("PYTHONPATH", "").split(os.pathsep)
    if site not in path:
        os.environ["PYTHONPATH"] = os.pathsep.join([site, *filter(None, path)])
    if site not in sys.path:
        sys.path.insert(0, site)
        importlib.invalidate_caches()


#: the long sweeps and fuzzers: marked ``slow`` here, in one place, so that the README's test command
#: (``pytest -q``, which deselects ``slow`` through pyproject's addopts) finishes in minutes on two cores;
#: ``.ci/run`` runs them too (``pytest -m slow``)
SLOW_FILES = frozenset({
    "tests/frontend/test_numpy_axes.py",
    "tests/llvm/test_drop.py",
    "tests/llvm/test_parse_reuse.py",
    "tests/pipeline/test_compile_garbage.py",
    "tests/enzyme_plugin/test_tape_copies_and_bounds.py",
    "tests/runtime/test_launch_entry.py",
    "tests/runtime/test_launch_cupy.py",
    "tests/enzyme_plugin/test_launch_tape_signed.py",
    "tests/test_rule_precedence.py",
    "tests/frontend/test_power_loops.py",
    "tests/spirv/test_spirv_power_loops.py",
    "tests/enzyme/test_clang_gradients.py",
    "tests/numba_users/test_numba_programs.py",
    "tests/arrays/test_reproducible_ir.py",
    "tests/plugin_authors/test_rule_protocols.py",
    "tests/service/test_stress_small.py",
    "tests/plugin_authors/test_packaging.py",
    "tests/cache/test_identity_sources.py",
    "tests/frontend/test_numpy_expressions.py",
    "tests/frontend/test_dtypes.py",
    "tests/frontend/test_fuzz_differential.py",
    "tests/enzyme_plugin/test_fuzz_gradients.py",
    "tests/kernels/test_fuzz_kernels.py",
    "tests/enzyme/test_fuzz_c.py",
    "tests/llvm/test_parse_shapes.py",
    "tests/targets/test_amdgpu_fuzz.py",
    "tests/targets/test_amdgpu_gradients.py",
    "tests/spirv/test_spirv_gradient_corpus.py",
    "tests/scaling/test_clusters.py",
    "tests/frontend/test_tiered_compile.py",
    "tests/arrays/test_linalg.py",
    "tests/arrays/test_sort_kinds.py",
    "tests/arrays/test_nprandom_legacy.py",
    "tests/enzyme/test_openmp.py",
    "tests/arrays/test_matmul_blas.py",
    "tests/spirv/test_spirv_fuzz.py",
    "tests/enzyme_plugin/test_jax_shard_map.py",
    "tests/frontend/test_no_source.py",
    "tests/arrays/test_sorting.py",
    "tests/enzyme/test_pipeline_corpus.py",
    "tests/enzyme_plugin/test_index_gradients.py",
    "tests/cache/test_jit_index.py",
    "tests/cache/test_plugin_keys_noimport.py",
    "tests/targets/test_spirv_libm64_range.py",
    "tests/arrays/test_generator_choice.py",
    "tests/arrays/test_astype_clip_newaxis.py",
    "tests/arrays/test_join.py",
    "tests/arrays/test_nprandom_generator.py",
    "tests/frontend/test_integer_powers.py",
    "tests/enzyme_plugin/test_parallel_gradients.py",
    "tests/enzyme/test_nested_tapes.py",
})


def pytest_collection_modifyitems(config, items):
    root = config.rootpath
    for item in items:
        if item.path.relative_to(root).as_posix() in SLOW_FILES:
            item.add_marker(pytest.mark.slow)
    if any("gpu" in item.keywords for item in items) and not cuda_device_visible():
        skip = pytest.mark.skip(reason="no CUDA device visible (needs cuda-bindings and a GPU)")
        for item in items:
            if "gpu" in item.keywords:
                item.add_marker(skip)


#: set in the fresh interpreter a ``loader_symbols`` test is run in (no second run from there)
FRESH = "GPUC_TEST_FRESH_PROCESS"


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem):
    """A test marked ``loader_symbols`` expects LLVM to bind libm's names where the dynamic loader does (a
    native entry then gets its shared object). Numba's first compile registers its own ``sin``, ``exp``...
    with LLVM for the rest of its process, as it should for its code; in a worker where a test ran Numba,
    such a test runs in a fresh interpreter instead, and passes or fails with it."""
    if pyfuncitem.get_closest_marker("loader_symbols") is None or os.environ.get(FRESH):
        return None
    from gpucompiler.targets import sharedlink

    if sharedlink._loader_name("sin") is not None:
        return None
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", pyfuncitem.nodeid],
                          cwd=pyfuncitem.config.rootpath, env={**os.environ, FRESH: "1"}, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, ("in a fresh interpreter (Numba changed this one's LLVM symbols):\n"
                                  + done.stdout[-6000:] + done.stderr[-2000:])
    return True


@pytest.fixture(scope="session")
def cuda_available() -> bool:
    """Whether a CUDA device is visible (for tests that run GPU parts only when it is)."""
    return cuda_device_visible()


@pytest.fixture(scope="session")
def vulkan_device(spirv_val):
    """The process's Vulkan device; skips when the binding, the loader or a driver is missing (or
    spirv-val, which the runtime runs on every shader before loading it)."""
    from gpucompiler.runtime import vulkan

    try:
        return vulkan.device()
    except GPUCompilerError as exc:
        pytest.skip(f"no Vulkan device: {exc}")


@pytest.fixture(scope="session")
def spirv_val():
    """``spirv-val``'s path; skips when SPIRV-Tools is not installed."""
    from gpucompiler.targets.spirv.tools import find_spirv_val

    path = find_spirv_val()
    if path is None:
        pytest.skip("spirv-val is not installed (apt-get install spirv-tools)")
    return path


@pytest.fixture(scope="session")
def ptxas_path() -> str:
    """Path of ptxas; skips the test with the lookup's message when it is missing."""
    try:
        return find_ptxas()
    except ToolNotFoundError as exc:
        pytest.skip(str(exc))


@pytest.fixture(scope="session")
def libdevice_path() -> str:
    """Path of libdevice; skips the test with the lookup's message when it is missing."""
    try:
        return find_libdevice()
    except ToolNotFoundError as exc:
        pytest.skip(str(exc))


@pytest.fixture
def check_ptx(ptxas_path):
    """``check_ptx(ptx_text, arch="sm_90")``: the PTX target's output check (ptxas assembles it) passes."""

    def run(ptx: str, arch: str = "sm_90") -> None:
        parse_target(f"ptx:{arch}").check_output("asm", ptx)  # a ToolchainError carries ptxas's report

    return run
