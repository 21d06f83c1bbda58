"""``Module.drop``: a model its owner is done with is freed by reference counting, leaving the cyclic
collector nothing of it, and a compile drops the models it parsed.

The model is full of reference cycles (a value and the uses that name its users, an instruction and its
block, a block and its function, a function and its module, a lazy parse's bodies and their parser, a loop's
``phi`` and the values it feeds). Each test lets a model go with the collector off and asks the collector
afterwards what it found.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest

from enzyme_plugin import Active, Const, Reverse, autodiff
from gpucompiler import jit
from gpucompiler.llvm import Module, Use, parse

CORPUS = sorted((Path(__file__).resolve().parent / "corpus").glob("*.ll"))

SRC = """
%pair = type { i32, ptr }

@g = global i32 7, align 4
@fp = global ptr @later
@table = constant [2 x ptr] [ptr @later, ptr getelementptr inbounds (i8, ptr @g, i64 4)]
@alias = alias i32, ptr @g

define i32 @f(i32 %a, i32 %n) !dbg !3 {
entry:
  br label %loop

loop:
  %i = phi i32 [ 0, %entry ], [ %next, %loop ]
  %acc = phi i32 [ %a, %entry ], [ %sum, %loop ]
  %x = load i32, ptr getelementptr inbounds (i8, ptr @g, i64 4), align 4, !tbaa !5
  %y = call i32 @later(i32 %x)
  %sum = add i32 %acc, %y
  %next = add i32 %i, 1
  %more = icmp slt i32 %next, %n
  br i1 %more, label %loop, label %done

done:
  %w = call i32 @later(i32 %sum)
  ret i32 %w
}

define i32 @later(i32 %v) {
  %r = add i32 %v, 1
  ret i32 %r
}

declare void @ext(ptr)

!llvm.module.flags = !{!0}
!0 = !{i32 2, !"Debug Info Version", i32 3}
!1 = !DIFile(filename: "f.c", directory: "/")
!2 = distinct !DICompileUnit(language: DW_LANG_C99, file: !1, emissionKind: FullDebug)
!3 = distinct !DISubprogram(name: "f", scope: !1, file: !1, unit: !2)
!4 = !{!"int", !6, i64 0}
!5 = !{!4, !4, i64 0}
!6 = !{!"tbaa root"}
"""


@contextmanager
def collector_off() -> Iterator[list]:
    """The collector off inside; the list holds, afterwards, what a collection then found unreachable."""
    found: list = []
    gc.collect()
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield found
    finally:
        gc.set_debug(gc.DEBUG_SAVEALL)
        try:
            gc.collect()
            found.extend(gc.garbage)
            gc.garbage.clear()
        finally:
            gc.set_debug(0)
            if enabled:
                gc.enable()


def model_objects(objects: list) -> list:
    return [o for o in objects if type(o).__module__.startswith("gpucompiler.llvm")]


def first_questions(m) -> None:
    """Ask what makes a parse register its uses and parse its bodies (a lazy parse's pending state)."""
    for fn in m.functions.values():
        for inst in fn.instructions():
            assert inst.parent is not None
        if fn.blocks and fn.args:
            fn.args[0].uses  # noqa: B018
    m.globals["g"].uses  # noqa: B018


@pytest.mark.parametrize("lazy", [False, True])
@pytest.mark.parametrize("ask", [False, True], ids=["pending", "registered"])
def test_a_dropped_module_leaves_the_collector_nothing(lazy: bool, ask: bool):
    with collector_off() as without_drop:
        m = parse(SRC, lazy=lazy)
        if ask:
            first_questions(m)
        del m
    assert len(model_objects(without_drop)) > 10  # the model is cyclic: what the drop is for
    with collector_off() as found:
        m = parse(SRC, lazy=lazy)
        if ask:
            first_questions(m)
        m.drop()
        del m
    assert model_objects(found) == []


@pytest.mark.parametrize("path", CORPUS[:12], ids=lambda p: p.stem)
def test_corpus_modules_dropped(path: Path):
    text = path.read_text()
    with collector_off() as found:
        m = parse(text)
        for fn in m.functions.values():
            for inst in fn.instructions():
                inst.users  # noqa: B018
        m.drop()
        del m
    assert model_objects(found) == []


def test_a_dropped_module_is_empty_and_its_values_unusable():
    m = parse(SRC)
    f = m.functions["f"]
    inst = f.blocks[1].instructions[0]
    before = str(m)
    m.drop()
    assert not m.functions and not m.globals and not m.aliases and not m.metadata
    with pytest.raises(AttributeError):
        inst.operands  # noqa: B018
    with pytest.raises(AttributeError):
        inst.uses  # noqa: B018
    assert str(parse(before)) == before  # what was printed before reads back whole


def _loss(w, b, xs, n):
    acc = 0.0
    for i in range(n):
        r = w * xs[i] + b
        acc += r * r
    return acc / n


def _grad(w, b, xs, n):
    return autodiff(Reverse, _loss, Active(w), Active(b), Const(xs), Const(n))


def _grad_kept(w, b, xs, n):
    return autodiff(Reverse, _loss, Active(w), Active(b), Const(xs), Const(n))


def _garbage_of_a_compile(fn) -> list:
    xs = np.linspace(0.0, 1.0, 7)
    g = jit(fn, plugins=("enzyme",), cache=False)
    with collector_off() as found:
        dw, db = g(0.5, 0.25, xs, 7)
    r = 0.5 * xs + 0.25
    assert dw == pytest.approx(float(np.sum(2 * r * xs) / 7), rel=1e-12)
    assert db == pytest.approx(float(np.sum(2 * r) / 7), rel=1e-12)
    return model_objects(found)


def test_a_gradient_compile_leaves_the_collector_little_of_its_models(monkeypatch):
    """The deferred linking's model (lowered by the Enzyme plugin) and the AD engine's model are dropped
    when the compile is done with them: the collector's pass at the end of the compile finds a few of the
    engine's own objects (functions it took out of the module), not the models."""
    _garbage_of_a_compile(_grad)  # the first compile of the process: imports, tables made once
    with monkeypatch.context() as m:
        m.setattr(Module, "drop", lambda self: None)
        kept = _garbage_of_a_compile(_grad_kept)
    dropped = _garbage_of_a_compile(_grad_dropped)
    assert len(kept) > 1000
    assert len(dropped) < len(kept) / 20
    assert not any(isinstance(o, Use) for o in dropped)


def _grad_dropped(w, b, xs, n):
    return autodiff(Reverse, _loss, Active(w), Active(b), Const(xs), Const(n))
