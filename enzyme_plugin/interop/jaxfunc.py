"""A kernel program and its generated gradient as a ``jax.custom_vjp`` function.

::

    def program(device, x, w, y, out):          # inputs x, w; outputs y, out (zeroed)
        square[blocks, 256, device](x, y)
        weighted_total[blocks, 256, device](y, w, out)

    f = jax_function(program, lambda x, w: [(x.shape, x.dtype), ((1,), x.dtype)])
    loss = lambda x, w: f(x, w)[1][0]
    jax.grad(loss)(x, w)                        # through the kernels' generated gradients

Called on concrete arrays (eagerly, also inside ``jax.grad`` and
``jax.vjp``), the kernels take JAX's memory through DLPack without a copy: on
the CPU as NumPy views (the CPU grid emulation), on a GPU as CuPy views
(launched on CuPy's current stream, which DLPack orders after JAX's work).
The side is where the input arrays live (their DLPack device, not JAX's
default backend: CPU arrays of a CUDA build of JAX run on the emulation);
inputs on both sides are an ``ArgumentTypeError``; cotangents on the other
side (``check_grads`` makes NumPy ones) are copied across.
Under ``jax.jit`` the arrays are abstract: the program runs through
``jax.pure_callback`` on host copies (the CPU grid emulation, or staged to
the GPU through CuPy when JAX's default backend is a GPU). The backward
pass runs the program again under a fresh :class:`~enzyme_plugin.LaunchTape`
(the residuals are the inputs, so nothing but JAX arrays crosses
``custom_vjp``), then its gradient kernels. Inside ``jax.shard_map`` each
device's shard runs through its own callback: the outputs vary over the
mesh axes the inputs vary over, and an input replicated over an axis (a
parameter) gets the sum of every shard's gradient (a ``psum``), as the
transpose of its broadcast. Forward-mode JAX
transformations (``jax.jvp``) are not defined for a ``custom_vjp``. JAX is
imported by this module only.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import numpy as np
from jax import core as jax_core

from gpucompiler.errors import ArgumentTypeError

from ..locations import caller_location
from .program import Program, check_program, gradient_or_zeros, is_float


_DLPACK_CPU = frozenset({1, 3})  # kDLCPU, kDLCUDAHost (pinned host memory)


def _on_gpu(x) -> bool:
    """Whether ``x`` lives on a GPU, read from the array itself (DLPack's device type: a JAX array of a
    CUDA build of JAX may still live on the CPU); NumPy arrays and objects without DLPack live on the CPU."""
    where = getattr(x, "__dlpack_device__", None)
    return where is not None and int(where()[0]) not in _DLPACK_CPU


def placement(inputs) -> bool:
    """Whether the program runs on the GPU: where the input arrays live, all on one side (a mix of CPU
    and GPU arrays is an :class:`~gpucompiler.errors.ArgumentTypeError` naming the first odd one)."""
    sides = [_on_gpu(x) for x in inputs]
    for k, gpu in enumerate(sides):
        if gpu != sides[0]:
            where = ("cpu", "gpu")
            raise ArgumentTypeError(f"input {k}", f"an array on the {where[gpu]} (input 0 is on the "
                                    f"{where[sides[0]]})", caller_location(), "jax_function",
                                    hint="put all inputs on one device (jax.device_put(x, device))")
    return bool(sides) and sides[0]


def _cupy():
    import cupy  # pyright: ignore[reportMissingImports]  (optional: only JAX arrays on a GPU need it)

    return cupy


class _Runner:
    """The program on one device: how arrays come in and go out."""

    def __init__(self, program: Program, gpu: bool):
        self.program, self.gpu = program, gpu
        self.xp: Any = _cupy() if gpu else np

    def device(self):
        return self.xp.cuda.get_current_stream().ptr or None if self.gpu else "cpu"

    def outputs(self, inputs: list) -> list:
        return [self.xp.zeros(shape, dtype=dtype) for shape, dtype in self.program.output_specs(inputs)]

    def forward(self, inputs: list) -> list:
        """The program alone (the backward pass runs it again under a tape)."""
        outs = self.outputs(inputs)
        self.program.fn(self.device(), *inputs, *outs)
        return outs

    def backward(self, inputs: list, cts: list) -> list:
        outs = self.outputs(inputs)
        tape = self.program.record(self.device(), inputs, outs)
        pairs = [(o, self.xp.ascontiguousarray(c)) for o, c in zip(outs, cts)
                 if is_float(o.dtype) and tape.knows(o)]
        tape.backward(grads=pairs)
        return [gradient_or_zeros(tape, x, lambda x=x: self.xp.zeros_like(x)) if is_float(x.dtype) else None
                for x in inputs]


def _to_device(x, gpu: bool):
    """An array as the kernels on the chosen side take it: without a copy (DLPack) where it lives there;
    copied across otherwise (cotangents: ``check_grads`` gives NumPy arrays for GPU inputs)."""
    if _on_gpu(x) == gpu:
        return _cupy().from_dlpack(x) if gpu else np.from_dlpack(x) if hasattr(x, "__dlpack__") else np.asarray(x)
    return _cupy().asarray(np.asarray(x)) if gpu else np.asarray(x)


def _from_device(a):
    return jax.dlpack.from_dlpack(a)


def _is_traced(args) -> bool:
    return any(isinstance(a, jax_core.Tracer) for a in args)


def _varying(a, axes: frozenset):
    """``a`` typed as varying over the manual mesh axes ``axes`` (inside ``shard_map``): a callback's
    result is typed as varying over none, whatever its inputs vary over."""
    missing = tuple(sorted(axes - _varying_axes(a)))
    if not missing:
        return a
    lax: Any = jax.lax
    return lax.pcast(a, missing, to="varying") if hasattr(lax, "pcast") else lax.pvary(a, missing)


def _gradient_for(g, x, axes: frozenset):
    """Input ``x``'s gradient from ``g``, one shard's part computed over data varying along ``axes``:
    summed over the axes ``x`` itself does not vary along (a parameter replicated over the mesh gets
    the sum of every shard's contribution, as the transpose of its broadcast)."""
    g = _varying(g, axes)
    summed = tuple(sorted(axes - _varying_axes(x)))
    return jax.lax.psum(g, summed) if summed else g


def _mesh_axes(arrays) -> frozenset:
    return frozenset().union(*(_varying_axes(a) for a in arrays))


def _varying_axes(x) -> frozenset:
    """The manual mesh axes ``x`` varies over (JAX 0.10 ``manual_axis_type.varying``, earlier ``vma``)."""
    if not hasattr(jax, "typeof"):
        return frozenset()
    t = jax.typeof(x)
    kind = getattr(t, "manual_axis_type", None)
    return frozenset(kind.varying if kind is not None else getattr(t, "vma", ()) or ())


def jax_function(program: Callable[..., Any], outputs: Callable[..., Any], *, split: bool = False):
    """``f(*arrays)``: ``program(device, *inputs, *outputs)`` on JAX arrays, differentiable by
    ``jax.grad``/``jax.vjp`` through the kernels' generated gradients (see the module docstring).
    ``outputs(*inputs)`` gives ``(shape, dtype)`` per output. Returns one array for one output, else a
    tuple."""
    check_program(program, outputs)
    prog = Program(program, outputs, split)
    gpu_default = jax.default_backend() == "gpu"

    def shapes(inputs) -> list:
        return [jax.ShapeDtypeStruct(s, d) for s, d in prog.output_specs(inputs)]

    def host_forward(*inputs):
        runner = _Runner(prog, gpu_default)
        outs = runner.forward([runner.xp.asarray(x) for x in inputs])
        return [_cupy().asnumpy(o) if gpu_default else o for o in outs]

    def host_backward(n, *args):
        runner = _Runner(prog, gpu_default)
        xs = [runner.xp.asarray(a) for a in args]
        grads = runner.backward(xs[:n], xs[n:])
        return [(_cupy().asnumpy(g) if gpu_default else g) for g in grads if g is not None]

    def forward(*inputs):
        if _is_traced(inputs):
            axes = _mesh_axes(inputs)
            outs = [_varying(o, axes) for o in jax.pure_callback(host_forward, shapes(inputs), *inputs)]
        else:
            gpu = placement(inputs)
            outs = _Runner(prog, gpu).forward([_to_device(x, gpu) for x in inputs])
            outs = [_from_device(o) for o in outs]
        return tuple(outs)

    def backward(inputs, cts):
        floats = [is_float(x.dtype) for x in inputs]
        if _is_traced((*inputs, *cts)):
            shaped = [jax.ShapeDtypeStruct(x.shape, x.dtype) for x, f in zip(inputs, floats) if f]
            axes = _mesh_axes((*inputs, *cts))
            partial = jax.pure_callback(lambda *a: host_backward(len(inputs), *a), shaped, *inputs, *cts)
            got = iter(_gradient_for(g, x, axes) for g, x in zip(partial, [x for x, f in zip(inputs, floats) if f]))
        else:
            gpu = placement(inputs)
            runner = _Runner(prog, gpu)
            grads = runner.backward([_to_device(x, gpu) for x in inputs], [_to_device(c, gpu) for c in cts])
            got = iter(_from_device(g) for g in grads if g is not None)
        return tuple(next(got) if f else np.zeros(x.shape, dtype=jax.dtypes.float0)
                     for x, f in zip(inputs, floats))

    @jax.custom_vjp
    def f(*inputs):
        return forward(*inputs)

    def f_fwd(*inputs):
        return forward(*inputs), inputs

    f.defvjp(f_fwd, backward)

    def call(*inputs):
        outs = f(*inputs)
        return outs[0] if len(outs) == 1 else outs

    call.__name__ = getattr(program, "__name__", "jax_function")
    call.__doc__ = program.__doc__
    return call


__all__ = ["jax_function", "placement"]
