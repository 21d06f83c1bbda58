"""Facts about a module that the targets' ``validate`` hooks judge.

:class:`ModuleFacts` reads every instruction once, from the module's printed
text, and records what validation rules ask about: which declarations are
used and by whom, the call graph, dynamic allocations, and constant
pointers; and what the cache's serialisable check asks about the rest of the
module (its declarations, constant addresses in globals' initializers, the
names it binds to addresses). Each rule then returns ``(KIND, message)``
pairs; the driver raises them together.
"""

from __future__ import annotations

import re

import attrs
import llvmlite.binding as llvm

from ..errors import ErrorKind
from ..llvm.binding import ADDRESSES, address_bindings
from ..graphs import find_cycle, strongly_connected_components


#: C allocation functions: dynamic memory the GPU target rejects.
ALLOCATION_FUNCTIONS = frozenset({"malloc", "calloc", "realloc", "free", "aligned_alloc",
                                  "posix_memalign"})

_CALLS = ("call", "invoke", "callbr")

#: metadata the AD engine attaches to the malloc/free of the cache arrays of its loop tapes
TAPE_METADATA = "!gpuc.ad.tape"
#: allocation functions a device has (PTX: the malloc/free system calls): accepted for the AD tape only
TAPE_FUNCTIONS = frozenset({"malloc", "free"})


@attrs.define
class ModuleFacts:
    """What :func:`ModuleFacts.of` found in one module."""

    #: name of each declaration used -> names of the functions using it
    external_uses: dict[str, list[str]] = attrs.field(factory=dict)
    #: direct calls between defined functions: caller -> callees
    calls: dict[str, set[str]] = attrs.field(factory=dict)
    #: ``(function, description)`` of each alloca whose size is not a constant
    dynamic_allocas: list[tuple[str, str]] = attrs.field(factory=list)
    #: ``(function, instruction text)`` of each inttoptr of a constant address
    pointer_constants: list[tuple[str, str]] = attrs.field(factory=list)
    #: ``(function, callee)`` of each malloc/free the AD engine marked as a tape allocation
    tape_allocations: list[tuple[str, str]] = attrs.field(factory=list)
    #: names of the functions and global variables declared (not defined), in the module's order
    declarations: list[str] = attrs.field(factory=list)
    #: ``(global, its line)`` of each global variable whose initializer holds a constant address
    global_pointer_constants: list[tuple[str, str]] = attrs.field(factory=list)
    #: the names the module binds to addresses (:data:`~gpucompiler.llvm.binding.ADDRESSES`) -> address
    addresses: dict[str, int] = attrs.field(factory=dict)

    @classmethod
    def of(cls, ref: llvm.ModuleRef, text: str | None = None) -> ModuleFacts:
        """The facts of ``ref``, read from its printed text (``text`` when the caller has printed it):
        one line per instruction or global, no call into LLVM per instruction or operand (which cost a
        compile more than its optimisation)."""
        facts = cls(declarations=[g.name for g in (*ref.functions, *ref.global_variables) if g.is_declaration])
        declared = set(facts.declarations)
        text = str(ref) if text is None else text
        calls: list[tuple[str, str]] = []
        fname = None
        bound = False
        for line in text.splitlines():
            if fname is None:
                if line.startswith("define "):
                    fname = _callee(line) or ""
                    facts.calls[fname] = set()
                elif line.startswith("@") and "inttoptr" in line:
                    facts._visit_global(line)
                elif line.startswith("!"):
                    bound = bound or line.startswith(f"!{ADDRESSES} = ")
            elif line == "}":
                fname = None
            elif "@" in line or "alloca" in line or "inttoptr" in line:
                callee = facts._visit(fname, line, declared)
                if callee is not None:
                    calls.append((fname, callee))
        for caller, callee in calls:
            if callee in facts.calls:
                facts.calls[caller].add(callee)
        if bound:
            facts.addresses = address_bindings(text)
        return facts

    def _visit_global(self, line: str) -> None:
        """Record global variable ``line``'s constant address, if its initializer holds one."""
        head = _GLOBAL_VARIABLE.match(line)
        if head is not None and _INTTOPTR_CONSTANT.search(_code(line[head.end():])):
            self.global_pointer_constants.append((_unquote(head.group(1)), line.strip()))

    def _visit(self, fname: str, line: str, declared: set[str]) -> str | None:
        """Record what instruction ``line`` of function ``fname`` uses; returns the global it calls."""
        head = _OPCODE.match(line)
        if head is None:  # a label, a debug record (#dbg_...) or a comment: no operands
            return None
        opcode, code = head.group(1), _code(line[head.end():])
        if opcode == "alloca" and _DYNAMIC_COUNT.search(code):
            self.dynamic_allocas.append((fname, line.strip()))
        operand = _CAST_OPERAND.match(code) if opcode == "inttoptr" else None
        if (operand is not None and not operand.group(1).startswith("%")) or "inttoptr (" in code:
            self.pointer_constants.append((fname, line.strip()))
        callee = _callee(code) if opcode in _CALLS else None
        skip = None
        if callee in TAPE_FUNCTIONS and TAPE_METADATA in code:
            self.tape_allocations.append((fname, callee))
            skip = callee  # the callee is not a use of dynamic memory by the user's code
        for name in _names(code):
            if name in declared and name != skip:
                users = self.external_uses.setdefault(name, [])
                if fname not in users:
                    users.append(fname)
        return callee

    # -- rules ----------------------------------------------------------------
    def pointer_constant_errors(self) -> list[tuple[str, str]]:
        """POINTER_CONSTANT: absolute addresses baked into the IR."""
        return [(ErrorKind.POINTER_CONSTANT,
                 f"constant address in @{fn}: `{text}`; runtime pointers make the IR uncacheable "
                 "and wrong in another process: reference the object by name (an external "
                 "global or function) instead") for fn, text in self.pointer_constants]

    def recursion_errors(self) -> list[tuple[str, str]]:
        """RECURSION: every cycle of the call graph, reported once per strongly connected set."""
        errors: list[tuple[str, str]] = []
        if not any(self.calls.values()):  # no call between defined functions: no cycle
            return errors
        graph = {caller: sorted(callees) for caller, callees in sorted(self.calls.items())}
        for scc in sorted(strongly_connected_components(graph), key=min):
            first = min(scc)
            if len(scc) == 1 and first not in self.calls[first]:
                continue
            cycle = find_cycle({a: [b for b in graph[a] if b in scc] for a in scc}, first)
            assert cycle, "a strongly connected set with an edge has a cycle"
            path = " -> ".join("@" + a for a in cycle) + f" -> @{cycle[0]}"
            errors.append((ErrorKind.RECURSION, f"call graph cycle {path}; the GPU target does not "
                                        "support recursion: rewrite it as a loop"))
        return errors

    def allocation_errors(self) -> list[tuple[str, str]]:
        """DYNAMIC_ALLOCATION: heap allocation calls and allocas of non-constant size."""
        errors: list[tuple[str, str]] = [(ErrorKind.DYNAMIC_ALLOCATION,
                   f"call to @{name} in {', '.join('@' + u for u in users)}; dynamic memory is "
                   "not supported on this target: allocate buffers on the host and pass them in")
                  for name, users in sorted(self.external_uses.items()) if name in ALLOCATION_FUNCTIONS]
        errors += [(ErrorKind.DYNAMIC_ALLOCATION,
                    f"alloca of non-constant size in @{fn}: `{text}`; use a constant size")
                   for fn, text in self.dynamic_allocas]
        return errors


