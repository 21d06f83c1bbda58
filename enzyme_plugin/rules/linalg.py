"""Linear algebra in differentiated code: the matrix products' BLAS calls swapped for loops.

``a @ b`` and ``np.dot`` of float matrices call the host's BLAS
(:mod:`gpucompiler.interpreter.builtins.linalgimpl`), whose calls the AD engine has
no rule for. Inside a differentiated function (the nested jobs of ``autodiff``)
the product runs the same loops as before BLAS instead, which the engine
differentiates whatever the activity of each operand (a constant matrix times an
active one included).
"""

from __future__ import annotations

import types as pytypes

from gpucompiler import types as T
from gpucompiler.interpreter import widen
from gpucompiler.interpreter.builtins.linalgimpl import LOOPS

from . import nested_rules


@nested_rules.handler
def _products_in_loops(interp, fn, args):
    loops = LOOPS.get(fn) if isinstance(fn, pytypes.FunctionType) else None
    if loops is None:
        return None
    b = widen(args[1])
    c_ordered = isinstance(b, T.ArrayType) and b.layout == "C"
    return interp.invoke(loops[0] if c_ordered else loops[1], args)
