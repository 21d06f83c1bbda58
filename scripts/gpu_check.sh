#!/usr/bin/env bash
# On a machine with an NVIDIA GPU, from the checkout:
#     bash scripts/gpu_check.sh            (writes reports to ${OUT:-/tmp/gpu_check})
# Runs every pytest test marked `gpu`, then benchmarks/gpu.py, and prints a short table.
set -u
cd "$(dirname "$0")/.."
export PYTHONPATH=".:plugins${PYTHONPATH:+:$PYTHONPATH}"
PY=${PYTHON:-python}
REPORT=${OUT:-/tmp/gpu_check}
mkdir -p "$REPORT"

# Entry points (plugin discovery) need the package's metadata: install the
# checkout itself, offline and without dependencies (they are on the machine).
"$PY" -m pip install -q --no-deps --no-build-isolation --no-index -e . >/dev/null 2>&1 \
    || echo "note: could not pip-install the checkout; plugins are found only if registered by hand"

# numba-cuda for the comparison: wheels carried in .whl/ (numba, numba-cuda, and a NumPy numba
# supports when the machine's is newer; see docs/kernels.md)
# go into their own --target directory, used only by the numba-cuda timing subprocess of
# benchmarks/gpu.py (GPUC_NUMBA_SITE), so this Python keeps its own numba/llvmlite untouched.
NUMBA_SITE=${GPUC_NUMBA_SITE:-/tmp/gpuc_numba_site}
if ls .whl/numba-*.whl .whl/numba_cuda-*.whl >/dev/null 2>&1; then
    rm -rf "$NUMBA_SITE"
    if "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target "$NUMBA_SITE" \
            .whl/numba-*.whl .whl/numba_cuda-*.whl $(ls .whl/numpy-*.whl 2>/dev/null) \
            >"$REPORT/numba_install.txt" 2>&1; then
        export GPUC_NUMBA_SITE="$NUMBA_SITE"
        echo "numba-cuda: carried wheels installed in $NUMBA_SITE"
    else
        echo "numba-cuda: installing the carried wheels failed (see $REPORT/numba_install.txt)"
    fi
else
    echo "numba-cuda: no wheels in .whl/; the benchmark tries the installed numba-cuda"
fi

echo "== device"
"$PY" - <<'PYEOF'
from gpucompiler.runtime import cuda
print(f"GPU: {cuda.device_name()}  compute capability {cuda.capability()}")
import llvmlite, numpy, sys
print(f"python {sys.version.split()[0]}, llvmlite {llvmlite.__version__}, numpy {numpy.__version__}")
PYEOF

echo "== gpu tests"
"$PY" -m pytest -m gpu tests -q -p no:cacheprovider --junitxml="$REPORT/gpu_tests.xml" 2>&1 | tail -n 40
TESTS_RC=${PIPESTATUS[0]}
echo "== kernel-gradient corpus: emulation vs exact/FD, ptxas, device vs emulation"
"$PY" -m pytest -q -p no:cacheprovider tests/enzyme_plugin/test_kernel_gradient_corpus.py \
    --junitxml="$REPORT/gpu_corpus.xml" 2>&1 | tail -n 15
CORPUS_RC=${PIPESTATUS[0]}
[ "$CORPUS_RC" -ne 0 ] && TESTS_RC=$CORPUS_RC
echo "== docs/kernels.md examples (GPU blocks included)"
"$PY" -m pytest -q -p no:cacheprovider "tests/test_docs.py::test_doc_examples_run[kernels.md]" \
    --junitxml="$REPORT/gpu_docs.xml" 2>&1 | tail -n 15
DOCS_RC=${PIPESTATUS[0]}
[ "$DOCS_RC" -ne 0 ] && TESTS_RC=$DOCS_RC

echo "== Enzyme's CUDA guide (clang device code -> gpuc enzyme --target ptx -> launched, gradient checked)"
"$PY" -m pytest -q -p no:cacheprovider tests/enzyme/test_cuda_guide.py 2>&1 | tail -n 5
[ "${PIPESTATUS[0]}" -ne 0 ] && TESTS_RC=1

echo "== parallel_reduce / parallel_for kernels (block tree + one atomic per block) against NumPy"
"$PY" -m pytest -q -p no:cacheprovider tests/parallel/test_parallel_reduce.py -k "gpu or ptx" 2>&1 | tail -n 5
[ "${PIPESTATUS[0]}" -ne 0 ] && TESTS_RC=1

