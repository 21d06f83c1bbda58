"""The engine: derivative functions per (function, argument kinds, mode),
generated on demand through a worklist so that recursion terminates."""

from __future__ import annotations

import re

from gpucompiler.llvm import Builder, Function, constant, types as T

from .analysis import CONST, DUP, OUT, Activity
from . import custom, gpu, leaf, memory, openmp, stack
from .calls import INACTIVE
from .carried import Carried, rebuild_carried
from .emit import carries_derivative, declare, fconst, is_float_like, zero
from .errors import unsupported
from .gpu import EngineOptions
from .globals import GlobalShadows
from .helpers import HELPERS, HELPERS_AGAIN, PREFIX as _PREFIX, memcpy_adjoint
from .reverse import TAPE, Reverse
from .sweep import Sweep
from .floatbits import retype_float_bit_calls
from .typeinfo import MemoryTypes, retype_integer_copies



class Engine:
    """Generates derivative functions into ``module``."""

    def __init__(self, module, options: EngineOptions = EngineOptions()):
        self.module = module
        self.options = openmp.engine_options(module, options)  # threads of parallel regions share memory
        self._acts: dict = {}
        self._fns: dict = {}
        self._work: list = []
        self._helpers: dict = {}
        self._retyped: set = set()
        #: function name -> the header values :func:`.carried.rebuild_carried` made of its loop-carried phis
        self.carried: dict[str, list[Carried]] = {}
        custom.check_globals(module)
        self.custom_gradients, self.custom_derivatives = custom.registered(module)
        #: callee name -> math function it behaves like (``__enzyme_function_like``)
        self.function_like = custom.function_like(module)
        self.globals = GlobalShadows(module)
        self.global_callees = self.globals.callees()
        self._global_operands: dict = {}
        #: Enzyme's runtime activity for the derivatives requested now (per marker call, inherited by the
        #: derivatives of its callees): an active value stored into memory without a shadow loses its
        #: derivative there instead of raising ADError
        self.runtime_activity = False

    # -- helpers and analyses ---------------------------------------------------
    def helper(self, key: str) -> Function:
        """The runtime helper ``key``; a growing tape's on a device (``EngineOptions.device_tape``:
        PTX and the grid emulation) copies into a new malloc'd block instead of calling realloc."""
        variant = key + "_device" if key in ("push", "loop_grow") and self.options.device_tape else key
        fnty, text = (HELPERS_AGAIN if self.options.differentiated_again else HELPERS)[variant]
        exit_intrinsic = self.options.thread_exit
        if key == "out_of_heap" and exit_intrinsic is not None:  # the target ends threads without a trap
            variant = "out_of_heap_exit"
            fnty, text = HELPERS[variant]
            text = text.replace("THREAD_EXIT", exit_intrinsic)
        return self._helper(key, fnty, text, variant)  # one name for both: higher-order AD knows it

    def memcpy_adjoint(self, ty) -> Function:
        fnty, text = memcpy_adjoint(ty)
        return self._helper(f"memcpy_adj_{ty}", fnty, text)

    def _helper(self, key, fnty, text, variant=None):
        name, key = _PREFIX + key, variant or key
        have = self.module.functions.get(name)
        if name not in self._helpers and (have is None or have.is_declaration):  # defined by an inner level
            self._helpers[name] = text.format(name=name)
            grow = ("push", "loop_grow", "push_device", "loop_grow_device")
            if key in ("push", "loop_grow"):
                declare(self.module, "realloc", T.function(T.ptr(), [T.ptr(), T.i64]))
            if key in ("push_device", "loop_grow_device"):  # malloc + copy + free: a device has no realloc
                declare(self.module, "llvm.memcpy.p0.p0.i64", T.function(T.void, [T.ptr(), T.ptr(), T.i64, T.i1]))
            if key in ("free", "tape_free", "loop_free", "push_device", "loop_grow_device", "tape_close"):
                declare(self.module, "free", T.function(T.void, [T.ptr()]))
            if key in ("tape_alloc", "push_device", "loop_grow_device", "tape_open"):
                declare(self.module, "malloc", T.function(T.ptr(), [T.i64]))
            if key in ("trip_check", "tape_alloc", "tape_open", *grow):  # trap on overrun or out of memory
                declare(self.module, "llvm.trap", T.function(T.void, []))
            if key == "check_callee":
                declare(self.module, "strlen", T.function(T.i64, [T.ptr()]))
                declare(self.module, "write", T.function(T.i64, [T.i32, T.ptr(), T.i64]))
                declare(self.module, "abort", T.function(T.void, []))
            if key in ("tape_alloc", "tape_open", *grow):  # what an allocation that failed calls
                self.helper("out_of_heap")
            if variant == "out_of_heap_exit" and self.options.thread_exit is not None:
                gpu.declare_heap_exit(self.module, self.options.thread_exit)
        return declare(self.module, name, fnty)

    def activity(self, fn, kinds) -> Activity:
        key = (fn.name, tuple(kinds))
        act = self._acts.get(key)
        if act is None:
            if fn.name not in self._retyped:
                self._retyped.add(fn.name)
                retype_integer_copies(fn)
                retype_float_bit_calls(fn, {*self.custom_gradients, *self.custom_derivatives, *self.function_like})
                self.carried[fn.name] = rebuild_carried(fn)
            act = self._acts[key] = Activity(fn, kinds, INACTIVE, self.global_operands(fn), MemoryTypes())
            self.globals.seed_calls(act, self.global_callees)
        return act

    def global_operands(self, fn) -> dict:
        """Constant pointers into shadowed globals that ``fn`` uses -> their shadows."""
        hit = self._global_operands.get(fn.name)
        if hit is None:
            hit = self._global_operands[fn.name] = self.globals.operands_with_shadow(fn)
        return hit

    def _name(self, tag, fn, kinds) -> str:
        sig = "".join(k.letter for k in kinds)
        base = f"{tag}_{fn.name}.{sig}" if sig else f"{tag}_{fn.name}"
        name, n = base, 1
        while name in self.module.functions:
            n += 1
            name = f"{base}.{n}"
        return name

    def _queue(self, gen) -> None:
        """Generate a derivative body later, with the runtime-activity setting of now."""
        ra = self.runtime_activity

        def run() -> None:
            saved, self.runtime_activity = self.runtime_activity, ra
            try:
                gen()
            finally:
                self.runtime_activity = saved
        self._work.append(run)

    def run(self) -> None:
        """Generate every pending derivative body."""
        while self._work:
            self._work.pop()()

    # -- signatures -------------------------------------------------------------
    @staticmethod
    def _params(fn, kinds, extra=(), width: int = 1):
        """Parameter types and roles: each argument, followed by its ``width`` shadows when it has any."""
        types, roles = [], []
        for a, k in zip(fn.args, kinds):
            types.append(a.type)
            roles.append(("arg", a, 0))
            if k == DUP:
                types += [a.type] * width
                roles += [("shadow", a, lane) for lane in range(width)]
        for t, role in extra:
            types.append(t)
            roles.append((role, None, 0))
        return types, roles

    def _new(self, name, ret, types) -> Function:
        fn = Function(name, T.function(ret, types), prefix="internal")
        self.module.add_function(fn)
        return fn

    @staticmethod
    def _roles(fn, roles, width: int = 1):
        """``(arguments, [shadows of lane k for the ``width`` lanes], extras)`` of a derivative function by role."""
        args, extra = {}, {}
        shadows: list[dict] = [{} for _ in range(width)]
        for a, (role, prim, lane) in zip(fn.args, roles):
            if role == "arg":
                args[prim] = a
            elif role == "shadow":
                shadows[lane][prim] = a
            else:
                extra[role] = a
        return args, shadows, extra

    @staticmethod
    def adjoint_type(fn, kinds, width: int = 1):
        """The literal struct of the adjoints of the ``out`` arguments (None when there are none); in a
        batch of ``width`` > 1 each adjoint is a struct of one per lane."""
        outs = [a.type if width == 1 else T.struct([a.type] * width) for a, k in zip(fn.args, kinds) if k == OUT]
        return T.struct(outs) if outs else None

    @staticmethod
    def batch_type(t, width: int):
        """The type of the ``width`` derivatives of a value of type ``t`` (``t`` itself for width 1)."""
        return t if width == 1 else T.struct([t] * width)

    def _check_batch(self, fn, width: int, forward: bool = False) -> None:
        """What vector mode does not cover raises before any code is emitted."""
        if width == 1:
            return
        if self.global_operands(fn):
            raise unsupported(f"batch mode (width {width}) of @{fn.name}, which reads or writes a differentiable "
                              "global variable (one shadow per global): differentiate it with width 1", None, fn)
        if not forward and fn.name in self.custom_gradients:
            raise unsupported(f"batch mode (width {width}) of @{fn.name}, which has a custom reverse rule: "
                              "differentiate it with width 1 (forward rules are called once per lane)", None, fn)
        if fn.return_type.kind == "ptr":
            raise unsupported(f"batch mode (width {width}) of @{fn.name}, which returns a pointer", None, fn)

    # -- forward mode -------------------------------------------------------------
    def forward_fn(self, fn, kinds, width: int = 1, leaf_lanes: bool = False) -> Function:
        """``fwd(args, tangents of dup args) -> {ret, dret}`` (float return) or ``ret``; in a batch of
        ``width`` > 1 every dup argument takes ``width`` tangents and ``dret`` is a struct of ``width``.
        ``leaf_lanes``: the lanes' shadows of each argument share one buffer (:mod:`.leaf`)."""
        key = ("fwd", fn.name, tuple(kinds), width, self.runtime_activity, leaf_lanes)
        if key in self._fns:
            return self._fns[key]
        if fn.is_declaration:
            raise unsupported(f"cannot differentiate declared function @{fn.name}", None, fn)
        self._check_batch(fn, width, forward=True)
        if leaf_lanes:
            if fn.name in self.custom_derivatives:
                raise unsupported(f"vector forward mode with one shadow buffer per argument of @{fn.name}, which "
                                  "has a registered derivative", None, fn)
            leaf.check(fn, self.activity(fn, kinds))
        rt = fn.return_type
        ret = T.struct([rt, self.batch_type(rt, width)]) if carries_derivative(rt) or rt.kind == "ptr" else rt
        types, roles = self._params(fn, kinds, width=width)
        new = self._new(self._name("fwddiffe" if width == 1 else f"fwddiffe{width}", fn, kinds), ret, types)
        self._fns[key] = new
        user = self.custom_derivatives.get(fn.name)
        if user is not None:
            self._queue(lambda: custom.gen_forward(self, fn, kinds, new, user, width))
        else:
            self._queue(lambda: self._gen_forward(fn, kinds, new, roles, width, leaf_lanes))
        return new

    def _gen_forward(self, fn, kinds, new, roles, width: int = 1, leaf_lanes: bool = False):
        act = self.activity(fn, kinds)
        args, shadows, _ = self._roles(new, roles, width)
        sw = Sweep(self, fn, act, new, args, shadows, tangents=True)
        sw.leaf_lanes = leaf_lanes
        sw.run()
        rt = fn.return_type
        if rt.kind == "ptr":
            self._return_shadows(fn, act, sw)
            return
        for block in fn.blocks:
            term = block.terminator
            if term is None or term.opcode != "ret" or not carries_derivative(rt):
                continue
            copy = sw.vmap[term]
            b = Builder()
            b.position_before(copy)
            v = sw.val(term.operands[0])
            ts = [m.get(term.operands[0]) if term.operands[0] in act.active else None for m in sw.lane_maps]
            ts = [t if t is not None else zero(rt) for t in ts]
            agg = b.insertvalue(constant(new.return_type, "poison"), v, 0)
            if sw.width == 1:
                agg = b.insertvalue(agg, ts[0], 1)
            else:
                for lane, t in enumerate(ts):
                    agg = b.insertvalue(agg, t, (1, lane))
            b.ret(agg)
            copy.erase()

    @staticmethod
    def _return_shadows(fn, act, sw):
        """A pointer-returning function's derivative returns ``{pointer, its shadow}``: the rets of
        its forward sweep ``sw`` are rewritten so."""
        for block in fn.blocks:
            term = block.terminator
            if term is None or term.opcode != "ret":
                continue
            v = term.operands[0]
            if v in act.shadowed:
                sh = sw.shadow(v, term)
            elif getattr(v, "ref", None) in ("null", "undef", "poison"):
                sh = v
            else:
                raise unsupported("the returned pointer has no shadow (it is not derived from an argument "
                                  "with a shadow or an allocation), but the caller needs one", term, fn)
            copy = sw.vmap[term]
            b = Builder()
            b.position_before(copy)
            ty = copy.parent.parent.return_type
            agg = b.insertvalue(b.insertvalue(constant(ty, "poison"), sw.val(v), 0), sh, 1)
            b.ret(agg)
            copy.erase()

    def forward_call(self, s, inst, kinds):
        """In a forward sweep: replace the copied call by a call to the callee's derivative. In a batch
        the call of lane 0 passes every lane's shadows to the callee's derivative of the batch's width
        and gives every lane its tangent; the other lanes have nothing left to do."""
        width = s.width
        if s.lane:
            return
        callee = inst.callee
        copy = s.vmap[inst]
        args = []
        for a, k in zip(inst.args, kinds):
            args.append(s.val(a))
            if k == DUP:
                for lane in range(width):
                    s.set_lane(lane)
                    args.append(s.shadow(a, inst))
                s.set_lane(0)
        rt = callee.return_type
        if s.tangents:
            new = s.b.call(self.forward_fn(callee, kinds, width), args)
            if carries_derivative(rt) or rt.kind == "ptr":
                prim = s.b.extractvalue(new, 0)
                for lane in range(width):
                    s.lane_maps[lane][inst] = s.b.extractvalue(new, 1 if width == 1 else (1, lane))
            else:
                prim = new
        else:
            aug, _ = self.split_fns(callee, kinds, width)
            prim = s.b.call(aug, args + [s.tape])
            if rt.kind == "ptr":  # {pointer, its shadow}
                s.shadow_map[inst] = s.b.extractvalue(prim, 1)
                prim = s.b.extractvalue(prim, 0)
        if rt is not T.void:
            copy.replace_all_uses_with(prim)
        s.vmap[inst] = prim
        copy.erase()

    # -- reverse mode -------------------------------------------------------------
    def split_fns(self, fn, kinds, width: int = 1):
        """``aug(args, shadows, tape) -> ret`` and ``rev(args, shadows, [dret], tape) -> {adjoints}``; in a
        batch of ``width`` > 1, ``width`` shadows per dup argument, ``dret`` and each adjoint a struct of
        ``width``."""
        key = ("split", fn.name, tuple(kinds), width, self.runtime_activity)
        if key in self._fns:
            return self._fns[key]
        if fn.is_declaration:
            raise unsupported(f"cannot differentiate declared function @{fn.name}", None, fn)
        self._check_batch(fn, width)
        rt = fn.return_type
        types, roles = self._params(fn, kinds, [(T.ptr(), "tape")], width)
        aug = self._new(self._name("augmented", fn, kinds), T.struct([rt, rt]) if rt.kind == "ptr" else rt, types)
        extra = ([(self.batch_type(rt, width), "dret")] if carries_derivative(rt) else []) + [(T.ptr(), "tape")]
        rtypes, rroles = self._params(fn, kinds, extra, width)
        adj = self.adjoint_type(fn, kinds, width)
        rev = self._new(self._name("diffe", fn, kinds), adj or T.void, rtypes)
        self._fns[key] = (aug, rev)
        user = self.custom_gradients.get(fn.name)
        if user is not None:
            self._queue(lambda: custom.gen_split(self, fn, kinds, aug, rev, *user))
            return aug, rev
        self._queue(lambda: self._gen_split(fn, kinds, aug, roles, rev, rroles, width))
        return aug, rev

    def _gen_split(self, fn, kinds, aug, roles, rev, rroles, width: int = 1):
        _one_return(fn)
        act = self.activity(fn, kinds)
        fargs, fshadows, fextra = self._roles(aug, roles, width)
        rargs, rshadows, rextra = self._roles(rev, rroles, width)
        entry = rev.append_block("entry")
        b = Builder(entry)
        dret = rextra.get("dret")
        if dret is not None and len(rshadows) > 1:  # a batch: one seed per lane
            dret = [b.extractvalue(dret, lane) for lane in range(len(rshadows))]
        b.unreachable()  # placeholder terminator, replaced below
        r = Reverse(self, fn, act, aug, rev, fwd_args=fargs, fwd_shadows=fshadows, rev_args=rargs,
                    rev_shadows=rshadows, dret=dret, fwd_tape=fextra["tape"],
                    rev_tape=rextra["tape"], rev_entry=entry)
        r.run(lambda rr: self._finish(rr, fn, kinds, rev, None))
        if fn.return_type.kind == "ptr":
            self._return_shadows(fn, act, r.sweep)
        entry.instructions[-1].erase()
        exit_block = r.cfg.exit
        Builder(entry).br(r.pop_blocks[exit_block])

    def combined_fn(self, fn, kinds, width: int = 1, primal: bool = False,
                    noneed: frozenset[int] = frozenset()) -> Function:
        """``diffe(args, shadows) -> {adjoints of out args}``, the return seeded with 1; in a batch of
        ``width`` > 1 every dup argument takes ``width`` shadows, every return lane is seeded with 1 and
        every adjoint is a struct of ``width``. With ``primal``: ``{adjoints, primal result}``. ``noneed``: the
        pointer arguments (``enzyme_dupnoneed``) whose memory's primal values are not needed afterwards: the
        forward sweep leaves out the writes into it where nothing reads it (:func:`.memory.unneeded_writes`)."""
        noneed = frozenset(noneed) if width == 1 and not primal and fn.name not in self.custom_gradients \
            else frozenset()
        key = ("combined", fn.name, tuple(kinds), width, self.runtime_activity, primal, noneed)
        if key in self._fns:
            return self._fns[key]
        if fn.is_declaration:
            raise unsupported(f"cannot differentiate declared function @{fn.name}", None, fn)
        self._check_batch(fn, width)
        types, roles = self._params(fn, kinds, width=width)
        adj = self.adjoint_type(fn, kinds, width)
        ret = T.struct([adj or T.struct([]), fn.return_type]) if primal else adj or T.void
        new = self._new(self._name("diffe" if width == 1 else f"diffe{width}", fn, kinds), ret, types)
        self._fns[key] = new
        if primal and fn.name in self.custom_gradients:
            raise unsupported(f"the primal result of @{fn.name}, which has a custom rule, with its gradient", None,
                              fn)
        if fn.name in self.custom_gradients:
            self._queue(lambda: self._gen_combined_from_rule(fn, kinds, new))
        else:
            self._queue(lambda: self._gen_combined(fn, kinds, new, roles, width, primal, noneed))
        return new

    def _gen_combined_from_rule(self, fn, kinds, new):
        """A registered rule differentiated directly: its augmented forward, then its reverse seeded with 1."""
        aug, rev = self.split_fns(fn, kinds)
        b = Builder(new.append_block("entry"))
        tape = b.alloca(TAPE)
        b.store(constant(TAPE, "zeroinitializer"), tape)
        args = list(new.args)
        b.call(aug, args + [tape])
        rt = fn.return_type
        out = b.call(rev, args + ([fconst(rt, 1.0)] if is_float_like(rt) else []) + [tape])
        b.call(self.helper("free"), [tape])
        b.ret(out) if new.return_type is not T.void else b.ret()

    def _gen_combined(self, fn, kinds, new, roles, width: int = 1, primal: bool = False,
                      noneed: frozenset[int] = frozenset()):
        _one_return(fn)
        act = self.activity(fn, kinds)
        args, shadows, _ = self._roles(new, roles, width)
        rt = fn.return_type
        dret = fconst(rt, 1.0) if is_float_like(rt) else None
        # the tape lives in the first block; the sweep's copy of the entry follows it
        top = new.append_block("alloca")
        b = Builder(top)
        tape = b.alloca(TAPE)
        b.store(constant(TAPE, "zeroinitializer"), tape)
        r = Reverse(self, fn, act, new, new, fwd_args=args, fwd_shadows=shadows, rev_args=args,
                    rev_shadows=shadows, dret=dret, fwd_tape=tape, rev_tape=tape, rev_entry=top)
        r.run(lambda rr: self._finish(rr, fn, kinds, new, tape, primal))
        b.position_at_end(top)
        b.br(r.sweep.vmap[fn.entry])
        exit_block = r.cfg.exit
        assert exit_block is not None, "one return block (_one_return)"
        ret = r.sweep.vmap[exit_block.terminator]
        b.position_before(ret)
        b.br(r.pop_blocks[r.cfg.exit])
        ret.erase()
        for write in memory.unneeded_writes(fn, noneed):  # their copies in the forward sweep
            r.sweep.vmap[write].erase()

    def _finish(self, r, fn, kinds, rev, tape, primal: bool = False):
        adj = self.adjoint_type(fn, kinds, r.width)
        prim = None
        if primal:  # the forward sweep's return value: its block dominates the reverse sweep
            exit_block = r.cfg.exit
            assert exit_block is not None and exit_block.terminator is not None, "one return block"
            prim = r.fwd(exit_block.terminator.operands[0])
        if tape is not None:
            r.b.call(self.helper("free"), [tape])
        if adj is None:
            if prim is not None:
                r.b.ret(r.b.insertvalue(constant(rev.return_type, "zeroinitializer"), prim, 1))
            else:
                r.b.ret()
            return
        agg = constant(adj, "poison")
        k = 0
        for a, kind in zip(fn.args, kinds):
            if kind != OUT:
                continue
            for lane in range(r.width):
                r.set_lane(lane)
                v = r.b.load(a.type, r.slot(a)) if a in r.act.active else zero(a.type)
                agg = r.b.insertvalue(agg, v, k if r.width == 1 else (k, lane))
            k += 1
        r.set_lane(0)
        if prim is not None:
            agg = r.b.insertvalue(r.b.insertvalue(constant(rev.return_type, "poison"), agg, 0), prim, 1)
        r.b.ret(agg)

    def reverse_call(self, r, inst, kinds):
        """In a reverse sweep: call the callee's reverse and accumulate the adjoints of its arguments. In a
        batch the call of lane 0 does it for every lane (as :meth:`forward_call`)."""
        width = r.width
        if r.lane:
            return
        callee = inst.callee
        _, rev = self.split_fns(callee, kinds, width)
        args = []
        for a, k in zip(inst.args, kinds):
            args.append(r.fwd(a))
            if k == DUP:
                for lane in range(width):
                    r.set_lane(lane)
                    args.append(r.fwd_shadow(a, inst))
        rt = callee.return_type
        if carries_derivative(rt):
            seeds = []
            for lane in range(width):
                r.set_lane(lane)
                seeds.append(r.take_adjoint(inst) if inst in r.act.active else zero(rt))
            if width == 1:
                args.append(seeds[0])
            else:
                agg = constant(self.batch_type(rt, width), "poison")
                for lane, d in enumerate(seeds):
                    agg = r.b.insertvalue(agg, d, lane)
                args.append(agg)
        args.append(r.tape)
        out = r.b.call(rev, args)
        k = 0
        for a, kind in zip(inst.args, kinds):
            if kind == OUT:
                for lane in range(width):
                    r.set_lane(lane)
                    r.accumulate(a, r.b.extractvalue(out, k if width == 1 else (k, lane)))
                k += 1
        r.set_lane(0)

    # -- output -------------------------------------------------------------------
    def finalize(self, text: str, *, out_of_line: bool = False) -> str:
        """Replace the helper declarations of ``text`` by their definitions (the stack helpers
        ``noinline`` when ``out_of_line``: the derivative is differentiated again, :mod:`.stack`)."""
        if not self._helpers:
            return text
        names = "|".join(map(re.escape, self._helpers))  # one pass over the text for every helper's declaration
        text = re.sub(rf"^declare [^\n]*@(?:{names})\([^\n]*\n", "", text, flags=re.M)
        return text + "".join(stack.out_of_line(body) if out_of_line else body for body in self._helpers.values())


__all__ = ["CONST", "DUP", "OUT", "Engine"]


def _one_return(fn) -> None:
    """Reverse mode starts from the one return block (the preprocessing merges returns): a function
    without one is an ADError naming it."""
    rets = sum(1 for b in fn.blocks if b.terminator is not None and b.terminator.opcode == "ret")
    if rets == 0:
        raise unsupported(f"reverse mode of @{fn.name}, which never returns (every path ends in unreachable or "
                          "loops forever): there is no result to differentiate", function=fn)
    if rets > 1:
        raise unsupported(f"reverse mode of @{fn.name}, whose {rets} return blocks could not be merged into one "
                          "(a musttail call before each)", function=fn)
