"""A kernel program and its generated gradient as a ``torch.autograd.Function``.

::

    def program(device, x, w, y, out):          # inputs x, w; outputs y, out (zeroed)
        square[blocks, 256, device](x, y)
        weighted_total[blocks, 256, device](y, w, out)

    f = torch_function(program, lambda x, w: [(x.shape, x.dtype), ((1,), x.dtype)])
    y, out = f(x, w)                            # torch tensors, CUDA or CPU
    out.sum().backward()                        # x.grad, w.grad from the gradient kernels

CUDA tensors go to the kernels as they are (``__cuda_array_interface__``: no
copy), launched on their device (as PyTorch does, whichever device is current) and
on the current PyTorch stream of that device; CPU tensors
run on the CPU grid emulation through NumPy views of their memory (no copy).
The forward keeps its :class:`~enzyme_plugin.LaunchTape`; ``backward`` zeroes
its shadows, seeds them with the output gradients and returns the input
gradients (``None`` for integer inputs); a graph kept with ``retain_graph``
can be reversed again (not in split mode: a split tape is consumed). PyTorch is imported by this module only.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

import numpy as np
import torch  # pyright: ignore[reportMissingImports]  (optional: installed where PyTorch is used)

from gpucompiler.errors import ArgumentTypeError
from gpucompiler.runtime.devices import Device

from ..locations import caller_location
from .program import Program, check_program, gradient_or_zeros, is_float


def _torch_dtype(dtype) -> Any:
    return torch.from_numpy(np.empty(0, dtype=np.dtype(dtype))).dtype


def _numpy_dtype(t) -> np.dtype:
    return torch.empty(0, dtype=t.dtype).numpy().dtype


def _spec_dtype(dtype) -> np.dtype:
    """A NumPy or a PyTorch dtype as a NumPy dtype."""
    return torch.empty(0, dtype=dtype).numpy().dtype if isinstance(dtype, torch.dtype) else np.dtype(dtype)


def _on(device) -> Any:
    """The launches inside go to ``device`` (a ``torch.device``: the tensors' device, whatever device is
    current, as PyTorch does); a CPU device leaves them on the CPU emulation."""
    if device.type != "cuda":
        return contextlib.nullcontext()
    return Device(device.index if device.index is not None else torch.cuda.current_device())


def _launch_view(t, cuda: bool):
    """What a kernel takes for tensor ``t``: the tensor itself on CUDA, a NumPy view on the CPU."""
    t = t.detach()
    return t if cuda else t.numpy()


class _TapeFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, program: Program, *inputs):  # pyright: ignore[reportIncompatibleMethodOverride]
        for k, t in enumerate(inputs):
            if not isinstance(t, torch.Tensor) or t.device != inputs[0].device:
                raise ArgumentTypeError(f"input {k}", type(t).__name__ if not isinstance(t, torch.Tensor)
                                        else f"a tensor on {t.device} (input 0 is on {inputs[0].device})",
                                        caller_location(), "torch_function",
                                        hint="pass tensors, all on one device")
        first = inputs[0]
        cuda = first.is_cuda
        device = torch.cuda.current_stream(first.device).cuda_stream if cuda else "cpu"
        views = [_launch_view(t, cuda) for t in inputs]
        specs = program.output_specs(views, _spec_dtype)
        outs = [torch.zeros(shape, dtype=_torch_dtype(dtype), device=first.device) for shape, dtype in specs]
        out_views = [_launch_view(o, cuda) for o in outs]
        with _on(first.device):
            ctx.tape = program.record(device, views, out_views)
        ctx.views, ctx.out_views, ctx.cuda, ctx.device = views, out_views, cuda, first.device
        for o, (_, dtype) in zip(outs, specs):
            if not is_float(dtype):
                ctx.mark_non_differentiable(o)
        return tuple(outs)

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, *grads):  # pyright: ignore[reportIncompatibleMethodOverride]
        tape, cuda = ctx.tape, ctx.cuda
        tape.zero()  # a graph kept (retain_graph) is reversed again from fresh shadows
        pairs = []
        for ov, g in zip(ctx.out_views, grads):
            if g is None or not is_float(ov.dtype if not cuda else _numpy_dtype(ov)) or not tape.knows(ov):
                continue
            g = g.detach().contiguous()
            pairs.append((ov, g if cuda else g.numpy()))
        with _on(ctx.device):
            tape.backward(grads=pairs)
        out: list[Any] = [None]  # the program
        for v, need in zip(ctx.views, ctx.needs_input_grad[1:]):
            dtype = _numpy_dtype(v) if cuda else v.dtype
            if not need or not is_float(dtype):
                out.append(None)
                continue
            d = gradient_or_zeros(tape, v, lambda v=v: torch.zeros_like(v) if cuda else np.zeros_like(v))
            # a copy: autograd may keep the tensor as .grad, and the tape's shadows are zeroed on reuse
            out.append(d.clone() if cuda else torch.from_numpy(np.array(d)))
        return tuple(out)


def torch_function(program: Callable[..., Any], outputs: Callable[..., Any], *, split: bool = False):
    """``f(*tensors)``: ``program(device, *inputs, *outputs)`` run on tensors, differentiable by PyTorch
    through the kernels' generated gradients (see the module docstring). ``outputs(*inputs)`` gives the
    ``(shape, dtype)`` of each output (the inputs as the kernels see them: tensors on CUDA, NumPy arrays
    on the CPU); ``split=True`` keeps per-thread tapes between forward and backward (split mode).
    Returns one tensor for one output, else a tuple."""
    check_program(program, outputs)
    prog = Program(program, outputs, split)

    def f(*inputs):
        outs = _TapeFunction.apply(prog, *inputs)
        assert isinstance(outs, tuple)
        return outs[0] if len(outs) == 1 else outs

    f.__name__ = getattr(program, "__name__", "torch_function")
    f.__doc__ = program.__doc__
    return f


__all__ = ["torch_function"]