echo "== gradients of parallel_reduce / parallel_for on the GPU (Kokkos 2-norm: v/||v|| vs analytic, FD, emulation)"
"$PY" -m pytest -q -p no:cacheprovider -m "slow or not slow" tests/enzyme_plugin/test_parallel_gradients.py \
    "tests/test_docs.py::test_doc_examples_run[parallel.md]" 2>&1 | tail -n 5
[ "${PIPESTATUS[0]}" -ne 0 ] && TESTS_RC=1

echo "== benchmarks/gpu.py"
"$PY" benchmarks/gpu.py --json "$REPORT/gpu_bench.json" 2>&1 | tee "$REPORT/gpu_bench.txt"
BENCH_RC=${PIPESTATUS[0]}
echo "== benchmarks/launch_overhead.py (host time per launch: fake driver, then the GPU beside CuPy)"; "$PY" benchmarks/launch_overhead.py --json "$REPORT/launch_overhead.json" 2>&1 | tee "$REPORT/launch_overhead.txt"
echo "== examples/main.py and docs/autodiff.md (autodiff inside kernels, GPU blocks included)"
"$PY" examples/main.py 2>&1 | tee "$REPORT/main_job.txt"
[ "${PIPESTATUS[0]}" -ne 0 ] && TESTS_RC=1
"$PY" -m pytest -q -p no:cacheprovider "tests/test_docs.py::test_doc_examples_run[autodiff.md]" 2>&1 | tail -n 15
[ "${PIPESTATUS[0]}" -ne 0 ] && TESTS_RC=1
echo "== higher-order AD in kernels (forward and reverse over reverse: emulation, ptxas, device)"
"$PY" -m pytest -q -p no:cacheprovider tests/enzyme_plugin/test_higher_order.py -k kernel 2>&1 | tail -n 15
[ "${PIPESTATUS[0]}" -ne 0 ] && TESTS_RC=1
echo "== batch (vector) mode and split-mode thunks in kernels: emulation, ptxas, device (the gpu tests also run above)"
"$PY" -m pytest -q -p no:cacheprovider tests/enzyme_plugin/test_batch_mode.py tests/enzyme_plugin/test_split_compiled.py \
    -k "kernel or launch" 2>&1 | tail -n 15
[ "${PIPESTATUS[0]}" -ne 0 ] && TESTS_RC=1
echo "== AD across kernel launches (LaunchTape, split tapes in per-thread rows, Enzyme's CUDA guide host program)"
"$PY" -m pytest -q -p no:cacheprovider tests/enzyme_plugin/test_launch_tape.py 2>&1 | tail -n 15
[ "${PIPESTATUS[0]}" -ne 0 ] && TESTS_RC=1
echo "== PyTorch autograd.Function and JAX custom_vjp wrappers (gradcheck, check_grads; CPU and CUDA)"
"$PY" -m pytest -q -p no:cacheprovider -rs tests/enzyme_plugin/test_interop.py 2>&1 | tail -n 15
[ "${PIPESTATUS[0]}" -ne 0 ] && TESTS_RC=1
echo "== benchmarks/ad_gpu.py"
"$PY" benchmarks/ad_gpu.py --json "$REPORT/ad_gpu.json" 2>&1 | tee "$REPORT/ad_gpu.txt"
AD_BENCH_RC=${PIPESTATUS[0]}
[ "$AD_BENCH_RC" -ne 0 ] && BENCH_RC=$AD_BENCH_RC
echo "== benchmarks/ad_gpu_floor.py (the Newton and stencil gradients beside hand-written CUDA C)"
"$PY" benchmarks/ad_gpu_floor.py 2>&1 | tee "$REPORT/ad_gpu_floor.txt"

echo "== benchmarks/ad_launches.py (a two-kernel program's gradient: LaunchTape, JAX, PyTorch; 2^20 elements)"
# bounded: split tapes that outgrow their rows fall back to the device heap, whose malloc is slow at 2^20 threads
# --parts: the host time of each part of a round (the recording's own work per launch: the goal's figure)
timeout 200 "$PY" benchmarks/ad_launches.py --device gpu --n 1048576 --reps 10 --parts 2000 \
    --json "$REPORT/ad_launches_gpu.json" 2>&1 \
    | tee "$REPORT/ad_launches_gpu.txt"
