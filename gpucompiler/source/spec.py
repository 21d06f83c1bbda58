"""``FunctionSpec``: a Python function and argument types, as a job source.

Its fingerprint covers the code of the function and of every function it
reaches, and the value of every global it reads (found by running the
abstract interpreter), so rebinding a captured constant changes the job key.

Running the interpreter costs milliseconds, too much for a cache hit in a
fresh process. A spec therefore also has a cheap :meth:`index_fingerprint`
(its own code and the argument types, no inference) and a
:meth:`dependency_record` of what inference read: for every global read,
where it was read (which dict, module, object or closure cell, named by
the path from the entry function) and the fingerprint of its value.
:meth:`verify_record` re-reads each recorded dependency from the live
objects; when every fingerprint is unchanged the full fingerprint is rebuilt
from those live reads, equal to what inference would give, without
inference. The cache (:mod:`gpucompiler.cache.core`) stores the record in
an *index entry*; it is checked on every use, never trusted.

Reads that inference makes in the language's Python overlays (``np.tanh`` of
an array runs ``gpucompiler.language.numpy.npimpl``'s helpers, reached
through a rule, not through a read) are named by module: see
:func:`_compiler_read`.
"""

from __future__ import annotations

import builtins
import importlib
import json
import sys
import types as pytypes
from typing import Any, cast

from .. import codegen, interpreter, pristine, targets, types as T  # facades: their modules load on first use
from ..frontend.fingerprint import encode_value, python_function
from ..interpreter.lattice import MISSING
from ..reference import module_name
from ..core import Target

def _builtins_of(fn) -> dict:
    """The builtins namespace ``fn``'s global lookups fall back to."""
    b = fn.__globals__.get("__builtins__", builtins)
    return b if isinstance(b, dict) else vars(b)


_COMPILER = __name__.partition(".")[0]
_OVERLAYS = f"{_COMPILER}.language"
"""The package of the language's overlays (their globals are read by inference, reached through rules)."""


def _module_named(holder) -> str | None:
    """The dotted name of the module in ``sys.modules`` whose globals ``holder`` is, else None."""
    name = holder.get("__name__") if isinstance(holder, dict) else None
    module = sys.modules.get(name) if isinstance(name, str) else None
    return name if module is not None and getattr(module, "__dict__", None) is holder else None


def _overlay(name: str) -> bool:
    return name == _OVERLAYS or name.startswith(_OVERLAYS + ".")


REGISTERS = (f"{_OVERLAYS}.numpy.random",)
"""Packages of the language whose import registers names that compiled code links against
(``llvmlite.binding.add_symbol``: NumPy's random state): a read of their globals is always done, importing
them, so that code loaded through the LLJIT finds those names."""


def _registers(name: str) -> bool:
    return any(name == p or name.startswith(p + ".") for p in REGISTERS)


def constant_name(name: str) -> bool:
    """An upper-case name (``MAX_DIMS``, ``N``), the language's constants' (not ``_INF``: a private one
    may be computed)."""
    return name[:1].isupper() and name.isupper()


def _taken_value(fingerprint: Any) -> Any:
    """The object a read taken from the record found, where later reads may go through it: a
    :data:`_PRISTINE` namespace, or a module of the compiler this process has imported (bound by an
    ``import`` in the language: ``T``, ``gpucompiler.types``); else None."""
    if not isinstance(fingerprint, dict):
        return None
    named = fingerprint.get("pristine")
    if named is not None:
        return _PRISTINE.get(str(named))
    module = fingerprint.get("module")
    return sys.modules.get(module) if isinstance(module, str) and module.startswith(_COMPILER + ".") else None


