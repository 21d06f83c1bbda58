"""Scalar calls that name their SIMD versions, for LLVM's loop and SLP vectorizers.

LLVM vectorizes a loop that calls ``sin`` into calls of a vector function when
the call names one in its ``vector-function-abi-variant`` attribute (the
vector function ABI's mangling: ``_ZGV_LLVM_N4v_sin(_ZGVdN4v_sin)``) and the
vector function is declared in the module; clang's ``-fveclib`` gets there
through the TargetLibraryInfo, which llvmlite cannot configure. The vectorizer
only uses a variant where the scalar call reads and writes no memory: a libm
call that may set ``errno`` stays scalar.

:func:`name_variants` adds the attribute to every such call of the module's
text, declares the versions it named and returns them; :func:`keeper`
keeps them declared until the vectorizer has run (global DCE drops unused
declarations before it), in a constant the target lets go after it with no
edit of the module's text.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence

ATTRIBUTE = "vector-function-abi-variant"
"""LLVM's call-site attribute naming a call's vector versions."""


class VectorVariant:
    """One vector version of a scalar function: ``lanes`` elements of ``element`` per argument. Compared and
    hashed by value; a plain class (an ``attrs`` class cost ~0.5 ms to make, at a first compile's import)."""

    __slots__ = ("scalar", "name", "lanes", "arity", "element")

    def __init__(self, scalar: str, name: str, lanes: int, arity: int, element: str):
        #: the name the calls use: ``sin``, ``sinf``, ``llvm.sin.f64``
        self.scalar = scalar
        #: the vector function's symbol: ``_ZGVdN4v_sin``
        self.name = name
        #: elements per vector (the vectorization factor it serves)
        self.lanes = lanes
        #: how many vector arguments it takes (each ``<lanes x element>``)
        self.arity = arity
        #: the LLVM element type: ``double`` or ``float``
        self.element = element

    def _fields(self) -> tuple[str, str, int, int, str]:
        return self.scalar, self.name, self.lanes, self.arity, self.element

    def __eq__(self, other: object) -> bool:
        return type(other) is VectorVariant and self._fields() == other._fields()

    def __hash__(self) -> int:
        return hash(self._fields())

    def __repr__(self) -> str:
        return "VectorVariant(scalar={!r}, name={!r}, lanes={!r}, arity={!r}, element={!r})".format(*self._fields())

    def mangled(self) -> str:
        """The attribute's entry: ``_ZGV_LLVM_N4v_sin(_ZGVdN4v_sin)`` (unmasked, every argument a vector)."""
        return f"_ZGV_LLVM_N{self.lanes}{'v' * self.arity}_{self.scalar}({self.name})"

    def declaration(self) -> str:
        """``declare <4 x double> @_ZGVdN4v_sin(<4 x double>)``."""
        vector = f"<{self.lanes} x {self.element}>"
        return f"declare {vector} @{self.name}({', '.join([vector] * self.arity)})"


_CALL = re.compile(r"\bcall\b[^\n]*?@(?P<name>\"[^\"]+\"|[-\w.$]+)\((?:[^()\n]|\([^()\n]*\))*\)")
_DEFINE = re.compile(r"\ndefine\b[^\n]*\{\n")
_DECLARE = re.compile(r"\ndeclare [^\n]*?@([-\w.$]+)\(")
_GROUP = re.compile(r"\nattributes #(\d+) = \{([^\n]*)\}")
_CPU = re.compile(r'"target-cpu"')
_FEATURES = re.compile(r'"target-features"="([^"]*)"')
_VECTOR_INTRINSIC = re.compile(r"(llvm\.[\w.]+)\.v(\d+)(f64|f32)")
_NAME = re.compile(r'@("[^"]+"|[-\w.$]+)\(')

Variants = Mapping[str, Sequence[VectorVariant]]
"""Scalar call name -> its vector versions."""


def name_variants(text: str, variants: Callable[[str | None], Variants]) -> tuple[str, list[VectorVariant]]:
    """``text`` (LLVM IR) with the math calls given SIMD versions, declared, and the versions named (empty,
    with ``text`` unchanged, when none was); :func:`keeper` keeps them until the vectorizer runs.

    ``variants(features)`` gives the versions for code with a function's own ``"target-features"``
    (clang's), ``variants(None)`` for code without (the target machine's): a vector argument's
    registers follow the caller's features. A function with a CPU but no features of its own is left
    alone. A call of a scalar name carries the attribute that names its versions; a call of the vector
    form of a math intrinsic (``llvm.sin.v8f64``, made by a vectorizer that ran before, which the code
    generator would split into scalar calls) calls the version of its width instead.

    Only the lines naming a function the table has are read by the call pattern (one line is one
    instruction in LLVM's print): a large module's other calls cost a scan for names, not a match each."""
    text_nl = "\n" + text  # every pattern starts at a line's start: a literal prefix the scanner skips to
    used: dict[str, VectorVariant] = {}
    declared = {m.group(1) for m in _DECLARE.finditer(text_nl)}
    functions = [(m.start(), m.end(), text_nl.find("\n}\n", m.end() - 1)) for m in _DEFINE.finditer(text_nl)]
    groups: dict[str, str] | None = None
    edits: list[tuple[int, int, str]] = []  # (start, end, new text) of the lines changed, in order
    for head, body, end in functions:
        if end < 0:  # no closing line: not a function LLVM printed
            continue
        header = text_nl[head + 1:body - 1]
        refs = re.findall(r"#(\d+)", header)
        if refs and groups is None:
            groups = {m.group(1): m.group(2) for m in _GROUP.finditer(text_nl)}
        attributes = header + "".join((groups or {}).get(g, "") for g in refs)
        features = _FEATURES.search(attributes)
        if features is None and _CPU.search(attributes):
            continue
        table = variants(features.group(1) if features else None)
        if not table:
            continue
        lines = sorted({text_nl.rfind("\n", 0, m.start()) + 1 for m in _NAME.finditer(text_nl, head + 1, end)
                        if _changes(m.group(1).strip('"'), table)})
        for start in lines:
            stop = text_nl.find("\n", start)
            line = text_nl[start:stop]
            new = _CALL.sub(lambda call, table=table: _annotate(call, table, used), line)
            if new != line:
                edits.append((start, stop, new))
    if not used:
        return text, []
    pieces, at = [], 1
    for start, stop, new in edits:
        pieces += [text_nl[at:start], new]
        at = stop
    out = "".join(pieces) + text_nl[at:]
    missing = [v.declaration() for v in used.values() if v.name not in declared]
    return out + "".join(f"\n{d}\n" for d in missing), list(used.values())


def _changes(name: str, table: Variants) -> bool:
    """Whether a call of ``name`` gets versions from ``table``: a scalar name it has, or the vector form of a
    math intrinsic with a version of that width."""
    if name in table:
        return True
    vector = _VECTOR_INTRINSIC.fullmatch(name)
    return bool(vector) and any(v.lanes == int(vector.group(2))
                                for v in table.get(f"{vector.group(1)}.{vector.group(3)}", ()))


def _annotate(m: re.Match[str], table: Variants, used: dict[str, VectorVariant]) -> str:
    """The call ``m`` naming its versions in ``table`` (recorded in ``used``), or calling the version of its
    vector intrinsic's width; unchanged when ``table`` has none."""
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


def keeper(named: Sequence[VectorVariant], name: str) -> str:
    """The line defining the constant ``@name`` whose initializer keeps ``named`` declared (an external
    definition: no pass deletes it or them), to append to the text :func:`name_variants` gave. Once the
    vectorizer has run, ``@name`` made internal is global DCE's to drop, with the versions no call uses."""
    return f"@{name} = constant [{len(named)} x ptr] [{', '.join(f'ptr @{v.name}' for v in named)}]\n"


__all__ = ["ATTRIBUTE", "Variants", "VectorVariant", "keeper", "name_variants"]
