"""The language's AD rules (interpreter rules of the Enzyme plugin): activities as values, ``autodiff`` as a
deferred job.

``Active(x)``, ``Const(v)``, ``Duplicated(a, da)``, ``DuplicatedNoNeed(a, da)``
are typed as :class:`ActivityType` (a tuple of the primal and its shadow,
tagged with the activity). ``autodiff(mode, f, *args)`` defers ``f`` under
:class:`EnzymeMeta` (:func:`gpucompiler.interpreter.deferred.deferred_call`;
the nested job keeps the target's overlays) and lowers to::

    %f = call ptr @gpuc.lookup(ptr @"gpuc.job.<id>")
    %r = call {double} (ptr, ...) @gpuc.enzyme.autodiff(ptr %f, i32 <mode>, i32 <activity>, <values>...)

which the pipeline half (:mod:`enzyme_plugin.passes.lower`) turns into
Enzyme's C interface after the nested job is linked.

The rules, each module registering its own into :mod:`.sets`' rule sets (they key on distinct callees, so
their order does not matter):

* :mod:`.activities`: ``Const``, ``Active``, ``Duplicated`` & co made in compiled code;
* :mod:`.autodiff`: ``autodiff`` (lowered by :mod:`.lowering`), ``set_runtime_activity``, ``autodiff_thunk``
  refused;
* :mod:`.thunks`: split-mode thunks called in compiled code;
* :mod:`.launches`: a kernel launch in compiled code, refused with the launch tape's hint;
* :mod:`.custom`: ``custom_rule``, user-given derivatives (nested jobs only); :mod:`.linalg`, the
  derivatives of the matrix loops.
"""


from __future__ import annotations

from . import activities, autodiff, custom, launches, linalg, thunks  # noqa: F401  (each registers its rules)
from .sets import MARKER, nested_rules, rules
from .types import ActivityType, EnzymeMeta, result_type, width

__all__ = ["rules", "nested_rules", "ActivityType", "EnzymeMeta", "MARKER", "result_type", "width"]