def _compiler_read(module: str, name: str, fingerprint: Any) -> bool:
    """Whether a read of ``module``'s global ``name`` may be taken from its record, unread, in a process that
    has not imported ``module``.

    Only for the language's own modules (:data:`_OVERLAYS`) but those of
    :data:`REGISTERS`, and only for a read
    that found nothing (``"<builtin>"``), a function of the compiler (its own
    or one it imports from the frontend), a :data:`_PRISTINE` namespace (taken
    from ``gpucompiler.pristine``, which ``import gpucompiler`` made; the reads
    through it are done again), a module of the compiler this process has
    imported (likewise) or, under an upper-case name, a number, a
    string or a scalar type: the compiler's source is covered by its code
    digest and version in every key document (the index key's included), and
    a module that was never imported cannot have been patched; a fresh import
    would bind the same names to the same values, since those modules define
    their functions unconditionally, name modules by imports alone and bind
    their upper-case constants once, by constant expressions
    (``tests/cache/test_array_index.py`` checks their source). Importing them
    is what a cached hit avoids: they load the language's rules. In a process
    that has imported the module every read is done again, so a patched
    helper misses. Any other value (a lower-case name's, which an import may
    compute; a module not imported here) imports the module and reads it.
    """
    if not _overlay(module) or _registers(module):
        return False
    if fingerprint == "<builtin>" or _taken_value(fingerprint) is not None:
        return True
    if constant_name(name) and (isinstance(fingerprint, (bool, int, float, str)) or (
            isinstance(fingerprint, dict) and fingerprint.get("object") == "Scalar")):
        return True
    named = fingerprint.get("function") if isinstance(fingerprint, dict) else None
    return isinstance(named, str) and named.startswith(_COMPILER + ".")  # "<module>.<qualname>"


def _holder(holder) -> str:
    if isinstance(holder, dict):
        return f"globals:{holder.get('__name__', '?')}"
    if isinstance(holder, pytypes.ModuleType):
        return f"module:{holder.__name__}"
    return "closure"


_PRISTINE = {"math": pristine.math, "builtins": pristine.builtins}
"""The namespaces the language reads CPython's functions from (:mod:`gpucompiler.pristine`): named, as a
module is by its name (their ``repr`` holds addresses, which differ in every process); the reads through
them are recorded one by one."""


def _encode(value) -> Any:
    for name, namespace in _PRISTINE.items():
        if value is namespace:
            return {"pristine": name}
    return encode_value(value)


def read_fingerprint(holder, name, value) -> list:
    """``[holder kind, name, encoded value]`` of one global read."""
    return [_holder(holder), name, "<builtin>" if value is MISSING else _encode(value)]


def sorted_reads(deps: list) -> list:
    """Read fingerprints in a canonical order."""
    return sorted(deps, key=lambda d: json.dumps(d, sort_keys=True))


def _restype(frame) -> str:
    rt = frame.rettype.type if hasattr(frame.rettype, "type") else frame.rettype
    return repr(rt)


def _settings(job) -> tuple:
    return () if job is None else (job.target, job.config.plugins,
                                   job.config.frontend.python_abi)


