"""Scalar calls that name their SIMD versions, for LLVM's loop and SLP vectorizers.

LLVM vectorizes a loop that calls ``sin`` into calls of a vector function when
the call names one in its ``vector-function-abi-variant`` attribute (the
vector function ABI's mangling: ``_ZGV_LLVM_N4v_sin(_ZGVdN4v_sin)``) and the
vector function is declared in the module; clang's ``-fveclib`` gets there
through the TargetLibraryInfo, which llvmlite cannot configure. The vectorizer
only uses a variant where the scalar call reads and writes no memory: a libm
call that may set ``errno`` stays scalar.

:func:`name_variants` adds the attribute to every such call of the module's
text, declares the versions it named and returns them; :func:`declarations`
keeps them in ``@llvm.compiler.used`` until the vectorizer has run (global DCE
drops unused declarations before it), and :func:`release` lets them go after it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence

import attrs

ATTRIBUTE = "vector-function-abi-variant"
"""LLVM's call-site attribute naming a call's vector versions."""


@attrs.frozen
class VectorVariant:
    """One vector version of a scalar function: ``lanes`` elements of ``element`` per argument."""

    scalar: str
    """the name the calls use: ``sin``, ``sinf``, ``llvm.sin.f64``"""
    name: str
    """the vector function's symbol: ``_ZGVdN4v_sin``"""
    lanes: int
    """elements per vector (the vectorization factor it serves)"""
    arity: int
    """how many vector arguments it takes (each ``<lanes x element>``)"""
    element: str
    """the LLVM element type: ``double`` or ``float``"""

    def mangled(self) -> str:
        """The attribute's entry: ``_ZGV_LLVM_N4v_sin(_ZGVdN4v_sin)`` (unmasked, every argument a vector)."""
        return f"_ZGV_LLVM_N{self.lanes}{'v' * self.arity}_{self.scalar}({self.name})"

    def declaration(self) -> str:
        """``declare <4 x double> @_ZGVdN4v_sin(<4 x double>)``."""
        vector = f"<{self.lanes} x {self.element}>"
        return f"declare {vector} @{self.name}({', '.join([vector] * self.arity)})"


_CALL = re.compile(r"\bcall\b[^\n]*?@(?P<name>\"[^\"]+\"|[-\w.$]+)\((?:[^()\n]|\([^()\n]*\))*\)")
_DEFINE = re.compile(r"^define\b[^\n]*\{\n.*?^\}\n", re.M | re.S)
_GROUP = re.compile(r"^attributes #(\d+) = \{([^\n]*)\}", re.M)
_CPU = re.compile(r'"target-cpu"')
_FEATURES = re.compile(r'"target-features"="([^"]*)"')
_VECTOR_INTRINSIC = re.compile(r"(llvm\.[\w.]+)\.v(\d+)(f64|f32)")

Variants = Mapping[str, Sequence[VectorVariant]]
"""Scalar call name -> its vector versions."""


def name_variants(text: str, variants: Callable[[str | None], Variants]) -> tuple[str, list[VectorVariant]]:
    """``text`` (LLVM IR) with the math calls given SIMD versions, declared, and the versions named (empty,
    with ``text`` unchanged, when none was); :func:`declarations` keeps them until the vectorizer runs.

    ``variants(features)`` gives the versions for code with a function's own ``"target-features"``
    (clang's), ``variants(None)`` for code without (the target machine's): a vector argument's
    registers follow the caller's features. A function with a CPU but no features of its own is left
    alone. A call of a scalar name carries the attribute that names its versions; a call of the vector
    form of a math intrinsic (``llvm.sin.v8f64``, made by a vectorizer that ran before, which the code
    generator would split into scalar calls) calls the version of its width instead."""
    groups = {m.group(1): m.group(2) for m in _GROUP.finditer(text)}
    used: dict[str, VectorVariant] = {}

    def annotate(m: re.Match[str], table: Variants) -> str:
        name = m.group("name").strip('"')
        found = table.get(name)
        if found:
            used.update((v.name, v) for v in found)
            return f'{m.group(0)} "{ATTRIBUTE}"="{",".join(v.mangled() for v in found)}"'
        vector = _VECTOR_INTRINSIC.fullmatch(name)
        wanted = vector and (f"{vector.group(1)}.{vector.group(3)}", int(vector.group(2)))
        one = wanted and next((v for v in table.get(wanted[0], ()) if v.lanes == wanted[1]), None)
        if not one:
            return m.group(0)
        used[one.name] = one
        start, end = m.span("name")
        return m.group(0)[:start - m.start()] + one.name + m.group(0)[end - m.start():]

    def function(m: re.Match[str]) -> str:
        header = m.group(0).split("\n", 1)[0]
        attributes = header + "".join(groups.get(g, "") for g in re.findall(r"#(\d+)", header))
        features = _FEATURES.search(attributes)
        if features is None and _CPU.search(attributes):
            return m.group(0)
        table = variants(features.group(1) if features else None)
        return _CALL.sub(lambda call: annotate(call, table), m.group(0)) if table else m.group(0)

    out = _DEFINE.sub(function, text)
    if not used:
        return text, []
    declared = set(re.findall(r"^declare [^\n]*?@([-\w.$]+)\(", out, re.M))
    missing = [v.declaration() for v in used.values() if v.name not in declared]
    return out + "".join(f"\n{d}\n" for d in missing), list(used.values())


def declarations(named: Sequence[VectorVariant]) -> str:
    """A module declaring ``named`` and keeping them in ``@llvm.compiler.used``, to link into the module
    whose calls name them (appending globals concatenate)."""
    refs = ", ".join(f"ptr @{v.name}" for v in named)
    return "\n".join([*(v.declaration() for v in named),
                      f'@llvm.compiler.used = appending global [{len(named)} x ptr] [{refs}], '
                      'section "llvm.metadata"', ""])


_KEPT = re.compile(r'^@llvm\.compiler\.used = appending global \[\d+ x ptr\] \[([^\]\n]*)\], section "llvm\.metadata"\n',
                   re.M)


def release(text: str, named: Callable[[str], bool]) -> str | None:
    """``text`` with the functions ``named`` accepts out of ``@llvm.compiler.used``, and their declarations no
    call uses dropped (the vectorizer has run; no loader meets the list), None when none is in it."""
    kept = _KEPT.search(text)
    if kept is None:
        return None
    refs = [r.strip() for r in kept.group(1).split(",")]
    rest = [r for r in refs if not named(r.removeprefix("ptr @").strip('"'))]
    if len(rest) == len(refs):
        return None
    line = (f'@llvm.compiler.used = appending global [{len(rest)} x ptr] [{", ".join(rest)}], '
            'section "llvm.metadata"\n') if rest else ""
    text = text[:kept.start()] + line + text[kept.end():]
    unused = {r.removeprefix("ptr @") for r in refs if r not in rest}
    unused = {n for n in unused if text.count(f"@{n}(") == 1}  # its declaration alone
    return re.sub(r"^declare [^\n]*?@([-\w.$]+)\([^\n]*\n", lambda m: "" if m.group(1) in unused else m.group(0),
                  text, flags=re.M)


__all__ = ["ATTRIBUTE", "Variants", "VectorVariant", "declarations", "name_variants", "release"]
