"""PyTorch DDP over NCCL with one of our kernels (and its generated gradient) as a layer.

Run by ``torchrun --nproc_per_node=N tests/scaling/ddp_train.py --out result.json``: every rank
trains the same model on its share of one fixed global batch (rows ``rank::N``), DDP averages the
gradients, and rank 0 writes the parameters after ``--steps`` SGD steps and the mean step time.
Trained on one GPU with the whole batch, the parameters are the same within rounding (the
float64 atomics of the gradient kernel add in another order). ``--layer torch`` swaps our layer
for the same formula in plain PyTorch (the timing comparison).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

from enzyme_plugin.interop.pytorch import torch_function
from gpucompiler import device as gd, kernel


@kernel
def affine_tanh(x, w, b, y):              # x, y: a (rows, features) batch, flattened; w, b: (features,)
    i = gd.grid(1)
    if i < x.shape[0]:
        j = i % w.shape[0]
        y[i] = math.tanh(w[j] * x[i] + b[j])


def layer_program(device, x, w, b, y):
    affine_tanh[(x.shape[0] + 255) // 256, 256, device](x, w, b, y)


def layer_outputs(x, w, b):
    return [(x.shape, x.dtype)]


class Model(torch.nn.Module):
    def __init__(self, features: int, ours: bool):
        super().__init__()
        self.w = torch.nn.Parameter(torch.linspace(0.5, 1.5, features, dtype=torch.float64))
        self.b = torch.nn.Parameter(torch.linspace(-0.2, 0.2, features, dtype=torch.float64))
        self.head = torch.nn.Linear(features, 1, dtype=torch.float64)
        self.layer = torch_function(layer_program, layer_outputs) if ours else None

    def forward(self, x):
        if self.layer is None:
            y = torch.tanh(self.w * x + self.b)
        else:
            y = self.layer(x.reshape(-1), self.w, self.b).reshape(x.shape)
        return self.head(y)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--out", required=True)
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--rows", type=int, default=4096)
    p.add_argument("--features", type=int, default=64)
    p.add_argument("--layer", choices=("ours", "torch"), default="ours")
    p.add_argument("--device", choices=("cuda", "cpu"), default="cuda",
                   help="cpu: gloo and CPU tensors (our layer on the CPU grid emulation)")
    a = p.parse_args()
    os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
    cuda = a.device == "cuda"
    dist.init_process_group("nccl" if cuda else "gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    local = int(os.environ.get("LOCAL_RANK", rank))
    if cuda:
        torch.cuda.set_device(local)
    device = torch.device("cuda", local) if cuda else torch.device("cpu")
    sync = (lambda: torch.cuda.synchronize(device)) if cuda else (lambda: None)

    torch.manual_seed(0)  # the same initial model and the same global batch on every rank
    model = Model(a.features, a.layer == "ours").to(device)
    g = torch.Generator().manual_seed(1)
    x_all = torch.rand(a.rows, a.features, generator=g, dtype=torch.float64) * 2 - 1
    t_all = torch.sin(x_all.sum(dim=1, keepdim=True))
    x, t = x_all[rank::world].to(device), t_all[rank::world].to(device)

    ddp = DistributedDataParallel(model, device_ids=[local] if cuda else None)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
    times = []
    for _ in range(a.steps):
        sync()
        start = time.perf_counter()
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(ddp(x), t)
        loss.backward()
        opt.step()
        sync()
        times.append(time.perf_counter() - start)
    if rank == 0:
        params = {name: q.detach().cpu().reshape(-1).tolist() for name, q in model.named_parameters()}
        warm = sorted(times[1:]) or times
        with open(a.out, "w") as f:
            json.dump({"world": world, "params": params, "step_ms": 1e3 * warm[len(warm) // 2],
                       "loss": float(loss)}, f)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