class FunctionSpec:
    """Compile ``fn`` for ``argtypes`` (a tuple of :mod:`gpucompiler.types`); equal specs have the same
    function, argument types and :attr:`call_entry`. (A plain class: an attrs class costs ~0.2 ms to
    create, on the path of a fresh process's cache hit.)"""

    __slots__ = ("fn", "argtypes", "call_entry", "_cache")

    def __init__(self, fn: Any, argtypes: Any, call_entry: bool = True, _cache: dict | None = None):
        self.fn = fn
        self.argtypes = tuple(argtypes)
        self.call_entry = call_entry
        """under the Python ABI, whether the module has the CPython call entry (``<entry>.pyentry``) beside
        the ctypes wrapper; a tiered first compile's quick code has none (its calls go through the dispatcher
        until the full level replaces it): about a seventh of its compile saved"""
        self._cache: dict = {} if _cache is None else _cache

    def _identity(self) -> tuple:
        return (self.fn, self.argtypes, self.call_entry)

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and self._identity() == cast("FunctionSpec", other)._identity()

    def __hash__(self) -> int:
        return hash(self._identity())

    def __repr__(self) -> str:
        return f"FunctionSpec(fn={self.fn!r}, argtypes={self.argtypes!r}, call_entry={self.call_entry!r})"

    def without_call_entry(self) -> FunctionSpec:
        """This spec without the CPython call entry (:attr:`call_entry`), sharing its inference and verified
        records (neither depends on the entry)."""
        return FunctionSpec(self.fn, self.argtypes, False, _cache=self._cache)

    @property
    def entry(self) -> str:
        """``module.qualname`` (a spawned worker's ``__mp_main__`` named ``__main__``: :func:`module_name`)."""
        return f"{module_name(self.fn.__module__)}.{self.fn.__qualname__}"

    def infer(self, target: Target | None = None, plugins=(), python_errors: bool = False):
        """``(interpreter, entry frame)``, computed once per setting (``target``: the host's by default)."""
        target = (target if target is not None else targets.NativeTarget()).for_inference()
        key = (target, tuple(plugins), python_errors)
        if key not in self._cache:
            # the language's rules, which every Interpreter consults, register at the first inference: a hit
            # through a verified dependency record infers nothing and loads none of them
            from .. import language  # noqa: F401

            interp = interpreter.Interpreter(target, plugins, python_errors)
            frame = interp.infer(self.fn, list(self.argtypes))
            if frame.rettype is interpreter.BOTTOM:  # it always raises (or never ends), as it would in Python
                frame.rettype = T.none
            self._cache[key] = (interp, frame)
        return self._cache[key]

    def dependencies(self, target: Target | None = None, plugins=(), python_errors: bool = False) -> list[tuple]:
        """Every global read: ``(holder, name, value)``; the settings as for :meth:`infer`.

        After a successful :meth:`verify_record` for these settings, the live reads
        it checked (the same triples inference would record), without inference.
        """
        key = self._norm((target or targets.NativeTarget(), plugins, python_errors))
        verified = self._cache.get(("verified", key))
        if verified is not None and key not in self._cache:
            return list(verified["deps"])
        return list(self.infer(target, plugins, python_errors)[0].deps.values())

    @staticmethod
    def _norm(settings) -> tuple:
        padded: tuple[Any, ...] = tuple(settings) + (None, (), False)[len(settings):]
        target, plugins, abi = padded
        target = target if target is not None else targets.NativeTarget()
        return (target.for_inference(), tuple(plugins), bool(abi))

    def fingerprint_for(self, job) -> Any:
        """:meth:`fingerprint` under ``job``'s target and plugins (their rules decide what is read)."""
        return self.fingerprint(job)

    def index_fingerprint(self) -> Any:
        """The part of :meth:`fingerprint` known without inference: the entry's code and argument types. The
        code's encoding is taken once per spec (with :meth:`without_call_entry`'s), as its inference is: a
        tier-up, which compiles after the first call returned, keys the code it compiles even when the
        function's code was replaced meanwhile (``f.__code__ = ...``)."""
        python = self._cache.get(("python",))
        if python is None:
            python = self._cache[("python",)] = encode_value(self.fn)
        index = {"python": python, "argtypes": [repr(t) for t in self.argtypes]}
        return index if self.call_entry else {**index, "call_entry": False}

    def fingerprint(self, job=None) -> Any:
        """Content of the source; ``job`` (when given) selects its target's and plugins' rules."""
        key = self._norm(_settings(job))
        verified = self._cache.get(("verified", key))
        if verified is not None and key not in self._cache:  # inference, once run, is preferred
            return {**self.index_fingerprint(), "globals": verified["globals"], "restype": verified["restype"]}
        interp, frame = self.infer(*_settings(job))
        deps = [read_fingerprint(h, n, v) for h, n, v in interp.deps.values()]
        return {**self.index_fingerprint(), "globals": sorted_reads(deps), "restype": _restype(frame)}

    # -- the dependency record (two-level cache keys) -------------------------
    def dependency_record(self, job) -> dict | None:
        """What inference read under ``job``, as JSON data :meth:`verify_record` can check again.

        ``reads`` lists ``[holder, name, fingerprint]`` in the order inference
        read them; ``holder`` is ``["globals", i]`` (the globals of the function
        that is the value of read ``i``; -1: the entry function),
        ``["cell", i, freevar]`` (a closure cell of that function),
        ``["builtins", i]`` (the builtins that function's globals fall back to),
        ``["value", i]`` (an attribute of the value of read ``i``: a module, a
        class...) or ``["module", name]`` (the globals of module ``name``: always
        for the language's overlays, which inference reaches through its rules,
        else where no path reaches them). ``restype`` is the entry's return type.
        None when some read cannot be located that way (the job is then always
        keyed by inference).
        """
        settings = _settings(job)
        interp, frame = self.infer(*settings)
        triples = list(interp.deps.values())
        values = [self.fn] + [v for _, _, v in triples]  # index j+1 <-> read j; 0 <-> entry
        reads = []
        for k, (holder, name, value) in enumerate(triples):
            ref = self._locate(holder, values, k)
            if ref is None:
                return None
            reads.append([ref, name, read_fingerprint(holder, name, value)])
        record = {"reads": reads, "restype": _restype(frame)}
        # the record must reproduce this very fingerprint from the live objects, else it is useless
        probe = FunctionSpec(self.fn, self.argtypes, self.call_entry)
        if probe.verify_record(job, record) != self.fingerprint(job):
            return None
        return record

    @staticmethod
    def _locate(holder, values, k) -> list | None:
        module = _module_named(holder)
        if module is not None and _overlay(module):  # the language's globals: named, whoever read them
            return ["module", module]
        for j, v in enumerate(values):
            if j == k + 1:
                continue
            fn = python_function(v)
            if fn is not None:
                if holder is fn.__globals__:
                    return ["globals", j - 1]
                if holder is _builtins_of(fn):
                    return ["builtins", j - 1]
                for var, cell in zip(fn.__code__.co_freevars, fn.__closure__ or ()):
                    if holder is cell:
                        return ["cell", j - 1, var]
            if holder is v and not isinstance(v, (dict, bool, int, float, str, type(None))):
                return ["value", j - 1]
        # a module's globals reached through a rule (a plugin's overlay): read again only where it is imported
        # (not a script's: another process's __main__ is another module)
        return None if module is None or module_name(module) == "__main__" else ["module", module]

    def verify_record(self, job, record) -> Any:
        """The fingerprint rebuilt from the live objects the record names, or None on any change.

        Every recorded read is done again (from the entry function's globals and
        closure on, through the live values of the earlier reads; a
        ``["module", name]`` read on the globals of ``sys.modules[name]``) and its
        fingerprint compared with the recorded one; all equal means inference
        would read the same values and give this same fingerprint. On success the
        live reads serve :meth:`dependencies` and :meth:`fingerprint` for ``job``'s
        settings, so neither runs inference.

        A read of a language module this process has not imported is taken from
        the record where :func:`_compiler_read` allows it (importing it is the
        cost a hit avoids), and is then no world-age dependency of the code;
        otherwise (or when a later read goes through its value) the module is
        imported and read. A module outside the language that is not imported
        fails the check: inference decides.
        """
        try:
            reads = record["reads"]
            # (holder, name, value); None: taken from the record; holder None: taken, with its value
            live: list = [None] * len(reads)
            prints: list = [None] * len(reads)
            done = [False] * len(reads)

            def module_read(k: int, load: bool) -> None:
                (_, module), name, expected = reads[k]
                if not isinstance(module, str) or expected[:2] != [f"globals:{module}", name]:
                    raise KeyError(module)
                found = sys.modules.get(module)
                if found is None and not load and _compiler_read(module, name, expected[2]):
                    value = _taken_value(expected[2])
                    live[k], prints[k] = (None if value is None else (None, name, value)), expected
                    return
                if found is None:
                    if not _overlay(module):
                        raise KeyError(module)
                    found = importlib.import_module(module)
                holder = vars(found)
                triple = (holder, name, holder.get(name, MISSING))
                printed = read_fingerprint(*triple)
                if _encoded(printed) != _encoded(expected):
                    raise KeyError(name)
                live[k], prints[k] = triple, printed

            progress = True
            while progress and not all(done):
                progress = False
                for k, (ref, name, expected) in enumerate(reads):
                    if done[k]:
                        continue
                    if ref[0] == "module":
                        module_read(k, False)
                        done[k] = progress = True
                        continue
                    j = ref[1]
                    if j >= 0 and not done[j]:
                        continue
                    if j >= 0 and live[j] is None:  # through the value of a read taken from the record
                        module_read(j, True)
                    base = self.fn if j < 0 else live[j][2]
                    if ref[0] == "value":
                        holder = base
                        value = getattr(holder, name, MISSING)
                        if value is MISSING:
                            return None
                    else:
                        fn = python_function(base)
                        if fn is None:
                            return None
                        if ref[0] in ("globals", "builtins"):
                            holder = fn.__globals__ if ref[0] == "globals" else _builtins_of(fn)
                            value = holder.get(name, MISSING)
                        elif ref[0] == "cell":
                            cells = dict(zip(fn.__code__.co_freevars, fn.__closure__ or ()))
                            holder = cells.get(ref[2])
                            if holder is None:
                                return None
                            try:
                                value = holder.cell_contents
                            except ValueError:
                                return None
                        else:
                            return None
                    triple = (holder, name, value)
                    printed = read_fingerprint(*triple)
                    if _encoded(printed) != _encoded(expected):
                        return None
                    live[k], prints[k], done[k], progress = triple, printed, True, True
            if not all(done):
                return None
        except (KeyError, IndexError, TypeError, AttributeError, ValueError, ImportError):
            return None
        restype = record.get("restype")
        if not isinstance(restype, str):
            return None
        # the return type is part of the full key: a wrong one here can only miss
        reads = sorted_reads(prints)
        deps = [t for t in live if t is not None and t[0] is not None]
        self._cache[("verified", self._norm(_settings(job)))] = {"deps": deps, "globals": reads, "restype": restype}
        return {**self.index_fingerprint(), "globals": reads, "restype": restype}

    def discard_verified(self, job) -> None:
        """Forget a verified record for ``job``'s settings: the fingerprint comes from inference again."""
        self._cache.pop(("verified", self._norm(_settings(job))), None)

    def verified_restype(self, job) -> str | None:
        """``repr`` of the return type recorded with a verified dependency record, else None."""
        verified = self._cache.get(("verified", self._norm(_settings(job))))
        return None if verified is None else verified["restype"]

    def generate_ir(self, job) -> str:
        """The LLVM IR of the entry specialization and every callee."""
        options = job.config.frontend
        abi = options.python_abi
        interp, frame = self.infer(job.target, job.config.plugins, abi)
        # with the Python ABI errors stop execution (a status) and a bad index raises
        # IndexError; elsewhere a bad index traps (on the GPU: a launch error)
        mod = codegen.ModuleCodegen(self.entry, interp, status=abi,
                            boundscheck=options.boundscheck,
                            on_error=codegen.ErrorPolicy.PYTHON if abi else codegen.ErrorPolicy.TRAP,
                            error_model=options.error_model, parallel_threads=options.parallel_threads,
                            nogil=options.nogil, fastmath=options.fastmath, fold=job.config.opt_level == 0)
        entry = mod.emit(frame, self.entry)
        if abi:
            codegen.emit_wrapper(mod, frame, entry, self.entry + ".pywrap")
            if self.call_entry:
                codegen.emit_pyentry(mod, frame, entry, self.entry + ".pyentry", len(interp.deps))
        return mod.text()


def _encoded(fingerprint) -> str:
    return json.dumps(fingerprint, sort_keys=True)


def deps_valid(deps) -> bool:
    """Whether every recorded global read ``(holder, name, value)`` still finds the same object
    (Julia's world age: a rebound global invalidates code compiled against the old one)."""
    for holder, name, value in deps:
        cur = holder.get(name, MISSING) if isinstance(holder, dict) else getattr(holder, name, MISSING)
        if cur is not value:
            return False
    return True
