"""Small IR-emission helpers shared by the derivative rules and the sweeps:
float constants, arithmetic, math calls (intrinsic or libm, declared on demand)."""

from __future__ import annotations

import struct

from gpucompiler.llvm import Builder, Function, const_int, constant, types as T

#: math functions emitted as ``llvm.<name>.<type>`` intrinsics; others call libm
_INTRINSICS = frozenset("sqrt exp exp2 log log2 log10 pow sin cos fabs copysign floor ceil trunc round "
                        "fma fmuladd maxnum minnum powi".split())


def is_float_like(t: T.Type) -> bool:
    """A floating-point scalar or vector of them (the values that carry derivatives)."""
    return t.scalar.kind == "float"


def has_float(t: T.Type) -> bool:
    """Whether a value of type ``t`` holds a float anywhere (scalar, vector or aggregate member)."""
    if t.kind == "float":
        return True
    if isinstance(t, (T.VectorType, T.ArrayType)):
        return has_float(t.element)
    if isinstance(t, T.StructType):
        return any(has_float(e) for e in t.elements or ())
    return False


def carries_derivative(t: T.Type) -> bool:
    """A return or argument type with a derivative: a float scalar or vector, or an aggregate
    holding floats (the adjoint or tangent is an aggregate of the same type, zero elsewhere)."""
    return is_float_like(t) or (t.kind in ("struct", "array") and has_float(t))


def float_leaves(t: T.Type, path: tuple = ()) -> list[tuple[tuple[int, ...], T.Type]]:
    """The index paths of the float (or float vector) members of aggregate type ``t``."""
    if is_float_like(t):
        return [(path, t)]
    if isinstance(t, T.StructType):
        return [leaf for k, e in enumerate(t.elements or ()) for leaf in float_leaves(e, path + (k,))]
    if isinstance(t, T.ArrayType):
        return [leaf for k in range(t.count) for leaf in float_leaves(t.element, path + (k,))]
    return []


def float_text(t: T.Type, x: float) -> str:
    """LLVM's spelling of ``x`` as a constant of scalar type ``t`` (rounded to ``t``)."""
    if t is T.float_:
        x = struct.unpack("<f", struct.pack("<f", x))[0]
    elif t is not T.double:
        raise TypeError(f"float constant of type {t}")
    bits = struct.unpack("<Q", struct.pack("<d", x))[0]
    return f"0x{bits:016X}"


def fconst(t: T.Type, x: float):
    """``x`` as a scalar or splat-vector constant of type ``t``."""
    if isinstance(t, T.VectorType):
        if x == 0.0:
            return constant(t, "zeroinitializer")
        el = f"{t.element} {float_text(t.element, x)}"
        return constant(t, "<" + ", ".join([el] * t.count) + ">")
    return constant(t, float_text(t, x))


def zero(t: T.Type):
    """The zero of any type (``0.0``, ``zeroinitializer``, ``null``...)."""
    if t.kind == "float":
        return fconst(t, 0.0)
    if t.kind == "int":
        return const_int(t, 0)
    if t.kind == "ptr":
        return constant(t, "null")
    return constant(t, "zeroinitializer")


def _parts(t: T.Type) -> list[T.Type] | None:
    """The scalar parts of an aggregate or vector, in order (None for a scalar)."""
    if isinstance(t, T.StructType):
        return list(t.elements or ())
    if isinstance(t, (T.ArrayType, T.VectorType)):
        return [t.element] * t.count
    return None


def _part(b: Builder, v, t: T.Type, k: int):
    return b.extractelement(v, const_int(T.i32, k)) if t.kind == "vector" else b.extractvalue(v, k)


def reshape(b: Builder, v, want: T.Type):
    """``v`` rebuilt as a value of type ``want`` with the same scalars in the same order (a float
    and a ``{float}``, a ``<2 x float>`` and a ``{float, float}``: how C returns small structs),
    or None when the scalars differ in number or type."""
    have = v.type
    if have is want:
        return v
    hp, wp = _parts(have), _parts(want)
    if hp is None and wp is not None and len(wp) == 1 and wp[0] is have:
        return b.insertvalue(constant(want, "poison"), v, 0) if want.kind != "vector" else \
            b.insertelement(constant(want, "poison"), v, const_int(T.i32, 0))
    if wp is None and hp is not None and len(hp) == 1 and hp[0] is want:
        return _part(b, v, have, 0)
    if hp is None or wp is None or len(hp) != len(wp) or any(x is not y for x, y in zip(hp, wp)):
        return None
    out = constant(want, "poison")
    for k in range(len(wp)):
        e = _part(b, v, have, k)
        out = b.insertelement(out, e, const_int(T.i32, k)) if want.kind == "vector" else b.insertvalue(out, e, k)
    return out


def type_suffix(t: T.Type) -> str:
    """Intrinsic name mangling: ``f64``, ``f32``, ``v4f64``."""
    s = t.scalar
    base = {"double": "f64", "float": "f32", "half": "f16"}[str(s)] if s.kind == "float" else str(s)
    return f"v{t.count}{base}" if isinstance(t, T.VectorType) else base


def declare(module, name: str, fnty: T.FunctionType) -> Function:
    """The function ``name`` of ``module``, declared with ``fnty`` if absent."""
    fn = module.functions.get(name)
    if fn is None:
        fn = module.add_function(Function(name, fnty))
    return fn


