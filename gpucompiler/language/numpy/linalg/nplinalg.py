"""``np.linalg``: ``solve``, ``inv``, ``det``, ``slogdet``, ``cholesky``, ``eigh``, ``lstsq`` and ``norm``.

As NumPy: float32 stays float32, integers and bools work in float64, results are new C-ordered
arrays; operands of any layout and expressions are accepted. The checks NumPy makes raise its
exceptions at the user's line: a non-square matrix or a singular one, a matrix that is not
positive definite, eigenvalues or a least-squares SVD that did not converge
(``np.linalg.LinAlgError``), right-hand sides of the wrong length (``ValueError``, NumPy's gufunc
message). The implementations (:mod:`.lapackimpl`) call LAPACK on the host; ``norm`` is loops
(:mod:`.linalgimpl`). Complex matrices, stacks of matrices (``ndim > 2``), ``norm``'s SVD orders
(2, -2, ``'nuc'`` of a matrix) and ``axis=`` are typed errors.
"""

from __future__ import annotations

from llvmlite import ir

from .... import types as T
from ....errors import TypeInferenceError
from ....frontend import intrinsics as K
from ....interpreter.lattice import Const, const, widen
from ....interpreter.rules import CallResult
from . import lapackimpl as P, linalgimpl as L
from ..arraymem import disown
from ..arrayexpr import extents
from ...python.numbers import base
from ..reductions import invoke_impl
from ..ufuncs import is_arraylike, keyword_call, numpy

_I64 = ir.IntType(64)
LINALG_ERROR = "numpy.linalg:LinAlgError"
_SQUARE = "Last 2 dimensions of the array must be square"
#: name -> (parameters, the LinAlgError message of a positive ``info``)
_FUNCTIONS = {
    "solve": (("a", "b"), "Singular matrix"), "inv": (("a",), "Singular matrix"), "det": (("a",), None),
    "slogdet": (("a",), None), "cholesky": (("a",), "Matrix is not positive definite"),
    "eigh": (("a", "UPLO"), "Eigenvalues did not converge"),
    "lstsq": (("a", "b", "rcond"), "SVD did not converge in Linear Least Squares"),
    "norm": (("x", "ord", "axis", "keepdims"), None),
}


def _work_type(name: str, x) -> T.Scalar:
    """The precision NumPy computes ``name`` of ``x`` in: float32 stays, other reals are float64."""
    if not is_arraylike(x):
        raise TypeInferenceError(f"np.linalg.{name}() of {x!r} is not supported in compiled code", (x,),
                                 hint="pass an array")
    if x.dtype.kind == "c":
        raise TypeInferenceError(f"np.linalg.{name}() of complex arrays is not supported in compiled code", (x,),
                                 hint="split the real and imaginary parts, or call it outside compiled code")
    return T.float32 if x.dtype == T.float32 else T.float64


def _matrix(name: str, x) -> None:
    if x.ndim != 2:
        raise TypeInferenceError(f"np.linalg.{name}() of a {x.ndim}-d array: compiled code takes one matrix "
                                 f"(NumPy raises LinAlgError for fewer than 2 dimensions)", (x,),
                                 hint="pass a 2-d array (stacks of matrices: loop over them)")


def _bound(name: str, values: list, kw: dict) -> dict:
    params = _FUNCTIONS[name][0]
    if len(values) > len(params):
        raise TypeInferenceError(f"np.linalg.{name}() takes at most {len(params)} arguments in compiled code")
    given = dict(zip(params, values))
    for k, v in kw.items():
        if k not in params or k in given:
            raise TypeInferenceError(f"np.linalg.{name}() keyword argument {k!r} is not supported in compiled code",
                                     hint=f"its parameters here: {', '.join(params)}")
        given[k] = v
    return given


def _constant(name: str, what: str, v, default):
    if v is None:
        return default
    if not isinstance(v, Const):
        raise TypeInferenceError(f"np.linalg.{name}(..., {what}=...) must be a constant in compiled code",
                                 (widen(v),), hint="write it as a literal")
    return v.value


