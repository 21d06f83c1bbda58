"""The C gradient fuzzer (fuzz_c.py): seeded C functions through clang-19 at -O0..-O3, differentiated through
Enzyme's C interface; gradient, split-mode gradient and forward tangent against finite differences (skipped
without clang-19). Its check is checked to see a wrong derivative."""

import pytest

from tests.enzyme import fuzz_c as C
from tests.frontend import fuzz_programs as F

pytestmark = pytest.mark.skipif(C.clang() is None, reason="clang-19 not found (apt-get install clang-19, or set CLANG)")


def test_generated_c_programs_differentiate_right():
    results = F.run(list(range(8)), timeout=300.0, batch=8, family="clang")
    bad = {s: r for s, r in sorted(results.items()) if r[0] != "right"}
    assert not bad, "; ".join(f"seed {s}: {k}: {d}" for s, (k, d) in bad.items())


def test_a_wrong_derivative_is_told_apart(tmp_path, monkeypatch):
    """A program whose ``grad`` adds one to the first adjoint is ``wrong``."""
    wrong = C.ENTRIES.replace("void grad(double *x, double *dx, int n) {",
                              "void grad(double *x, double *dx, int n) { dx[0] += 1.0;")
    monkeypatch.setattr(C, "ENTRIES", wrong)
    kind, detail = C.run_c_program(0, str(tmp_path))
    assert kind == "wrong" and "split gradient" in detail