[ "${PIPESTATUS[0]}" -ne 0 ] && BENCH_RC=1
echo "== benchmarks/first_launch_gpu.py (a kernel's first launch in a fresh process: cold, from the cache)"
timeout 200 "$PY" benchmarks/first_launch_gpu.py --rounds 3 --json "$REPORT/first_launch_gpu.json" 2>&1 \
    | tee "$REPORT/first_launch_gpu.txt"
[ "${PIPESTATUS[0]}" -ne 0 ] && BENCH_RC=1
echo "== SPIR-V on Vulkan (the NVIDIA Vulkan driver): tests/spirv and benchmarks/gpu_vulkan.py"
# The Vulkan loader may be missing on the GPU machine: carried Debian packages in .gl/ (libvulkan1, the
# glvnd libraries and spirv-tools, see docs/vulkan.md) are unpacked into /; the NVIDIA ICD is named when none is; the
# binding (the vulkan package, cffi) comes from carried wheels in .whl/ when not installed.
if ! ldconfig -p | grep -q libvulkan.so.1 && ls .gl/*.deb >/dev/null 2>&1; then
    for f in .gl/*.deb; do [ "${f#*spirv-tools}" = "$f" ] && dpkg -x "$f" /; done
    ldconfig
fi
# spirv-val (Debian's spirv-tools, carried in .gl/ too): the Vulkan runtime refuses to load a shader unchecked
if ! command -v spirv-val >/dev/null 2>&1 && ls .gl/spirv-tools_*.deb >/dev/null 2>&1; then
    dpkg -x .gl/spirv-tools_*.deb /
fi
NVIDIA_ICD=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
if [ -z "${VK_DRIVER_FILES:-}" ] && [ -f "$NVIDIA_ICD" ]; then export VK_DRIVER_FILES="$NVIDIA_ICD"; fi
if ! "$PY" -c "import vulkan" >/dev/null 2>&1 && ls .whl/vulkan-*.whl >/dev/null 2>&1; then
    VULKAN_SITE=/tmp/gpuc_vulkan_site
    "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target "$VULKAN_SITE" \
        .whl/vulkan-*.whl $(ls .whl/cffi-*.whl .whl/pycparser-*.whl 2>/dev/null) >/dev/null 2>&1 \
        && export PYTHONPATH="$PYTHONPATH:$VULKAN_SITE"
fi
"$PY" -m pytest -q -p no:cacheprovider -rs -m "slow or not slow" tests/spirv tests/targets/test_spirv_warp_aggregate.py \
    tests/targets/test_spirv_libm64_range.py "tests/test_docs.py::test_doc_examples_run[vulkan.md]" \
    --junitxml="$REPORT/gpu_spirv.xml" 2>&1 | tail -n 15
[ "${PIPESTATUS[0]}" -ne 0 ] && TESTS_RC=1
"$PY" benchmarks/gpu_vulkan.py --json "$REPORT/gpu_vulkan.json" 2>&1 | tee "$REPORT/gpu_vulkan.txt"
[ "${PIPESTATUS[0]}" -ne 0 ] && BENCH_RC=1
echo "== several GPUs (scripts/multi_gpu_check.sh: skipped on one)"
bash scripts/multi_gpu_check.sh 2>&1 | tee "$REPORT/multi_gpu.txt"
[ "${PIPESTATUS[0]}" -ne 0 ] && TESTS_RC=1
echo "== summary"
"$PY" - "$REPORT" "$TESTS_RC" "$BENCH_RC" <<'PYEOF'
import json, sys, xml.etree.ElementTree as ET
report, tests_rc, bench_rc = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
counts = {"passed": 0, "failed": 0, "skipped": 0}
failed = []
try:
    cases = [c for f in ("gpu_tests.xml", "gpu_docs.xml", "gpu_corpus.xml")
             for c in ET.parse(f"{report}/{f}").iter("testcase")]
    for case in cases:
        kinds = {child.tag for child in case}
        if kinds & {"failure", "error"}:
            counts["failed"] += 1
            failed.append(f"{case.get('classname')}::{case.get('name')}")
        elif "skipped" in kinds:
            counts["skipped"] += 1
        else:
            counts["passed"] += 1
except (OSError, ET.ParseError) as exc:
    print(f"no test report: {exc}")
print(f"| item                          | result")
print(f"|-------------------------------|-------")
print(f"| gpu tests + kernels.md docs   | {counts['passed']} passed, {counts['failed']} failed, "
      f"{counts['skipped']} skipped (rc {tests_rc})")
for name in failed[:20]:
    print(f"|   FAILED                      | {name}")
try:
    bench = json.load(open(f"{report}/gpu_bench.json"))
    print(f"| GPU                           | {bench['gpu']}")
    rows = {}
    for row in bench["bandwidth"]:
        rows[row["kernel"].split(" (numba")[0].split(" (")[0] if row["kernel"].startswith("numba-cuda out")
             else row["kernel"]] = row
        print(f"| {row['kernel'][:29]:29} | {row['GBps']:.0f} GB/s, {row['ms']:.3f} ms  {row['note']}")
    launch = bench["launch_us"]
    for label, us in launch.items():
        print(f"| launch: {label[:21]:21} | {us:.2f} us")
    # goals
    def ms(key):
        r = rows.get(key)
        return r["ms"] if r else float("nan")
    copy, ours, numba = ms("device-to-device copy"), ms("gpucompiler out = a*x"), ms("numba-cuda out = a*x")
    sums = {k: ms(k) for k in ("gpucompiler sum (shared+atomic)", "gpucompiler sum (shfl+atomic)")}
    cupy_sum = ms("CuPy sum")
    best_sum = min(sums.values())
    ours_l = next((v for k, v in launch.items() if k.startswith("gpucompiler")), float("nan"))
    cupy_l = next((v for k, v in launch.items() if k.startswith("CuPy")), float("nan"))
    numba_l = next((v for k, v in launch.items() if k.startswith("numba-cuda")), float("nan"))
    ok = lambda c: "MET" if c else "not met"  # noqa: E731
    print(f"| GOAL elementwise >= 90% copy  | {copy / ours:.0%} of copy ({ok(copy / ours >= 0.9)}); "
          f"numba-cuda {copy / numba:.0%}")
    print(f"| GOAL reduction <= 1.2x CuPy   | " + ", ".join(f"{k.split('(')[1][:-1]} {v / cupy_sum:.2f}x"
                                                      for k, v in sums.items())
          + f" ({ok(best_sum / cupy_sum <= 1.2)})")
    print(f"| GOAL launch <= CuPy's         | ours {ours_l:.2f} us, CuPy {cupy_l:.2f} us ({ok(ours_l <= cupy_l)}); "
          f"numba-cuda {numba_l:.2f} us")
except (OSError, KeyError, ValueError, ZeroDivisionError) as exc:
    print(f"| benchmarks                    | no results (rc {bench_rc}): {exc}")
try:
    spirv = [c for c in ET.parse(f"{report}/gpu_spirv.xml").iter("testcase")]
    bad = [c.get("name") for c in spirv if {ch.tag for ch in c} & {"failure", "error"}]
    skipped = sum("skipped" in {ch.tag for ch in c} for c in spirv)
    print(f"| SPIR-V tests on Vulkan        | {len(spirv) - len(bad) - skipped} passed, {len(bad)} failed, "
          f"{skipped} skipped" + (f": {', '.join(bad[:5])}" if bad else ""))
    vk = json.load(open(f"{report}/gpu_vulkan.json"))
    print(f"| Vulkan device                 | {vk['device']}")
    for row in vk["rows"]:
        print(f"| {row['kernel'][:29]:29} | {row['GBps']:.0f} GB/s, {row['ms']:.3f} ms")
    ratio = vk["elementwise_vs_copy"]
    print(f"| GOAL Vulkan elementwise >=80% | {ratio:.0%} of vkCmdCopyBuffer ({'MET' if ratio >= 0.8 else 'not met'})")
except (OSError, ET.ParseError, KeyError, ValueError) as exc:
    print(f"| SPIR-V on Vulkan              | no results: {exc}")
try:
    ad = json.load(open(f"{report}/ad_gpu.json"))
    for name, r in ad["rows"].items():
        if r.get("tape_per_thread", "-") == "-":
            continue
        o, j = r["ours"], r.get("jax")
        vs = (f", JAX grad {j['grad_s'] * 1e6:.1f} us ({j['ratio']:.1f}x its primal)" if j else ", no JAX")
        print(f"| AD {name[:31]:31} | grad {o['grad_s'] * 1e6:.1f} us = {o['ratio']:.2f}x primal{vs}; "
              f"tape/thread {r['tape_per_thread']}")
except (OSError, KeyError, ValueError) as exc:
    print(f"| AD loop kernels               | no results: {exc}")
PYEOF
exit $(( TESTS_RC != 0 || BENCH_RC != 0 ))
