"""The user's ``autodiff`` from Python: a host function that runs parallel regions on a device space
(``parallel_reduce``/``parallel_for`` with ``space=``) through its launch tape
(:mod:`enzyme_plugin.launches.programs`), any other through a compiled entry (:mod:`enzyme_plugin.compiled`).
In compiled code a call of it is a nested job (:mod:`enzyme_plugin.language`)."""

from __future__ import annotations

from gpucompiler.arguments import cell_filled
from gpucompiler.errors import PLUGIN_ATTRIBUTE

from .calls import Call, marked
from .compiled import differentiate, prepared
from .locations import user_errors
from .modes import WITH_PRIMAL, Mode


@marked(Call.AUTODIFF)
@user_errors
def autodiff(mode: Mode, f, *args, seed=None):
    """Differentiate ``f`` at ``args`` in ``mode`` (see :mod:`enzyme_plugin.api` for the conventions).

    ``seed`` (reverse modes, from Python): the cotangent of ``f``'s result instead of 1.0, a float, or for
    a result that is a tuple or record of floats a value of its structure (one seed per element).

    Example::

        def f(x, a):
            return x * a[0] * a[0]

        a, da = np.array([3.0]), np.zeros(1)
        (dx,) = autodiff(Reverse, f, Active(2.0), Duplicated(a, da))   # dx == 9.0, da == [12.0]
    """
    mode, runtime_activity, f, ann = prepared(mode, f, args)
    if _names_device_space(f):
        from .launches import programs  # import time: NumPy and the launch tape, only for device programs

        if programs.has_device_sites(f):
            return programs.autodiff_program(WITH_PRIMAL.get(mode, mode), runtime_activity, mode in WITH_PRIMAL,
                                             f, ann)
    return differentiate(mode, runtime_activity, f, ann, seed)


def _names_device_space(f) -> bool:
    """Cheap test before :func:`enzyme_plugin.launches.programs.has_device_sites`: ``f`` names
    ``parallel_reduce`` or ``parallel_for`` (or an alias of them) and passes a keyword ``space``."""
    code = f.__code__
    if not any(isinstance(c, tuple) and "space" in c for c in code.co_consts):
        return False
    named = {"parallel_reduce", "parallel_for"}
    values = [f.__globals__.get(n) for n in code.co_names]
    values += [c.cell_contents for c in f.__closure__ or () if cell_filled(c)]
    return bool(named & {*code.co_names, *code.co_freevars}) or any(
        getattr(v, "__name__", None) in named and getattr(v, "__module__", None) == "gpucompiler.parallel"
        for v in values)


setattr(autodiff, PLUGIN_ATTRIBUTE, "enzyme")  # a call in compiled code enables the plugin

__all__ = ["autodiff"]
