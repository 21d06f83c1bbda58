"""A division sanitizer at ``post_irgen``: a floating-point division by zero gives 0.

Every ``%q = fdiv double %a, %b`` becomes ``%z = fcmp oeq %b, 0.0``, ``%q = fdiv %a, (select %z, 1.0,
%b)``, ``fmul %q, (select %z, 0.0, 1.0)`` through the IR model's checked Builder, before linking,
optimisation and AD (a finite ``a`` divided by 0 gives 0).

Why not ``select %z, 0.0, (fdiv %a, %b)``: its derivative is ``0 / 0 = nan`` where the divisor is 0 (the
division's adjoint divides the select's zero by it). Replacing the divisor too (JAX's "double where")
is not enough either: the optimiser sees the quotient unused where ``%z`` holds and divides by ``%b``
again. A product with a 0/1 mask uses the quotient everywhere, so the safe divisor stays.
"""

from __future__ import annotations

import gpucompiler.plugin as gp
from gpucompiler.llvm import Builder, constant


class DivSan(gp.Plugin):
    name, version = "divsan", "1"

    @gp.callback("post_irgen")
    def sanitize(self, module):
        if " fdiv " not in module.text:
            return
        model = module.model
        for fn in model.functions.values():
            for q in [i for i in fn.instructions() if i.opcode == "fdiv"]:
                uses = list(q.uses)
                b = Builder()
                b.position_before(q)
                zero = constant(q.type, "0.0" if not q.type.is_vector else "zeroinitializer")
                one = constant(q.type, "1.0") if not q.type.is_vector else None
                if one is None:
                    continue  # vector divisions are left alone (none in scalar code)
                is_zero = b.fcmp("oeq", q.operands[1], zero)
                q.set_operand(1, b.select(is_zero, one, q.operands[1]))
                b.position_after(q)
                safe = b.fmul(q, b.select(is_zero, zero, one))
                for use in uses:
                    use.user.set_operand(use.index, safe)
