"""Every allocation the tape makes is checked: out of memory stops the thread (the out-of-heap helper:
a trap on the host and in the grid emulation, the heap flag and an exit on a device), never writes
through null."""

import re

import pytest

from enzyme_plugin.ad.helpers import HELPERS, OUT_OF_HEAP
from gpucompiler.llvm import parse

DECLS = """
declare ptr @malloc(i64)
declare ptr @realloc(ptr, i64)
declare void @free(ptr)
declare void @llvm.trap()
declare void @__gpuc_ad_out_of_heap()
declare void @llvm.memcpy.p0.p0.i64(ptr, ptr, i64, i1)
"""

ALLOCATING = [k for k, (_, text) in HELPERS.items() if re.search(r"@(malloc|realloc)\(", text)]


def test_the_tape_allocates_through_these_helpers():
    assert {"push", "loop_grow", "push_device", "loop_grow_device", "tape_alloc"} <= set(ALLOCATING)


@pytest.mark.parametrize("key", sorted(HELPERS))
def test_device_helpers_never_call_realloc_and_every_heap_call_is_marked(key):
    """A device has no realloc (only the host's helpers call it); the GPU validator accepts only
    malloc/free marked as the tape's."""
    _, text = HELPERS[key]
    assert ("@realloc" in text) == (key in ("push", "loop_grow"))
    for line in text.splitlines():
        if re.search(r"call [^\n]*@(malloc|free)\(", line):
            assert "!gpuc.ad.tape" in line, line


@pytest.mark.parametrize("key", ALLOCATING)
def test_allocation_result_is_checked_before_use(key):
    _, text = HELPERS[key]
    module = parse(DECLS + text.format(name="helper"))
    fn = module.functions["helper"]
    calls = [i for b in fn.blocks for i in b.instructions
             if i.opcode == "call" and getattr(i.callee, "name", "") in ("malloc", "realloc")]
    assert calls
    for call in calls:
        checks = [u.user for u in call.uses if u.user.opcode == "icmp" and u.user.predicate == "eq"
                  and any(getattr(op, "ref", "") == "null" or "null" in repr(op) for op in u.user.operands)]
        assert checks, f"{key}: result of @{call.callee.name} is not compared with null"
        branch = next(u.user for u in checks[0].uses if u.user.opcode == "br")
        failing = branch.successors[0]
        assert any(i.opcode == "call" and i.callee.name == OUT_OF_HEAP for i in failing.instructions)
        assert failing.instructions[-1].opcode == "unreachable"
