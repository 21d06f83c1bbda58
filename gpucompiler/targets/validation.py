"""Facts about a module that the targets' ``validate`` hooks judge.

:class:`ModuleFacts` walks every instruction once (llvmlite's binding API)
and records what validation rules ask about: which declarations are used and
by whom, the call graph, dynamic allocations, and constant pointers. Each
rule then returns ``(KIND, message)`` pairs; the driver raises them together.
"""

from __future__ import annotations

import attrs
import llvmlite.binding as llvm

from ..errors import ErrorKind
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

    @classmethod
    def of(cls, ref: llvm.ModuleRef) -> ModuleFacts:
        facts = cls()
        defined = {f.name for f in ref.functions if not f.is_declaration}
        declared = {g.name for g in (*ref.functions, *ref.global_variables) if g.is_declaration}
        facts.calls = {name: set() for name in defined}
        for fn in ref.functions:
            if fn.is_declaration:
                continue
            for block in fn.blocks:
                for inst in block.instructions:
                    facts._visit(fn.name, inst, defined, declared)
        return facts

    def _visit(self, fname: str, inst: llvm.ValueRef, defined: set[str], declared: set[str]) -> None:
        opcode = inst.opcode
        operands = list(inst.operands)
        if opcode == "alloca" and operands and not operands[0].is_constant:
            self.dynamic_allocas.append((fname, str(inst).strip()))
        if opcode == "inttoptr" and operands and operands[0].is_constant:
            self.pointer_constants.append((fname, str(inst).strip()))
        if (opcode in _CALLS and operands and operands[-1].value_kind == llvm.ValueKind.function
                and operands[-1].name in TAPE_FUNCTIONS and TAPE_METADATA in str(inst)):
            self.tape_allocations.append((fname, operands[-1].name))
            operands = operands[:-1]  # the callee is not a use of dynamic memory by the user's code
        for op in operands:
            kind = op.value_kind
            if kind == llvm.ValueKind.constant_expr and "inttoptr (" in str(op):
                self.pointer_constants.append((fname, str(inst).strip()))
            elif kind in (llvm.ValueKind.function, llvm.ValueKind.global_variable) and op.name in declared:
                users = self.external_uses.setdefault(op.name, [])
                if fname not in users:
                    users.append(fname)
        if opcode in _CALLS and operands and operands[-1].value_kind == llvm.ValueKind.function:
            callee = operands[-1].name
            if callee in defined:
                self.calls[fname].add(callee)

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
