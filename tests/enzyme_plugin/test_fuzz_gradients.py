"""The gradient fuzzer (fuzz_gradients.py) in CI: seeded programs whose reverse and forward derivatives,
from Python and from @jit functions, match CPython's finite differences (or fail with a typed error at the
program's line); never wrong, untyped, a crash or a hang."""

import re
import types

import numpy as np

from tests.enzyme_plugin import fuzz_gradients as G


CI_SEEDS = list(range(24))


def test_generated_programs_differentiate_right_or_loud():
    results = G.run(CI_SEEDS, timeout=120.0, batch=24)
    counts = G.table(results)
    bad = {s: r for s, r in sorted(results.items()) if r[0] not in ("right", "typed", "skipped")}
    assert not bad, f"{counts}: " + "; ".join(f"seed {s}: {k}: {d}" for s, (k, d) in list(bad.items())[:10])
    assert counts["right"] >= 0.75 * len(results), counts  # most programs are checked, not refused


#: the index expressions users write, as the generator spells them
INDEX_FAMILIES = {
    "periodic": r"\[\(i\d+ [-+] \d\) % (len\(a\)|[ab]\.shape\[0\])\]",
    "clamped": r"\[(min|max)\(",
    "reversed": r"(len\(a\)|[ab]\.shape\[0\]) - 1 - i\d+\]|range\((len\(a\)|a\.shape\[0\]) - 1, -1, -[12]\)",
    "strided": r"\[\(\d \* i\d+( \+ 1)?\) %|range\((0, len\(a\), 2|1, n, 3)\)",
    "gathered": r"\[p\[",
    "if on the index": r"if (i\d+ %|i\d+ <|i\d+ ==|i\d+ \+ 1 ==|p\[i\d+\])",
}


def test_ci_seeds_cover_every_index_family_at_every_optimisation_level():
    """The CI seeds (above) generate each index family, and their @jit wrappers and kernels run at every
    optimisation level (a family missing would go unchecked in CI)."""
    for family, pattern in INDEX_FAMILIES.items():
        levels = {G.opt_level(s) for s in CI_SEEDS if re.search(pattern, G.generate(s)[0])}
        assert levels, family
    assert {G.opt_level(s) for s in CI_SEEDS} == {0, 1, 2, 3}


def test_the_finite_difference_check_tells_right_wrong_and_unsettled_apart():
    steps = np.array(G.STEPS)
    settled = [2.0 + 0.1 * h * h for h in steps]  # truncation error shrinking with h
    assert G._agrees(2.0, settled) == "ok"
    assert G._agrees(2.0 + 1e-3, settled) == "wrong"
    assert G._agrees(-2.0, settled) == "wrong"
    assert G._agrees(2.0, [1.0, 3.0, -4.0, 10.0]) == "noisy"  # a kink between the points: no verdict


def test_samples_near_a_branch_point_or_a_kink_are_told_apart():
    mod = types.ModuleType("oracle")
    exec(G._oracle("def f(x, y, a, b, n, p):\n    return abs(x) + y if x < 2.0 * y else y\n"), vars(mod))
    rec = G._Recorder()
    rec.install(mod)
    a = np.zeros(1)

    def trace(x, y=0.5):
        out = G._evaluate(mod, rec, x, y, a, a, 0, np.zeros(1, dtype=np.int64))
        assert out is not None
        return out[3]

    assert trace(1e-9) == trace(2e-9) != trace(-1e-9)  # abs's side
    assert trace(0.3) == trace(0.9) != trace(1.1)  # the comparison


def test_generation_is_seeded():
    assert G.generate(7) == G.generate(7) and G.generate(7) != G.generate(8)