#: fast-math flags of the derivative arithmetic (tangents, adjoints): a product and a sum may be fused
#: into one ``fma`` (what nvcc does by default), never the primal's own arithmetic, which is copied as
#: written; the derivative changes by rounding only
DERIVATIVE_FLAGS = ("contract",)


class Emit:
    """A builder with float helpers; ``module`` gets the declarations it needs."""

    def __init__(self, module, builder: Builder | None = None):
        self.module = module
        self.b = builder or Builder()

    # -- arithmetic (folding additions of zero keeps the output small) --------
    def fadd(self, a, b):
        if _is_zero(a):
            return b
        if _is_zero(b):
            return a
        if a.type.kind in ("struct", "array"):  # adjoints of aggregates: member by member
            out = a
            for path, _ in float_leaves(a.type):
                s = self.b.binop("fadd", self.b.extractvalue(a, path), self.b.extractvalue(b, path),
                                 flags=DERIVATIVE_FLAGS)
                out = self.b.insertvalue(out, s, path)
            return out
        return self.b.binop("fadd", a, b, flags=DERIVATIVE_FLAGS)

    def fsub(self, a, b):
        return a if _is_zero(b) else self.b.binop("fsub", a, b, flags=DERIVATIVE_FLAGS)

    def fmul(self, a, b):
        return self.b.binop("fmul", a, b, flags=DERIVATIVE_FLAGS)

    def fdiv(self, a, b):
        return self.b.fdiv(a, b)

    def fneg(self, a):
        return self.b.fneg(a, flags=DERIVATIVE_FLAGS)

    def const(self, t, x: float):
        return fconst(t, x)

    def select(self, c, a, b):
        return self.b.select(c, a, b)

    def fcmp(self, pred, a, b):
        return self.b.fcmp(pred, a, b)

    def cast(self, op, v, t):
        return self.b.cast(op, v, t)

    def extract(self, vec, i: int):
        return self.b.extractelement(vec, const_int(T.i32, i))

    def insert(self, vec, v, i: int):
        return self.b.insertelement(vec, v, const_int(T.i32, i))

    def splat(self, v, t: T.VectorType):
        """A vector of type ``t`` with every lane ``v``."""
        one = self.b.insertelement(constant(t, "poison"), v, const_int(T.i32, 0))
        mask = constant(T.vector(t.count, T.i32), "zeroinitializer")
        return self.b.shufflevector(one, constant(t, "poison"), mask)

    # -- calls ----------------------------------------------------------------
    def call(self, name: str, ret: T.Type, args):
        fn = declare(self.module, name, T.function(ret, [a.type for a in args]))
        return self.b.call(fn, list(args))

    def math(self, name: str, *args):
        """``name(args)`` on the type of the first argument: an intrinsic where LLVM has one, else libm."""
        t = args[0].type
        if name in _INTRINSICS:
            full = f"llvm.{name}.{type_suffix(t)}"
            if name == "powi":
                full += f".{args[1].type}"
            return self.call(full, t, args)
        if t.kind == "vector":
            lanes = [self.math(name, *[self.extract(a, k) for a in args]) for k in range(t.count)]
            out = constant(t, "poison")
            for k, lane in enumerate(lanes):
                out = self.insert(out, lane, k)
            return out
        return self.call(name + ("f" if t is T.float_ else ""), t, args)

    def memset(self, p, n):
        """``llvm.memset(p, 0, n)``."""
        if n.type is not T.i64:
            n = self.b.zext(n, T.i64)
        space = getattr(p.type, "addrspace", 0)  # a private alloca's shadow (AMDGPU: address space 5)
        return self.call(f"llvm.memset.p{space}.i64", T.void, [p, const_int(T.i8, 0), n, const_int(T.i1, 0)])


def _is_zero(v) -> bool:
    ref = getattr(v, "ref", None)
    return ref == "zeroinitializer" or (ref is not None and ref.startswith("0x0000000000000000")
                                        and v.type.kind == "float") or ref == "0.0"


def sizeof(t: T.Type) -> int:
    """Allocation size in bytes of ``t`` under the usual 64-bit data layout."""
    k = t.kind
    if k == "float":
        return {"half": 2, "bfloat": 2, "float": 4, "double": 8, "x86_fp80": 16, "fp128": 16}[str(t)]
    if isinstance(t, T.IntType):
        n = max(1, (t.bits + 7) // 8)
        p = 1
        while p < n:
            p *= 2
        return p
    if k == "ptr":
        return 8
    if isinstance(t, T.VectorType):
        n = sizeof(t.element) * t.count
        p = 1
        while p < n:
            p *= 2
        return p
    if isinstance(t, T.ArrayType):
        return sizeof(t.element) * t.count
    if isinstance(t, T.StructType):
        off, al = 0, 1
        for e in t.elements or ():
            a = 1 if t.packed else alignof(e)
            off = (off + a - 1) // a * a + sizeof(e)
            al = max(al, a)
        return (off + al - 1) // al * al
    raise TypeError(f"size of {t}")


def alignof(t: T.Type) -> int:
    if isinstance(t, T.ArrayType):
        return alignof(t.element)
    if isinstance(t, T.StructType):
        return max([alignof(e) for e in t.elements or ()] or [1])
    return min(sizeof(t), 16)
