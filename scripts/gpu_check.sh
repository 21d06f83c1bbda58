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
echo "== docs/kernels.md examples (GPU blocks included)"
"$PY" -m pytest -q -p no:cacheprovider "tests/test_docs.py::test_doc_examples_run[kernels.md]" \
    --junitxml="$REPORT/gpu_docs.xml" 2>&1 | tail -n 15
DOCS_RC=${PIPESTATUS[0]}
[ "$DOCS_RC" -ne 0 ] && TESTS_RC=$DOCS_RC

echo "== benchmarks/gpu.py"
"$PY" benchmarks/gpu.py --json "$REPORT/gpu_bench.json" 2>&1 | tee "$REPORT/gpu_bench.txt"
BENCH_RC=${PIPESTATUS[0]}

echo "== summary"
"$PY" - "$REPORT" "$TESTS_RC" "$BENCH_RC" <<'PYEOF'
import json, sys, xml.etree.ElementTree as ET
report, tests_rc, bench_rc = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
counts = {"passed": 0, "failed": 0, "skipped": 0}
failed = []
try:
    cases = [c for f in ("gpu_tests.xml", "gpu_docs.xml") for c in ET.parse(f"{report}/{f}").iter("testcase")]
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
    for row in bench["bandwidth"]:
        print(f"| {row['kernel'][:29]:29} | {row['GBps']:.0f} GB/s, {row['ms']:.3f} ms  {row['note']}")
    for label, us in bench["launch_us"].items():
        print(f"| launch: {label[:21]:21} | {us:.2f} us")
except (OSError, KeyError, ValueError) as exc:
    print(f"| benchmarks                    | no results (rc {bench_rc}): {exc}")
PYEOF
exit $(( TESTS_RC != 0 || BENCH_RC != 0 ))
