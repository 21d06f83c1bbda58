"""Module, functions, blocks, global variables and aliases."""

from __future__ import annotations

import gc
import re
from collections.abc import Callable, Generator, Iterator, Sequence
from contextlib import contextmanager
from typing import Protocol

from . import types as T
from .instructions import DebugRecord, Instruction
from .metadata import AttributeGroup, MDNode, NamedMetadata, attr_key
from .values import Argument, Use, User, Value, const_int


#: linkage, preemption, visibility and DLL storage words that precede a calling convention
_PREFIX_WORDS = frozenset(
    "private internal available_externally linkonce weak common appending extern_weak linkonce_odr "
    "weak_odr external dso_local dso_preemptable default hidden protected dllimport dllexport".split())
#: named calling conventions (``cc N`` is the numbered spelling)
CALLING_CONVENTIONS = frozenset(
    "ccc fastcc coldcc ghccc webkit_jscc anyregcc preserve_mostcc preserve_allcc preserve_nonecc cxx_fast_tlscc "
    "tailcc swiftcc swifttailcc cfguard_checkcc ptx_kernel ptx_device x86_stdcallcc x86_fastcallcc "
    "x86_thiscallcc x86_vectorcallcc x86_regcallcc x86_intrcc amdgpu_kernel spir_kernel spir_func "
    "aarch64_vector_pcs aarch64_sve_vector_pcs arm_apcscc arm_aapcscc arm_aapcs_vfpcc "
    "win64cc x86_64_sysvcc".split())


#: a name printed as itself (quoted or not): printable ASCII without ``"`` and ``\\``
_UNESCAPED = re.compile(r'[ !#-\[\]-~]+')


@contextmanager
def no_cyclic_gc() -> Generator[None]:
    """Cyclic garbage collection paused inside the block: building or rewriting a model allocates
    many long-lived objects (values and their uses refer to each other), which collector passes
    would only rescan."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


class BasicBlock(Value):
    """A labelled list of instructions; ``parent`` is its :class:`Function`."""

    __slots__ = ("instructions", "parent")

    def __init__(self, name: str = "", parent: Function | None = None):
        Value.__init__(self, T.label, name)
        self.instructions: list[Instruction] = []
        self.parent = parent

    @property
    def terminator(self) -> Instruction | None:
        last = self.instructions[-1] if self.instructions else None
        return last if last is not None and last.is_terminator else None

    @property
    def successors(self) -> list[BasicBlock]:
        term = self.terminator
        return term.successors if term is not None else []

    @property
    def predecessors(self) -> list[BasicBlock]:
        """Blocks whose terminator branches here (each once)."""
        preds = (u.user.parent for u in self.use_dict() if type(u.user) is Instruction and u.user.is_terminator)
        return [p for p in dict.fromkeys(preds) if p is not None]

    def append(self, inst: Instruction) -> Instruction:
        self.instructions.append(inst)
        inst.parent = self
        return inst

    def erase(self) -> None:
        """Remove the block and its instructions (their values must be unused outside it)."""
        for inst in self.instructions:
            inst.drop_operands()
        assert self.parent is not None, "erase of a detached block"
        self.parent.blocks.remove(self)
        self.parent = None


class GlobalValue(User):
    """Common base: module-level named values (``@name``).

    Its uses include those in function bodies not parsed yet (:func:`parse` with ``lazy=True``):
    asking for them (or renaming it) parses every such body whose text spells its name first.
    """

    __slots__ = ("module", "metadata")
    sigil = "@"
    #: the module holding this value (set when it is added to one)
    module: Module | None

    @property
    def name(self) -> str:
        return self._name

    @name.setter
    def name(self, name: str) -> None:
        if getattr(self, "_name", name) != name:
            self._all_bodies()  # the bodies left unparsed spell the old name
        Value.name.fset(self, name)  # pyright: ignore[reportOptionalCall]

    @property
    def uses(self) -> list[Use]:
        self._all_bodies()
        return list(self.use_dict())

    @property
    def users(self) -> list[User]:
        self._all_bodies()
        return list(dict.fromkeys(u.user for u in self.use_dict()))

    def replace_all_uses_with(self, new: Value) -> None:
        self._all_bodies()
        User.replace_all_uses_with(self, new)

    def _all_bodies(self) -> None:
        m = getattr(self, "module", None)
        if m is not None and m.unparsed:
            m.parse_bodies(self._name)

    @property
    def addrspace(self) -> int:
        """The address space of this global's address."""
        t = self.type
        return t.addrspace if isinstance(t, T.PointerType) else 0