# -- reading instructions from the printed module ---------------------------------
# LLVM prints one instruction per line. A global's name is ``@name`` or ``@"quoted"`` (a
# backslash printed ``\\``, other bytes outside the plain set ``\XX``). Strings (``c"..."``,
# ``!"..."``, inline assembly) hold any character but ``"`` (printed ``\22``), so a scan that
# steps over them whole cannot take their contents for a name or a keyword.
_TOKEN = re.compile(r'[@%]("[^"]*"|[-\w$.]+)(\()?|"[^"]*"|;.*')
_OPCODE = re.compile(r'\s+(?:%(?:"[^"]*"|[-\w$.]+)\s*=\s*)?(?:(?:tail|musttail|notail)\s+)?([a-z]\w*)\b')
_DYNAMIC_COUNT = re.compile(r",\s*i\d+\s+%")
_ESCAPE = re.compile(rb"\\(\\|[0-9A-Fa-f]{2})")
#: the operand of an ``inttoptr`` instruction, after its type (a vector type has spaces)
_CAST_OPERAND = re.compile(r"\s*(?:<[^>]*>|\S+)\s+(\S+)")
#: a global variable's line up to its type: its name, then linkage and other keywords, then the kind
_GLOBAL_VARIABLE = re.compile(r'@("[^"]*"|[-\w$.]+) = (?:[\w()]+ )*?(?:global|constant) ')
#: an inttoptr constant expression of a constant integer
_INTTOPTR_CONSTANT = re.compile(r"inttoptr\s*\(\s*i\d+\s+(-?\d+)")


def _unquote(name: str) -> str:
    """The name LLVM printed as ``name`` (plain, or ``"quoted"`` with ``\\\\`` and ``\\XX`` escapes)."""
    if not name.startswith('"'):
        return name
    raw = _ESCAPE.sub(lambda m: b"\\" if m.group(1) == b"\\" else bytes([int(m.group(1), 16)]),
                      name[1:-1].encode())
    return raw.decode("utf-8", "replace")


def _code(text: str) -> str:
    """``text`` with its strings emptied (names kept) and its comment cut."""
    if '"' not in text and ";" not in text:
        return text
    return _TOKEN.sub(lambda m: m.group(0) if m.group(0)[0] in "@%" else ('""' if m.group(0)[0] == '"' else ""),
                      text)


def _names(code: str) -> list[str]:
    """Every global named in ``code``."""
    return [_unquote(m.group(1)) for m in _TOKEN.finditer(code) if m.group(0)[0] == "@"]


def _callee(code: str) -> str | None:
    """The global called by a call (or named by a ``define`` line) in ``code``: the first name
    followed by its argument list; None for a call through a local value."""
    for m in _TOKEN.finditer(code):
        if m.group(2):
            return _unquote(m.group(1)) if m.group(0)[0] == "@" else None
    return None
