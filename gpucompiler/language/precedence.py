"""The base rule set, which every job uses, and the precedence of its parts: stated here, once.

:data:`PRECEDENCE` lists the modules that add rules to :data:`base`, in order
(:class:`~gpucompiler.interpreter.rules.RuleSet`'s ``parts``): call handlers
are asked in this order and the first claim wins; of several definitions of
one function (``operator.add`` of numbers, then of complex numbers), those of
the later module are tried first. The order the modules are imported in
changes nothing (``tests/test_rule_precedence.py`` imports them shuffled),
and a rule from a module not listed here is refused when it is added.

Why this order: the numbers' and the containers' handlers are asked before
NumPy's; NumPy's functions (expressions, reductions, casts, joins, sorts,
``np.linalg``, ``np.random``) claim their keyword calls before the
constructors (``creation``, near the end) refuse the rest; the lists', dicts'
and records' handlers follow, then structured arrays' rules (the one module
that assigns attributes); ``gpucompiler.parallel``'s (``parallel_for`` and
``parallel_reduce`` called in compiled code) comes last.
"""

from ..interpreter.rules import RuleSet, register

_L = "gpucompiler.language."

PRECEDENCE: tuple[str, ...] = (
    _L + "python.numbers",
    _L + "python.powers",
    _L + "python.containers",
    _L + "numpy.ufuncs",
    _L + "numpy.arrayexpr",
    _L + "numpy.linalg.blas",
    _L + "numpy.reductions",
    _L + "numpy.views",
    _L + "numpy.npcast",
    _L + "numpy.npcumul",
    _L + "numpy.npstats",
    _L + "numpy.npsearch",
    _L + "numpy.npmatrix",
    _L + "numpy.npjoin",
    _L + "numpy.npmethods",
    _L + "numpy.npnonzero",
    _L + "numpy.selection",
    _L + "numpy.sort.npsort",
    _L + "numpy.sort.npsorted",
    _L + "numpy.linalg.nplinalg",
    _L + "numpy.random.nprandomstate",
    _L + "numpy.random.nprandom",
    _L + "python.lists",
    _L + "python.dicts",
    _L + "numpy.fancy",
    _L + "python.numbatyped",
    _L + "python.complexes",
    _L + "python.output",
    _L + "python.parallel",
    _L + "python.pyfuncs",
    _L + "python.records",
    _L + "numpy.structured",
    _L + "numpy.creation",
    _L + "math.mathlib",
    "gpucompiler.parallel",
)

base = register(RuleSet("base", builtin=True, parts=PRECEDENCE))
"""The language's rules: Python, ``math`` and NumPy (a target's overlays are asked before them)."""
