"""Loop-heavy per-element functions for benchmarks/ad_cpu.py, through the Python frontend and
``@jit``: the primal fills ``out[i]`` for every element, the gradient calls ``autodiff`` per element
(the functions are benchmarks/ad_kernels.py's, the ones the GPU benchmark launches per thread); and
log-sum-exp over the whole array, differentiated in one call (its loops call ``exp``: vector math)."""

import math

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


def logsumexp(x):
    """log(sum(exp(x))) with the maximum subtracted, as bench.c's ``blse`` and JAX's version."""
    m = x[0]
    for i in range(1, x.shape[0]):
        m = max(m, x[i])
    s = 0.0
    for i in range(x.shape[0]):
        s += math.exp(x[i] - m)
    return m + math.log(s)


# IEEE results, as JAX's (no OverflowError check after each exp: a check leaves the loop, which then
# cannot be vectorized)
@jit(plugins=("enzyme",), error_model="numpy")
def logsumexp_primal(x, out):
    out[0] = logsumexp(x)


@jit(plugins=("enzyme",), error_model="numpy")
def logsumexp_grad(x, dx):
    autodiff(Reverse, logsumexp, Duplicated(x, dx))


#: whole-array functions differentiated in one ``autodiff`` call: name -> (primal, gradient, the function)
ARRAYS = {"logsumexp.py": (logsumexp_primal, logsumexp_grad, logsumexp)}
