"""Arithmetic, casts, select and vector instructions."""

from __future__ import annotations

from gpucompiler.llvm import const_int, types as T

from ..emit import zero
from ..errors import unsupported


def _d(e, I, d):
    return d


def _neg(e, I, d):
    return e.fneg(d)


def _frem_x(e, I, d):
    # 1, and NaN where the remainder is undefined (y = 0, x infinite: the result is NaN)
    r = e.res(I)
    return e.select(e.fcmp("uno", r, r), r, d)


def _frem_y(e, I, d):
    # x - y * trunc(x / y): d/dy = -trunc(x / y)
    q = e.math("trunc", e.fdiv(e.op(I, 0), e.op(I, 1)))
    return e.fneg(e.fmul(d, q))


REVERSE = {
    "fadd": (_d, _d),
    "fsub": (_d, _neg),
    "fmul": (lambda e, I, d: e.fmul(d, e.op(I, 1)), lambda e, I, d: e.fmul(d, e.op(I, 0))),
    "fdiv": (lambda e, I, d: e.fdiv(d, e.op(I, 1)),
             lambda e, I, d: e.fneg(e.fdiv(e.fmul(d, e.res(I)), e.op(I, 1)))),
    "frem": (_frem_x, _frem_y),
    "fneg": (_neg,),
    "freeze": (_d,),
    "fpext": (lambda e, I, d: e.cast("fptrunc", d, I.operands[0].type),),
    "fptrunc": (lambda e, I, d: e.cast("fpext", d, I.operands[0].type),),
    "select": (None,
               lambda e, I, d: e.select(e.op(I, 0), d, zero(d.type)),
               lambda e, I, d: e.select(e.op(I, 0), zero(d.type), d)),
    "extractelement": (lambda e, I, d: e.b.insertelement(zero(I.operands[0].type), d, e.op(I, 1)), None),
    "insertelement": (lambda e, I, d: e.b.insertelement(d, zero(I.operands[1].type), e.op(I, 2)),
                      lambda e, I, d: e.b.extractelement(d, e.op(I, 2)), None),
    "shufflevector": (lambda e, I, d: _unshuffle(e, I, d, 0), lambda e, I, d: _unshuffle(e, I, d, 1), None),
    "bitcast": (lambda e, I, d: e.cast("bitcast", d, I.operands[0].type),),
}


def _mask(I) -> list[int]:
    m = I.operands[2]
    text = m.ref
    n = I.type.count
    if text is None:  # a constant vector with element operands
        return [-1 if o.ref in ("undef", "poison") else int(o.ref) for o in m.operands]
    if text in ("zeroinitializer",):
        return [0] * n
    if text in ("undef", "poison"):
        return [-1] * n
    if text.startswith("<"):
        out = []
        for item in text.strip("<>").split(","):
            w = item.split()[-1]
            out.append(-1 if w in ("undef", "poison") else int(w))
        return out
    if text.startswith("splat"):
        w = text.split()[-1].rstrip(")")
        return [int(w)] * n
    raise unsupported(f"shufflevector mask {text} not understood", I)


def _unshuffle(e, I, d, which: int):
    """Adjoint of shufflevector operand ``which``: lanes of ``d`` summed back where the mask took them."""
    src = I.operands[which].type
    n = src.count
    acc = zero(src)
    for j, m in enumerate(_mask(I)):
        if m < 0 or (m >= n) != bool(which):
            continue
        lane = m - n * which
        cur = e.extract(acc, lane) if acc.ref != "zeroinitializer" else None
        v = e.extract(d, j)
        acc = e.insert(acc, v if cur is None else e.fadd(cur, v), lane)
    return acc


def _shuffle_fwd(e, I, ts):
    a = ts[0] if ts[0] is not None else zero(I.operands[0].type)
    b = ts[1] if ts[1] is not None else zero(I.operands[1].type)
    return e.b.shufflevector(a, b, I.operands[2])


def _insert_fwd(e, I, ts):
    v = ts[0] if ts[0] is not None else zero(I.type)
    x = ts[1] if ts[1] is not None else zero(I.operands[1].type)
    return e.b.insertelement(v, x, e.op(I, 2))


FORWARD = {
    "fpext": lambda e, I, ts: e.cast("fpext", ts[0], I.type),
    "fptrunc": lambda e, I, ts: e.cast("fptrunc", ts[0], I.type),
    "bitcast": lambda e, I, ts: e.cast("bitcast", ts[0], I.type),
    "extractelement": lambda e, I, ts: e.b.extractelement(ts[0], e.op(I, 1)),
    "insertelement": _insert_fwd,
    "shufflevector": _shuffle_fwd,
}

__all__ = ["FORWARD", "REVERSE", "const_int", "T"]
