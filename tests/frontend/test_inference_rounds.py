"""Type inference's rounds (gpucompiler/interpreter/infer.py): a call whose callee and argument values did
not change since the last round over a function's blocks is not asked its meaning again, and what may
change between rounds with the same arguments is asked again: a list typed by a later append, a
recursive callee's provisional return type, a type that rises around a loop. Results against CPython;
the typed IR against one inferred with every call asked in every round."""

from __future__ import annotations

import collections
import gc

import pytest

from gpucompiler import jit, types as T
from gpucompiler.interpreter import infer as I
from gpucompiler.source.spec import FunctionSpec
from gpucompiler.targets.native import NativeTarget


def loop20(n, x):
    s = 0.0
    t = 1
    for i in range(n):
        if i % 3 == 0:
            s += x * i
        elif i % 3 == 1:
            s -= x / (i + 1)
        else:
            t = (t * 7 + i) % 1000
        j = 0
        while j < 3:
            s += j * 0.5
            j += 1
        if s > 1e6:
            s = s / 2
        if t > 500:
            s += 1
    return s + t


def rises(n):
    s = 0
    k = 1
    for i in range(n):
        s = s + k
        k = k * 0.5 if i % 2 == 0 else k
    return s


def read_before_append(n):
    xs = []
    s = 0.0
    for i in range(n):
        if len(xs) > 0:
            s += xs[len(xs) - 1] * 2.0
        xs.append(i * 0.5)
    return s + len(xs)


def keys_before_insert(n):
    d = {}
    s = 0
    for i in range(n):
        if i - 1 in d:
            s += d[i - 1]
        d[i] = i * 3
    return s + len(d)


def halves(n):
    if n <= 0:
        return 0.5
    return halves(n - 1) * 0.5 + n


def even(n):
    return True if n == 0 else odd(n - 1)


def odd(n):
    return False if n == 0 else even(n - 1)


def parity_sum(n):
    s = 0
    for i in range(n):
        if even(i):
            s += i
    return s


def _typed(fn, argtypes):
    """The inferred frame's call results and value types, printed (one inference, a fresh interpreter)."""
    interp, frame = FunctionSpec(fn, argtypes).infer(NativeTarget(), (), True)
    out = []
    for f in [frame, *[f for f in interp.done.values() if f is not frame]]:
        for block in f.ir.blocks:
            for inst in [*block.phis, *block.insts]:
                res = f.calls.get(inst)
                out.append((f.ir.name, repr(f.types.get(inst)), None if res is None else
                            (repr(res.restype), res.rule_set, getattr(res.callee, "argtypes", None))))
        out.append((f.ir.name, "returns", repr(f.rettype)))
    return out


def test_a_call_is_asked_its_meaning_once_per_argument_values(monkeypatch):
    """loop20 runs five rounds over its blocks (its values rise around two loops); each of its 40 calls
    is asked again only when its callee or argument values changed (57 questions, not 190)."""
    asked: list = []
    at: list = []
    depth = [0]
    call, abstract_call = I.Interpreter._call, I.Interpreter.abstract_call

    def _call(self, frame, inst):
        at.append(inst)
        try:
            return call(self, frame, inst)
        finally:
            at.pop()

    def counted(self, fn, args):
        depth[0] += 1
        try:
            if depth[0] == 1:  # the call's own question, not those its rules ask in turn
                asked.append((at[-1], fn, tuple(args)))
            return abstract_call(self, fn, args)
        finally:
            depth[0] -= 1

    monkeypatch.setattr(I.Interpreter, "_call", _call)
    monkeypatch.setattr(I.Interpreter, "abstract_call", counted)
    FunctionSpec(loop20, (T.int64, T.float64)).infer(NativeTarget(), (), True)
    again = [k for k, n in collections.Counter(asked).items() if n > 1]
    assert asked and not again, f"{len(again)} calls asked again with the same arguments"


@pytest.mark.parametrize("fn, argtypes", [
    (loop20, (T.int64, T.float64)), (rises, (T.int64,)), (read_before_append, (T.int64,)),
    (keys_before_insert, (T.int64,)), (halves, (T.int64,)), (parity_sum, (T.int64,))])
def test_the_typed_ir_is_the_one_every_round_asking_every_call_gives(monkeypatch, fn, argtypes):
    settled = _typed(fn, argtypes)
    monkeypatch.setattr(I.Interpreter, "_settled", lambda self, result, inferred, deferred: False)
    assert settled == _typed(fn, argtypes)


@pytest.mark.parametrize("fn, args", [
    (loop20, (50, 1.5)), (loop20, (0, -2.0)), (rises, (9,)), (read_before_append, (7,)), (read_before_append, (0,)),
    (keys_before_insert, (6,)), (halves, (5,)), (parity_sum, (11,))])
def test_results_are_cpythons(fn, args):
    got, want = jit(fn, tier=False)(*args), fn(*args)
    assert got == want and type(got) is type(want), (got, want)


def test_the_collector_is_paused_while_a_job_is_inferred_and_then_as_it_was(monkeypatch):
    """Inference builds what lives as long as the job: cyclic collection waits for it (one pass of the
    second generation cost loop20's first call 1 ms); a caller's own pause is kept."""
    enabled = []
    lower = I.lower_function
    monkeypatch.setattr(I, "lower_function", lambda fn: (enabled.append(gc.isenabled()), lower(fn))[1])
    assert gc.isenabled()
    FunctionSpec(parity_sum, (T.int64,)).infer(NativeTarget(), (), True)
    assert enabled and not any(enabled) and gc.isenabled()  # parity_sum, even, odd (each a few times)
    gc.disable()
    try:
        FunctionSpec(rises, (T.int64,)).infer(NativeTarget(), (), True)
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_a_literal_is_made_once_per_specialization(monkeypatch):
    """Each literal's abstract value is made once per frame (inference's rounds and codegen read loop20's
    literals about 450 times), equal to the constant of its value: the typed IR is unchanged."""
    made = []
    const = I.const
    monkeypatch.setattr(I, "const", lambda value: (made.append(value), const(value))[1])
    _, frame = FunctionSpec(loop20, (T.int64, T.float64)).infer(NativeTarget(), (), True)
    literals = {v for block in frame.ir.blocks for inst in [*block.phis, *block.insts, block.term]
                for v in inst.operands if isinstance(v, I.IRConst)}
    assert len(literals) > 10
    assert all(frame.typeof(v) is frame.typeof(v) and frame.typeof(v) == const(v.value) for v in literals)
    assert len(made) < 1.5 * len(literals), (len(made), len(literals))  # with its other constants (was 312)
    assert jit(loop20, tier=False)(40, 0.75) == loop20(40, 0.75)
