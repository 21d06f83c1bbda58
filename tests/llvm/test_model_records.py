"""The IR model's modules make no ``attrs`` class or dataclass (one took ~0.3-0.5 ms to make, at each process's
first compile), and the records they define keep their value semantics."""

from __future__ import annotations

import dataclasses
import importlib
import pkgutil

import attrs

import gpucompiler.llvm as model
from gpucompiler.llvm.vector_variants import VectorVariant, keeper, name_variants


def test_the_models_modules_make_no_attrs_class_or_dataclass():
    made = []
    for info in pkgutil.iter_modules(model.__path__, model.__name__ + "."):
        module = importlib.import_module(info.name)
        made += [f"{info.name}.{name}" for name, value in vars(module).items()
                 if isinstance(value, type) and value.__module__ == info.name
                 and (attrs.has(value) or dataclasses.is_dataclass(value))]
    assert made == []


def test_a_vector_variant_compares_and_hashes_by_value():
    sin = VectorVariant("sin", "_ZGVdN4v_sin", 4, 1, "double")
    same = VectorVariant("sin", "_ZGVdN4v_sin", 4, 1, "double")
    assert sin == same and hash(sin) == hash(same) and len({sin, same}) == 1
    for other in (VectorVariant("cos", "_ZGVdN4v_sin", 4, 1, "double"),
                  VectorVariant("sin", "_ZGVbN2v_sin", 4, 1, "double"),
                  VectorVariant("sin", "_ZGVdN4v_sin", 2, 1, "double"),
                  VectorVariant("sin", "_ZGVdN4v_sin", 4, 2, "double"),
                  VectorVariant("sin", "_ZGVdN4v_sin", 4, 1, "float"),
                  ("sin", "_ZGVdN4v_sin", 4, 1, "double")):
        assert sin != other
    assert eval(repr(sin)) == sin
    assert sin.mangled() == "_ZGV_LLVM_N4v_sin(_ZGVdN4v_sin)"
    assert sin.declaration() == "declare <4 x double> @_ZGVdN4v_sin(<4 x double>)"
    text = "define double @f(double %x) {\n  %y = call double @sin(double %x)\n  ret double %y\n}\n"
    out, named = name_variants(text, lambda features: {"sin": (sin,)})
    assert named == [same]
    assert '"vector-function-abi-variant"="_ZGV_LLVM_N4v_sin(_ZGVdN4v_sin)"' in out
    assert keeper(named, "keep") == "@keep = constant [1 x ptr] [ptr @_ZGVdN4v_sin]\n"
