#!/usr/bin/env bash
# On a machine with two or more NVIDIA GPUs, from the checkout (scripts/gpu_check.sh calls it):
#     bash scripts/multi_gpu_check.sh
# Device choice, wrong-device arrays, one process per GPU, PyTorch DDP over NCCL with our kernel as a
# layer (parameters equal to one GPU's), then a short table of DDP step times: our layer and the same
# formula in plain PyTorch, on one and on two GPUs.
set -u
cd "$(dirname "$0")/.."
export PYTHONPATH=".:plugins${PYTHONPATH:+:$PYTHONPATH}"
export NCCL_NVLS_ENABLE=0
PY=${PYTHON:-python}
REPORT=${OUT:-/tmp/gpu_check}
mkdir -p "$REPORT"
COUNT=$("$PY" -c "from cuda.bindings import driver; driver.cuInit(0); print(int(driver.cuDeviceGetCount()[1]))" 2>/dev/null || echo 0)
if [ "$COUNT" -lt 2 ]; then
    echo "multi-GPU checks: skipped ($COUNT GPU visible; they need two)"
    exit 0
fi
echo "== multi-GPU tests ($COUNT GPUs)"
"$PY" -m pytest -q -p no:cacheprovider tests/scaling/test_multi_gpu.py 2>&1 | tail -n 8
RC=${PIPESTATUS[0]}
echo "== DDP step time (rows 262144 x 64 features, float64, median of 9 steps after the first)"
printf "%-8s %6s %10s\n" layer gpus "step ms"
for layer in ours torch; do
    for n in 1 2; do
        "$PY" -m torch.distributed.run --standalone --nproc_per_node=$n tests/scaling/ddp_train.py \
            --layer $layer --rows 262144 --steps 10 --out "$REPORT/ddp_${layer}_$n.json" \
            >"$REPORT/ddp_${layer}_$n.txt" 2>&1 || { echo "ddp $layer on $n GPUs failed (see $REPORT)"; RC=1; continue; }
        "$PY" -c "import json,sys; r=json.load(open(sys.argv[1])); print(f\"%-8s %6d %10.3f\" % (sys.argv[2], r['world'], r['step_ms']))" \
            "$REPORT/ddp_${layer}_$n.json" $layer
    done
done
exit $RC