class GlobalVariable(GlobalValue):
    """``@g = <prefix> global|constant <value_type> [init]<suffix>``."""

    __slots__ = ("value_type", "prefix", "is_constant", "suffix")

    def __init__(self, name: str, value_type: T.Type, *, prefix: str = "", is_constant: bool = False,
                 initializer: Value | None = None, suffix: str = "", addrspace: int = 0):
        GlobalValue.__init__(self, T.ptr(addrspace), (initializer,) if initializer is not None else (), name)
        self.value_type, self.prefix, self.is_constant, self.suffix = value_type, prefix, is_constant, suffix
        self.metadata: dict[str, MDNode] = {}
        self.module = None

    @property
    def initializer(self) -> Value | None:
        return self.operands[0] if self.operands else None

    @property
    def is_declaration(self) -> bool:
        return not self.operands


class GlobalAlias(GlobalValue):
    """``@a = <prefix> alias|ifunc <value_type>, <aliasee>``."""

    __slots__ = ("value_type", "prefix", "kind", "suffix")

    def __init__(self, name: str, kind: str, value_type: T.Type, aliasee: Value, prefix: str = "", suffix: str = ""):
        GlobalValue.__init__(self, aliasee.type, (aliasee,), name)
        self.kind, self.value_type, self.prefix, self.suffix = kind, value_type, prefix, suffix
        self.metadata = {}
        self.module = None

    @property
    def aliasee(self) -> Value:
        return self.operands[0]


class LeftBody(Protocol):
    """A function body the parser left for its first use (``parse(text, lazy=True)``)."""

    def __call__(self, fn: Function) -> None:
        """Parse the body into ``fn``."""

    def printed(self, fn: Function, text: str, ref: Callable[[Value], str], md: Callable[[MDNode], str],
                group: Callable[[AttributeGroup], str]) -> str | None:
        """The body's ``text`` as a print of the parsed body would read to LLVM, its metadata and
        attribute groups numbered by ``md`` and ``group`` (``ref``: how the arguments print); None where
        it cannot tell without parsing."""


