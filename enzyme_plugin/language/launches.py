"""A kernel launch inside compiled code (``autodiff`` of a host function that launches kernels): a typed
error that points to the launch tape, instead of "no implementation of getitem(pyobject, ...)"."""

from __future__ import annotations

import operator

from gpucompiler.errors import TypeInferenceError
from gpucompiler.interpreter import Const
from gpucompiler.kernel import Kernel, Launch

from .sets import nested_rules, rules


def _launch_in_compiled_code(interp, fn, args):
    if isinstance(fn, Launch):  # a launch configuration made in Python, called here
        name = fn.kernel.py_func.__qualname__
    elif fn is operator.getitem and args and isinstance(args[0], Const) and isinstance(args[0].value, Kernel):
        name = args[0].value.py_func.__qualname__
    else:
        return None
    raise TypeInferenceError(f"a launch of kernel {name} in compiled code: kernels are launched from Python",
                             hint="to differentiate a host function that launches kernels, run it under "
                                  "`with LaunchTape() as tape:` and call tape.backward() (docs/autodiff.md, "
                                  "'Programs that launch kernels')")


for _set in (rules, nested_rules):
    _set.handler(_launch_in_compiled_code)