def _linalg(interp, fn, values: list, kw: dict) -> CallResult | None:
    if getattr(fn, "__module__", None) != "numpy.linalg":
        return None
    name = getattr(fn, "__name__", "")
    if name not in _FUNCTIONS or fn is not getattr(numpy().linalg, name, None):
        return None
    if interp.target.is_gpu:
        raise TypeInferenceError(f"np.linalg.{name}() calls the host's LAPACK, which kernels on the GPU cannot",
                                 hint="call it on the host")
    given = _bound(name, values, kw)
    if {"a", "b", "x"} & kw.keys():
        raise TypeInferenceError(f"np.linalg.{name}(): pass the arrays by position in compiled code")
    if "a" not in given and "x" not in given:
        raise TypeInferenceError(f"np.linalg.{name}() needs its array argument")
    if name == "norm":
        return _norm(interp, given)
    a = widen(given["a"])
    dt = _work_type(name, a)
    _matrix(name, a)
    if name == "eigh" and _constant(name, "UPLO", given.get("UPLO"), "L") != "L":
        raise TypeInferenceError("np.linalg.eigh(..., UPLO='U') is not supported in compiled code",
                                 hint="pass the matrix's transpose with the default UPLO='L'")
    args = [a]
    if "b" in given:
        b = widen(given["b"])
        if _work_type(name, b) != dt:  # float32 with anything else: float64, as NumPy's common type
            dt = T.float64
        if b.ndim not in (1, 2):
            raise TypeInferenceError(f"np.linalg.{name}() of a {b.ndim}-d right-hand side is not supported in "
                                     "compiled code", (b,), hint="pass a vector or a matrix")
        args.append(b)
    impl = _IMPLS[name] if name not in ("solve", "lstsq") else _IMPLS[name][args[1].ndim]
    if isinstance(impl, tuple):
        impl = impl[0] if _lasting(interp, args, dt) else impl[1]
    extra = [const(_rcond(given.get("rcond"))), const(_EPS[dt])] if name == "lstsq" else []
    res = invoke_impl(interp, f"np.linalg.{name}()", impl, [*args, *extra, const(dt)])
    inner = widen(res.restype)
    assert isinstance(inner, T.TupleType), "the implementations return (results, info)"
    out = inner.items[0]
    failed = _FUNCTIONS[name][1]

    def lower(cg, v, at, rt):
        _check_shapes(cg, name, v, at)
        value = cg.call_result(res, [*v[:len(args)], *(_value(cg, c) for c in extra), None],
                               [*at[:len(args)], *extra, const(dt)], inner)
        if failed is not None:
            info = cg.b.extract_value(value, 1)
            cg.check_statement(cg.b.icmp_signed("==", info, ir.Constant(_I64, 0)), LINALG_ERROR, failed)
        result = cg.b.extract_value(value, 0)
        disown(cg, result, out)  # codegen adds the rule result's reference
        return result
    return CallResult(out, lower)


def _lasting(interp, args, dt) -> bool:
    """Whether the operands are arrays of the working dtype that outlive every use of this call's
    results: the arguments (and their views) of the function being compiled, not arrays it made (a
    temporary is freed after its last use) nor those of a callee (which may be its caller's
    temporaries). The implementations with derivative rules take such arrays themselves, since the
    rules read them again in a reverse sweep, after the function has run; others get copies, through
    which differentiating is the AD engine's error on the LAPACK call."""
    return len(interp.stack) == 1 and all(isinstance(x, T.ArrayType) and x.dtype == dt and not x.managed
                                          for x in args)


_IMPLS = {**P.DIRECT, "cholesky": P.cholesky, "eigh": P.eigh,
          "lstsq": {1: P.lstsq1, 2: P.lstsq2}}


#: the machine precision of each working type (NumPy 2's default ``rcond`` is it times the larger extent)
_EPS = {T.float64: 2.220446049250313e-16, T.float32: 1.1920928955078125e-07}


def _rcond(v) -> float:
    """``rcond`` given, or -1 for NumPy 2's default (:data:`_EPS` times the larger extent, at run time)."""
    value = _constant("lstsq", "rcond", v, None)
    if value is not None and not isinstance(value, (int, float)):
        raise TypeInferenceError("np.linalg.lstsq(..., rcond=...) must be a number or None", (widen(v),))
    return -1.0 if value is None else float(value)


