"""NVVM preserve/restore: the target's intrinsics in forms the AD engine has rules for.

Before AD (``pre_ad``):

* thread/block index and size reads (``llvm.nvvm.read.ptx.sreg.*``), and the
  CPU grid emulation's thread context (``pthread_getspecific``), become
  calls of ``gpuc.inactive.<name>``: no derivative flows through them;
* barriers (``llvm.nvvm.barrier0``, ``llvm.nvvm.barrier.cta.sync.aligned.all``,
  the emulation's ``gpuc_emu_barrier``) become ``gpuc.barrier.<name>``: the
  engine mirrors them in the reverse sweep;
* libdevice calls (``__nv_sin``) become the libm names (``sin``) the engine
  has derivative rules for.

After AD (``post_ad``) every renamed function gets its name back, and on PTX
the math the derivatives call (``cos``, ``llvm.exp.f64``...) is mapped to
libdevice (``__nv_cos``, ``__nv_exp``) so that ``finish`` links it; NVPTX has
no lowering for most ``llvm.<math>`` intrinsics.
"""

from __future__ import annotations

import re

from gpucompiler import PTXTarget
from gpucompiler.llvm import Function
from gpucompiler.core import Target

from ..ad.gpu import BARRIER_PREFIX, INACTIVE_PREFIX

INACTIVE = re.compile(r"^(llvm\.nvvm\.read\.ptx\.sreg\..*|pthread_getspecific)$")
BARRIER = re.compile(r"^(llvm\.nvvm\.barrier.*|gpuc_emu_barrier)$")
LIBDEVICE = "__nv_"
RESTORE_MARKERS_PREFIXES = (INACTIVE_PREFIX, BARRIER_PREFIX)
#: libm (and ``llvm.<f>.f64/f32``) names whose libdevice version is ``__nv_<f>`` / ``__nv_<f>f``
MATH = frozenset("sin cos tan asin acos atan atan2 sinh cosh tanh asinh acosh atanh exp exp2 exp10 expm1 log "
                 "log2 log10 log1p pow sqrt cbrt hypot erf erfc lgamma tgamma fabs floor ceil trunc round fmin "
                 "fmax fmod copysign fma rsqrt".split())
# intrinsics NVPTX lowers itself (kept as they are)
_NATIVE = frozenset("sqrt fabs floor ceil trunc fma fmuladd minnum maxnum copysign".split())


def _rename(model, fn: Function, new: str) -> Function:
    """Point every use of ``fn`` at a declaration called ``new`` (reused when it exists)."""
    target = model.functions.get(new)
    if target is None:
        fn.name = new
        model.functions = {(f.name if f is fn else k): f for k, f in model.functions.items()}
        return fn
    fn.replace_all_uses_with(target)
    model.remove_function(fn)
    return target


def preserve(model, target: Target) -> int:
    """Rename the intrinsics (see the module docstring); returns how many functions were renamed."""
    n = 0
    for fn in list(model.functions.values()):
        if not fn.is_declaration:
            continue
        name = fn.name
        if INACTIVE.match(name):
            _rename(model, fn, INACTIVE_PREFIX + name)
        elif BARRIER.match(name):
            _rename(model, fn, BARRIER_PREFIX + name)
        elif name.startswith(LIBDEVICE) and (libm := _libm(name)) is not None:
            _rename(model, fn, libm)
        else:
            continue
        n += 1
    return n


def _libm(nv_name: str) -> str | None:
    base = nv_name[len(LIBDEVICE):]
    if base in MATH:
        return base
    if base.endswith("f") and base[:-1] in MATH:
        return base
    return None


def _to_libdevice(name: str, fn: Function) -> str | None:
    """The libdevice name of libm/intrinsic ``name`` (None: leave it)."""
    m = re.match(r"^llvm\.(\w+)\.f(32|64)$", name)
    if m:
        base, bits = m.group(1), m.group(2)
        if base in _NATIVE or base not in MATH:
            return None
        return LIBDEVICE + base + ("f" if bits == "32" else "")
    base = name[:-1] if name.endswith("f") and name[:-1] in MATH else name
    if base in MATH:
        return LIBDEVICE + name
    return None


def restore(model, target: Target) -> int:
    """Undo :func:`preserve`; on PTX, math calls to libdevice. Returns how many functions were renamed."""
    n = 0
    for fn in list(model.functions.values()):
        name = fn.name
        if name.startswith((INACTIVE_PREFIX, BARRIER_PREFIX)):
            _rename(model, fn, name.split(".", 2)[2])
        elif fn.is_declaration and isinstance(target, PTXTarget):
            new = _to_libdevice(name, fn)
            if new is None:
                continue
            _rename(model, fn, new)
        else:
            continue
        n += 1
    return n
