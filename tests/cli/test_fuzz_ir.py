"""The IR fuzzer (fuzz_ir.py) in CI: mutated corpus modules through ``gpuc compile-ir`` and ``gpuc enzyme``,
each run succeeding or failing with one typed error line; never a signal, an exit from inside LLVM, a
traceback or a hang. ``GPUC_FUZZ_IR_MUTANTS=2000`` runs the long mode (docs/benchmarks.md)."""

from __future__ import annotations

import os

import pytest

from tests.cli import fuzz_ir as F

LONG = int(os.environ.get("GPUC_FUZZ_IR_MUTANTS", "0"))


def _check(results) -> dict[str, int]:
    counts = F.table(results)
    bad = {s: r for s, r in sorted(results.items()) if r[0] not in ("ok", "typed")}
    assert not bad, f"{counts}: " + "; ".join(f"seed {s}: {k}: {d}: {detail[-200:]}"
                                              for s, (k, d, detail) in list(bad.items())[:5])
    return counts


def test_mutated_modules_succeed_or_fail_with_a_typed_error():
    counts = _check(F.run(list(range(48)), jobs=2, batch=24))
    assert counts["ok"] >= 2 and counts["typed"] >= 24, counts  # some mutants compile, most are refused


def test_a_few_mutants_as_separate_gpuc_processes():
    """The same verdicts from real ``python -m gpucompiler`` processes (the exit status is the process's)."""
    _check(F.run([3, 11, 25, 40], subprocesses=True))


@pytest.mark.slow
@pytest.mark.skipif(not LONG, reason="set GPUC_FUZZ_IR_MUTANTS (docs/benchmarks.md: 2000)")
def test_long_mode():
    _check(F.run(list(range(1000, 1000 + LONG)), jobs=2, batch=100))


def test_the_classifier_tells_typed_errors_from_tracebacks_exits_and_signals():
    assert F.classify(0, "") == "ok"
    assert F.classify(1, "gpuc: error: x.ll:3: expected type\n") == "typed"
    assert F.classify(1, "gpuc: error: internal error (KeyError: 'k') while compiling x.ll: ...\n") == "internal"
    assert F.classify(1, "Traceback (most recent call last):\n  ...\nKeyError: 'k'\n") == "traceback"
    assert F.classify(1, "LLVM ERROR: 64-bit code requested\n") == "untyped"  # LLVM's exit(1)
    assert F.classify(-6, "LLVM ERROR: Broken module found\n") == "signal"
    assert F.classify("hang", "") == "hang"


def test_mutants_are_seeded_and_cover_every_mutation():
    assert F.mutant(7) == F.mutant(7) and F.mutant(7) != F.mutant(8)
    described = " ".join(F.mutant(s)[1] for s in range(200))
    for name in [*F.MUTATIONS, "bytes"]:
        assert name in described
    assert any(b"\xff" in F.mutant(s)[0] or b"\x00" in F.mutant(s)[0] for s in range(200))