class Function(GlobalValue):
    """``define``/``declare``. ``prefix`` holds linkage, visibility, calling convention and
    return attributes; ``pre_attrs`` unnamed_addr/addrspace; ``attributes`` inline attributes and
    ``attribute_groups`` the ``#N`` groups; ``post`` (a part list with operand slots) section,
    align, gc, personality, prefix and prologue data."""

    __slots__ = ("function_type", "args", "_blocks", "prefix", "pre_attrs", "attributes",
                 "attribute_groups", "post", "body_parser")

    def __init__(self, name: str, function_type: T.FunctionType, *, prefix: str = "", arg_names: Sequence[str] = (),
                 addrspace: int = 0):
        GlobalValue.__init__(self, T.ptr(addrspace), (), name)
        self.function_type = function_type
        names = list(arg_names) + [""] * (len(function_type.params) - len(arg_names))
        self.args = [Argument(t, n, "", self) for t, n in zip(function_type.params, names)]
        self._blocks: list[BasicBlock] = []
        #: parses the body on first use of :attr:`blocks` (a lazily parsed definition), else None
        self.body_parser: LeftBody | None = None
        self.prefix, self.pre_attrs, self.post = prefix, "", []
        self.attributes: list[str] = []
        self.attribute_groups: list[AttributeGroup] = []
        self.metadata: dict[str, MDNode] = {}
        self.module = None

    @property
    def blocks(self) -> list[BasicBlock]:
        """The body's blocks (parsed now if the body was left for its first use)."""
        if self.body_parser is not None:
            self.body_parser(self)
        return self._blocks

    def parse_body(self) -> None:
        """Parse the body now if it was left for its first use."""
        if self.body_parser is not None:
            self.body_parser(self)

    @blocks.setter
    def blocks(self, blocks: list[BasicBlock]) -> None:
        if self.body_parser is not None:
            self.body_parser = None
            if self.module is not None:
                self.module.unparsed.pop(self, None)
        self._blocks = blocks

    @property
    def return_type(self) -> T.Type:
        return self.function_type.ret

    @property
    def is_declaration(self) -> bool:
        return self.body_parser is None and not self._blocks

    @property
    def entry(self) -> BasicBlock:
        return self.blocks[0]

    def instructions(self) -> Iterator[Instruction]:
        """Iterate over every instruction, block by block."""
        for b in self.blocks:
            yield from b.instructions

    def append_block(self, name: str = "") -> BasicBlock:
        block = BasicBlock(name, self)
        self.blocks.append(block)
        return block

    # -- calling convention -----------------------------------------------------
    @property
    def calling_convention(self) -> str:
        """``ccc`` unless ``prefix`` spells another (``fastcc``, ``ptx_kernel``, ``cc 10``...)."""
        words = self.prefix.split()
        for k, w in enumerate(words):
            if w in CALLING_CONVENTIONS or (w.endswith("cc") and w not in _PREFIX_WORDS):
                return w
            if w == "cc" and k + 1 < len(words):
                return f"cc {words[k + 1]}"
        return "ccc"

    @calling_convention.setter
    def calling_convention(self, cc: str) -> None:
        words = self.prefix.split()
        keep: list[str] = []
        skip = False
        for w in words:
            if skip:
                skip = False
                continue
            if w == "cc":
                skip = True
                continue
            if w in CALLING_CONVENTIONS or (w.endswith("cc") and w not in _PREFIX_WORDS):
                continue
            keep.append(w)
        at = 0
        while at < len(keep) and keep[at] in _PREFIX_WORDS:
            at += 1
        if cc and cc != "ccc":
            keep[at:at] = cc.split()
        self.prefix = " ".join(keep)

    # -- attributes ----------------------------------------------------------
    def get_attributes(self) -> list[str]:
        """Every function attribute, inline and from groups."""
        out = list(self.attributes)
        for g in self.attribute_groups:
            out.extend(g.attrs)
        return out

    def has_attribute(self, key: str) -> bool:
        return any(attr_key(a) == key for a in self.get_attributes())

    def add_attribute(self, attr: str) -> None:
        """Add (or replace, by key) a function attribute such as ``"nounwind"`` or ``'"k"="v"'``."""
        self.remove_attribute(attr_key(attr))
        self.attributes.append(attr)

    def remove_attribute(self, key: str) -> None:
        self.attributes = [a for a in self.attributes if attr_key(a) != key]
        for i, g in enumerate(self.attribute_groups):
            if key in g:
                self.attribute_groups[i] = AttributeGroup([a for a in g.attrs if attr_key(a) != key])
                if self.module is not None:
                    self.module.attribute_groups.append(self.attribute_groups[i])

    def clone(self, new_name: str) -> Function:
        """A deep copy named ``new_name``, added to the same module."""
        from .clone import clone_function

        return clone_function(self, new_name)

    def release(self) -> None:
        """Release the body's values, the arguments and the function (:meth:`Module.drop`): the body is
        empty and a lazy parse's parser let go."""
        self.body_parser = None
        for block in self._blocks:
            for inst in block.instructions:
                inst.release()
                for record in inst.debug_records:
                    record.release()
            block.release()
            block.instructions = []
        for arg in self.args:
            arg.release()
        self._blocks, self.args = [], []
        User.release(self)

    def erase(self) -> None:
        """Remove from the module; the function must be unused."""
        assert self.module is not None, "erase of a function outside a module"
        self.module.remove_function(self)


