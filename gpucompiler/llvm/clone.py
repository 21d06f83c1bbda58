"""Deep copy of a function within its module, with value and debug-info remapping."""

from __future__ import annotations

from .instructions import DebugRecord
from .metadata import MDNode
from .module import Function


def clone_function(fn: Function, new_name: str) -> Function:
    """Copy ``fn`` as ``new_name`` into ``fn.module``.

    Arguments, blocks and instructions are mapped to their copies. When ``fn``
    has a ``!dbg`` subprogram, the subprogram and the function-local nodes that
    reach it (locations, scopes, variables) are duplicated too, since a
    subprogram may describe only one function.
    """
    new = Function(new_name, fn.function_type, prefix=fn.prefix, addrspace=fn.addrspace)
    new.pre_attrs, new.attributes = fn.pre_attrs, list(fn.attributes)
    new.attribute_groups, new.post = list(fn.attribute_groups), list(fn.post)
    for op in fn.operands:
        new.append_operand(op)
    vmap: dict = {}
    for a, b in zip(fn.args, new.args):
        b.name, b.attrs = a.name, a.attrs
        vmap[a] = b
    for block in fn.blocks:
        vmap[block] = new.append_block(block.name)
    pairs = []
    for block in fn.blocks:
        nb = vmap[block]
        for inst in block.instructions:
            ni = inst.detached_copy()
            nb.append(ni)
            vmap[inst] = ni
            pairs.append((inst, ni))
    mdmap = _local_debug_nodes(fn)
    for inst, ni in pairs:
        for op in inst.operands:
            ni.append_operand(vmap.get(op, op))
        ni.metadata = {k: mdmap.get(n, n) for k, n in inst.metadata.items()}
        if inst.debug_records:
            ni.debug_records = [DebugRecord(r.kind, [mdmap.get(p, p) if type(p) is MDNode else p for p in r.parts],
                                            [vmap.get(op, op) for op in r.operands]) for r in inst.debug_records]
    new.metadata = {k: mdmap.get(n, n) for k, n in fn.metadata.items()}
    assert fn.module is not None, "clone of a function outside a module"
    fn.module.add_function(new)
    fn.module.metadata.extend(mdmap.values())
    return new


def _local_debug_nodes(fn: Function) -> dict[MDNode, MDNode]:
    """Copies of the nodes used by ``fn`` that reach its distinct ``!dbg`` subprogram."""
    sp = fn.metadata.get("dbg")
    if sp is None or not sp.distinct:
        return {}
    roots: list[MDNode] = [sp]
    for inst in fn.instructions():
        roots.extend(inst.metadata.values())
        for r in inst.debug_records:
            roots.extend(p for p in r.parts if type(p) is MDNode)
    reaches: dict[MDNode, bool] = {}

    def visit(node: MDNode) -> bool:
        known = reaches.get(node)
        if known is not None:
            return known
        reaches[node] = node is sp  # cycles: assume not, unless it is the subprogram
        hit = node is sp
        for ref in node.references():
            hit = visit(ref) or hit
        reaches[node] = hit
        return hit

    for root in roots:
        visit(root)
    mdmap = {node: node.copy() for node, hit in reaches.items() if hit}
    for copy in mdmap.values():
        copy.parts = [mdmap.get(p, p) if type(p) is MDNode else p for p in copy.parts]
    return mdmap
