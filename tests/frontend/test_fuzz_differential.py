"""The differential fuzzer (fuzz_programs.py) in CI: a few hundred seeded programs, each right
(CPython's values or exception types) or a typed error; never wrong, untyped, a crash or a hang."""

from tests.frontend import fuzz_programs as F


def test_generated_programs_are_right_or_loud():
    results = F.run(list(range(240)), timeout=60.0, batch=120)
    counts = F.table(results)
    bad = {s: r for s, r in sorted(results.items()) if r[0] not in ("right", "typed")}
    assert not bad, f"{counts}: " + "; ".join(f"seed {s}: {k}: {d}" for s, (k, d) in list(bad.items())[:10])
    assert counts["right"] >= 0.8 * len(results), counts  # the programs mostly compile and run


def test_the_classifier_tells_wrong_values_crashes_and_typed_errors_apart():
    ok = ("ok", (1.0, [0.5]), False)
    assert F.classify([ok], [("ok", (1.0, [0.5]))]) == ("right", "")
    assert F.classify([ok], [("ok", (2.0, [0.5]))])[0] == "wrong"
    assert F.classify([ok], [("ok", (1.0, [0.25]))])[0] == "wrong"  # the array too
    assert F.classify([("raises", ValueError, ValueError(), False)], [("ok", (1.0, []))])[0] == "wrong"
    big = ("ok", (2**70, []), False)
    assert F.classify([big], [("raises", OverflowError, OverflowError())])[0] == "typed"
    nan = ("ok", (float("nan"), []), False)
    assert F.classify([nan], [("ok", (float("nan"), []))])[0] == "right"
    assert F.classify([("ok", (-0.0, []), False)], [("ok", (0.0, []))])[0] == "wrong"


def test_generation_is_seeded():
    assert F.generate(7) == F.generate(7) and F.generate(7) != F.generate(8)


def test_generated_dtype_programs_match_numpy_and_cpython():
    results = F.run(list(range(80)), timeout=60.0, batch=80, family="dtypes")
    counts = F.table(results)
    bad = {s: r for s, r in sorted(results.items()) if r[0] not in ("right", "typed")}
    assert not bad, f"{counts}: " + "; ".join(f"seed {s}: {k}: {d}" for s, (k, d) in list(bad.items())[:10])
    assert counts["right"] >= 0.8 * len(results), counts


def test_generated_array_programs_match_numpy():
    results = F.run(list(range(40)), timeout=120.0, batch=40, family="arrays")
    counts = F.table(results)
    bad = {s: r for s, r in sorted(results.items()) if r[0] not in ("right", "typed")}
    assert not bad, f"{counts}: " + "; ".join(f"seed {s}: {k}: {d}" for s, (k, d) in list(bad.items())[:10])
    assert counts["right"] >= 0.8 * len(results), counts