def _check_shapes(cg, name: str, v, at) -> None:
    """NumPy's checks of the operands' extents, at the user's line."""
    b = cg.b
    sa = extents(cg, v[0], at[0])
    if name != "lstsq":
        cg.check_statement(b.icmp_signed("==", sa[0], sa[1]), LINALG_ERROR, _SQUARE)
    if len(v) < 2 or name not in ("solve", "lstsq"):
        return
    sb = extents(cg, v[1], at[1])
    ok = b.icmp_signed("==", sb[0], sa[0])
    if name == "lstsq":
        cg.check_statement(ok, LINALG_ERROR, "Incompatible dimensions")
    elif len(sb) == 1:
        cg.check_statement(ok, "ValueError", "solve1: Input operand 1 has a mismatch in its core dimension 0, with "
                           "gufunc signature (m,m),(m)->(m) (size %lld is different from %lld)", sb[0], sa[0])
    else:
        cg.check_statement(ok, "ValueError", "solve: Input operand 1 has a mismatch in its core dimension 0, with "
                           "gufunc signature (m,m),(m,n)->(m,n) (size %lld is different from %lld)", sb[0], sa[0])


_INF = float("inf")


def _value(cg, c: Const):
    """The run-time value of a constant argument of an implementation (a number), None for a type."""
    return cg.const(c.type, c.value) if isinstance(c.value, (bool, int, float)) else None


def _norm(interp, given: dict) -> CallResult:
    x = widen(given["x"])
    dt = _work_type("norm", x)
    if _constant("norm", "axis", given.get("axis"), None) is not None:
        raise TypeInferenceError("np.linalg.norm(..., axis=...) is not supported in compiled code",
                                 hint="loop over the rows or columns and take each one's norm")
    if _constant("norm", "keepdims", given.get("keepdims"), False):
        raise TypeInferenceError("np.linalg.norm(..., keepdims=True) is not supported in compiled code")
    order = _constant("norm", "ord", given.get("ord"), None)
    if x.ndim not in (1, 2):
        raise TypeInferenceError(f"np.linalg.norm() of a {x.ndim}-d array is not supported in compiled code",
                                 (x,), hint="pass a vector or a matrix")
    d = const(dt)
    empty = None
    if x.ndim == 1:
        if order is None or order == 2:
            impl, extra = L.norm_fro1, [d]
        elif order == 0:
            impl, extra = L.norm_zero1, [d]
        elif order in (_INF, -_INF):
            impl, extra = L.norm_max1, [const(1 if order > 0 else -1), d]
            empty = "maximum" if order > 0 else "minimum"
        elif isinstance(order, (int, float)) and not isinstance(order, bool):
            impl, extra = L.norm_p1, [const(order), d]
        else:
            raise TypeInferenceError(f"np.linalg.norm of a vector with ord={order!r}: invalid norm order for vectors")
    elif order in (None, "fro"):
        impl, extra = L.norm_fro2 if isinstance(x, T.ArrayType) else L.norm_fro2_loops, [d]
    elif order in (1, -1, _INF, -_INF):
        impl, extra = L.norm_lines2, [const(0 if order in (1, -1) else 1), const(1 if order > 0 else -1), d]
        empty = "maximum" if order > 0 else "minimum"
    else:
        raise TypeInferenceError(f"np.linalg.norm of a matrix with ord={order!r} is not supported in compiled code",
                                 hint="ord=2, -2 and 'nuc' need the singular values; None, 'fro', 1, -1, inf and "
                                      "-inf are supported")
    res = invoke_impl(interp, "np.linalg.norm()", impl, [given["x"], *extra])

    def lower(cg, v, at, rt):
        if empty is not None:
            shape = extents(cg, v[0], at[0])
            ok = ir.Constant(ir.IntType(1), 1)
            for s in shape:
                ok = cg.b.and_(ok, cg.b.icmp_signed(">", s, ir.Constant(_I64, 0)))
            cg.check_statement(ok, "ValueError", f"zero-size array to reduction operation {empty} which has no "
                               "identity")
        return cg.call_result(res, [v[0], *(_value(cg, c) for c in extra)], [at[0], *extra], rt)
    return CallResult(res.restype, lower)


@base.handler
def _numpy_linalg(interp, fn, args):
    """The functions of ``np.linalg`` this module lists, positional or with keywords."""
    if fn is K.call_kw:
        return keyword_call(args, lambda f, pos, kw: _linalg(interp, f, pos, kw))
    return _linalg(interp, fn, list(args), {})


__all__ = ["LINALG_ERROR"]