class Module:
    """A parsed or built LLVM module."""

    __slots__ = ("source_filename", "datalayout", "triple", "asm", "struct_types", "comdats",
                 "globals", "functions", "aliases", "attribute_groups", "named_metadata", "metadata", "unparsed")

    def __init__(self):
        self.source_filename: str | None = None
        self.datalayout: str | None = None
        self.triple: str | None = None
        #: ``module asm "..."`` lines, verbatim
        self.asm: list[str] = []
        self.struct_types: dict[str, T.StructType] = {}
        #: ``$name = comdat <kind>`` lines, verbatim
        self.comdats: list[str] = []
        self.globals: dict[str, GlobalVariable] = {}
        self.functions: dict[str, Function] = {}
        self.aliases: dict[str, GlobalAlias] = {}
        self.attribute_groups: list[AttributeGroup] = []
        self.named_metadata: dict[str, NamedMetadata] = {}
        #: every numbered node, in print order
        self.metadata: list[MDNode] = []
        #: definitions whose bodies are parsed on first use, in module order -> the body's text
        self.unparsed: dict[Function, str] = {}

    def __str__(self) -> str:
        from .printer import print_module

        return print_module(self)

    def parse_bodies(self, mentioning: str | None = None) -> None:
        """Parse every body left for its first use; with ``mentioning``, only those whose text holds
        that global's name (the others cannot use it: a name LLVM prints escaped parses them all)."""
        spelled = mentioning if mentioning is not None and _UNESCAPED.fullmatch(mentioning) else None
        with no_cyclic_gc():
            for fn, text in list(self.unparsed.items()):
                if spelled is None or spelled in text:
                    fn.parse_body()

    def drop(self) -> None:
        """Break the model's reference cycles (values and their uses, instructions and their blocks,
        blocks and their function, functions and the module, a lazy parse's bodies and its parser) for a
        module its owner is done with: reference counting frees it when the last reference goes, where
        the cyclic collector's pass over it costs two to three times as long. The module is empty
        afterwards and each of its values unusable (its operands and uses are gone)."""
        for fn in self.functions.values():
            fn.release()
        for table in (self.globals, self.aliases):
            for value in table.values():
                value.release()
        for node in self.metadata:
            if hasattr(node, "operands"):  # not released through a user
                node.release()
            node.parts = []  # nodes name each other (a subprogram and its variables)
        self.functions, self.globals, self.aliases, self.unparsed = {}, {}, {}, {}
        self.metadata, self.named_metadata = [], {}

    def get_struct(self, name: str) -> T.StructType:
        """The named struct ``%name`` (created opaque if new)."""
        t = self.struct_types.get(name)
        if t is None:
            t = self.struct_types[name] = T.StructType(None, False, name)
        return t

    def add_function(self, fn: Function) -> Function:
        if fn.name and fn.name in self.functions:
            raise ValueError(f"function @{fn.name} already exists")
        self.functions[fn.name or f"\0{id(fn)}"] = fn
        fn.module = self
        return fn

    def add_global(self, gv: GlobalVariable) -> GlobalVariable:
        if gv.name and gv.name in self.globals:
            raise ValueError(f"global @{gv.name} already exists")
        self.globals[gv.name or f"\0{id(gv)}"] = gv
        gv.module = self
        return gv

    def _remove(self, table: dict[str, Function] | dict[str, GlobalVariable], value: GlobalValue) -> None:
        uses = value.uses
        if uses:
            raise ValueError(f"cannot remove {value!r}: still used by {len(uses)} use(s)")
        key = next(k for k, v in table.items() if v is value)
        del table[key]
        value.drop_operands()
        if isinstance(value, Function):
            for inst in value.instructions():
                inst.drop_operands()
                for r in inst.debug_records:
                    r.drop_operands()
        value.module = None

    def remove_function(self, fn: Function) -> None:
        self._remove(self.functions, fn)

    def rename_function(self, fn: Function, new: str) -> Function:
        """``fn`` named ``new`` (its uses print the new name), at its place in :attr:`functions`; a
        function already named ``new`` is a ValueError (point the uses at it with
        ``replace_all_uses_with`` instead)."""
        other = self.functions.get(new)
        if other is not None and other is not fn:
            raise ValueError(f"function @{new} already exists")
        fn.name = new
        self.functions = {(new if f is fn else k): f for k, f in self.functions.items()}
        return fn

    def remove_global(self, gv: GlobalVariable) -> None:
        self._remove(self.globals, gv)

    def add_metadata(self, node: MDNode) -> MDNode:
        self.metadata.append(node)
        return node

    def get_named_metadata(self, name: str) -> NamedMetadata:
        nm = self.named_metadata.get(name)
        if nm is None:
            nm = self.named_metadata[name] = NamedMetadata(name)
        return nm

    def module_flag(self, key: str) -> MDNode | None:
        """The ``!llvm.module.flags`` entry named ``key``, if any."""
        nm = self.named_metadata.get("llvm.module.flags")
        for node in nm.nodes if nm is not None else ():
            if any(type(p) is str and f'!"{key}"' in p for p in node.parts):
                return node
        return None

    def add_module_flag(self, behavior: int, key: str, value: Value) -> MDNode:
        """Add ``!{i32 behavior, !"key", value}`` to ``!llvm.module.flags`` (the existing entry if
        ``key`` is already set)."""
        node = self.module_flag(key)
        if node is not None:
            return node
        escaped = key.replace("\\", "\\5C").replace('"', "\\22")
        node = MDNode(["!{", T.i32, " ", 0, f', !"{escaped}", ', value.type, " ", 1, "}"],
                      [const_int(T.i32, behavior), value])
        self.add_metadata(node)
        self.get_named_metadata("llvm.module.flags").nodes.append(node)
        return node

    def get_global(self, name: str) -> GlobalValue | None:
        return self.functions.get(name) or self.globals.get(name) or self.aliases.get(name)


__all__ = ["BasicBlock", "DebugRecord", "Function", "GlobalAlias", "GlobalValue", "GlobalVariable", "Module",
           "no_cyclic_gc"]
