"""The guard-word loop native entries run before they use a global: ``@jit``'s call entries
(:mod:`.pyentry`) and kernel launch entries (:mod:`.launchentry`)."""

from __future__ import annotations

from llvmlite import ir

from .entrywords import GUARD_WORDS

I64, PTR = ir.IntType(64), ir.PointerType()


def emit_guard_loop(b: ir.IRBuilder, fn: ir.Function, guard, miss: ir.Block, dict_get_item: ir.Function) -> None:
    """At ``b``: every guard of ``guard[1:]`` (``guard[0]`` guards, :data:`GUARD_WORDS` words each) holds, else
    branch to ``miss``. A dict guard whose version tag moved looks its name up again (``dict_get_item``:
    ``PyDict_GetItem``): the same object means another binding changed, and the new tag is taken; another
    object is a miss. Leaves ``b`` after the loop."""
    n = b.load(guard, typ=I64)
    head, body = fn.append_basic_block("guard.head"), fn.append_basic_block("guard.body")
    recheck, lookup = fn.append_basic_block("guard.recheck"), fn.append_basic_block("guard.lookup")
    same, step = fn.append_basic_block("guard.same"), fn.append_basic_block("guard.next")
    done = fn.append_basic_block("guard.done")
    start = b.block
    b.branch(head)
    b.position_at_end(head)
    k = b.phi(I64, name="k")
    k.add_incoming(ir.Constant(I64, 0), start)
    b.cbranch(b.icmp_unsigned("<", k, n), body, done)
    b.position_at_end(body)
    base = b.add(b.mul(k, ir.Constant(I64, GUARD_WORDS)), ir.Constant(I64, 1))

    def slot(j):
        return b.gep(guard, [b.add(base, ir.Constant(I64, j))], source_etype=I64)

    live = b.load(b.inttoptr(b.load(slot(0), typ=I64), PTR), typ=I64)
    b.cbranch(b.icmp_unsigned("==", live, b.load(slot(1), typ=I64)), step, recheck)
    b.position_at_end(recheck)
    holder = b.load(slot(2), typ=PTR)
    b.cbranch(b.icmp_unsigned("==", holder, ir.Constant(PTR, None)), miss, lookup)
    b.position_at_end(lookup)
    found = b.call(dict_get_item, [holder, b.load(slot(3), typ=PTR)])
    b.cbranch(b.icmp_unsigned("==", found, b.load(slot(4), typ=PTR)), same, miss)
    b.position_at_end(same)
    b.store(live, slot(1))  # another binding changed: the new tag holds for this read
    b.branch(step)
    b.position_at_end(step)
    k.add_incoming(b.add(k, ir.Constant(I64, 1)), step)
    b.branch(head)
    b.position_at_end(done)
