"""Loop-heavy per-element functions for benchmarks/ad_cpu.py, through the Python frontend and
``@jit``: the primal fills ``out[i]`` for every element, the gradient calls ``autodiff`` per element
(the functions are benchmarks/ad_kernels.py's, the ones the GPU benchmark launches per thread)."""

from ad_kernels import bmap, newton
from enzyme_plugin import Const, Duplicated, Reverse, autodiff
from gpucompiler import jit


@jit(plugins=("enzyme",))
def bmap_primal(x, out):
    for i in range(x.shape[0]):
        out[i] = bmap(x, i)


@jit(plugins=("enzyme",))
def bmap_grad(x, dx):
    for i in range(x.shape[0]):
        autodiff(Reverse, bmap, Duplicated(x, dx), Const(i))


@jit(plugins=("enzyme",))
def newton_primal(x, out):
    for i in range(x.shape[0]):
        out[i] = newton(x, i)


@jit(plugins=("enzyme",))
def newton_grad(x, dx):
    for i in range(x.shape[0]):
        autodiff(Reverse, newton, Duplicated(x, dx), Const(i))


#: name -> (primal, gradient, the per-element function)
LOOPS = {"bmap13.py": (bmap_primal, bmap_grad, bmap), "newton.py": (newton_primal, newton_grad, newton)}
