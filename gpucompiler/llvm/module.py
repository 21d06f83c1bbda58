"""Module, functions, blocks, global variables and aliases."""

from __future__ import annotations

from . import types as T
from .instructions import DebugRecord, Instruction
from .metadata import AttributeGroup, MDNode, NamedMetadata, _attr_key
from .values import Argument, User, Value


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
        preds = (u.user.parent for u in self._uses if type(u.user) is Instruction and u.user.is_terminator)
        return list(dict.fromkeys(preds))

    def append(self, inst: Instruction) -> Instruction:
        self.instructions.append(inst)
        inst.parent = self
        return inst

    def erase(self) -> None:
        """Remove the block and its instructions (their values must be unused outside it)."""
        for inst in self.instructions:
            inst.drop_operands()
        self.parent.blocks.remove(self)
        self.parent = None


class GlobalValue(User):
    """Common base: module-level named values (``@name``)."""

    __slots__ = ("module", "metadata")
    sigil = "@"


class GlobalVariable(GlobalValue):
    """``@g = <prefix> global|constant <value_type> [init]<suffix>``."""

    __slots__ = ("value_type", "prefix", "is_constant", "suffix")

    def __init__(self, name: str, value_type: T.Type, *, prefix: str = "", is_constant: bool = False,
                 initializer: Value | None = None, suffix: str = "", addrspace: int = 0):
        GlobalValue.__init__(self, T.ptr(addrspace), (initializer,) if initializer is not None else (), name)
        self.value_type, self.prefix, self.is_constant, self.suffix = value_type, prefix, is_constant, suffix
        self.metadata: dict = {}
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


class Function(GlobalValue):
    """``define``/``declare``. ``prefix`` holds linkage, visibility, calling convention and
    return attributes; ``pre_attrs`` unnamed_addr/addrspace; ``attributes`` inline attributes and
    ``attribute_groups`` the ``#N`` groups; ``post`` (a part list with operand slots) section,
    align, gc, personality, prefix and prologue data."""

    __slots__ = ("function_type", "args", "blocks", "prefix", "pre_attrs", "attributes",
                 "attribute_groups", "post", "_declared")

    def __init__(self, name: str, function_type: T.FunctionType, *, prefix: str = "", arg_names=(), addrspace: int = 0):
        GlobalValue.__init__(self, T.ptr(addrspace), (), name)
        self.function_type = function_type
        names = list(arg_names) + [""] * (len(function_type.params) - len(arg_names))
        self.args = [Argument(t, n, "", self) for t, n in zip(function_type.params, names)]
        self.blocks: list[BasicBlock] = []
        self.prefix, self.pre_attrs, self.post = prefix, "", []
        self.attributes: list[str] = []
        self.attribute_groups: list[AttributeGroup] = []
        self.metadata: dict = {}
        self.module = None
        self._declared = True

    @property
    def return_type(self) -> T.Type:
        return self.function_type.ret

    @property
    def is_declaration(self) -> bool:
        return not self.blocks

    @property
    def entry(self) -> BasicBlock:
        return self.blocks[0]

    def instructions(self):
        """Iterate over every instruction, block by block."""
        for b in self.blocks:
            yield from b.instructions

    def append_block(self, name: str = "") -> BasicBlock:
        block = BasicBlock(name, self)
        self.blocks.append(block)
        return block

    # -- attributes ----------------------------------------------------------
    def get_attributes(self) -> list[str]:
        """Every function attribute, inline and from groups."""
        out = list(self.attributes)
        for g in self.attribute_groups:
            out.extend(g.attrs)
        return out

    def has_attribute(self, key: str) -> bool:
        return any(_attr_key(a) == key for a in self.get_attributes())

    def add_attribute(self, attr: str) -> None:
        """Add (or replace, by key) a function attribute such as ``"nounwind"`` or ``'"k"="v"'``."""
        self.remove_attribute(_attr_key(attr))
        self.attributes.append(attr)

    def remove_attribute(self, key: str) -> None:
        self.attributes = [a for a in self.attributes if _attr_key(a) != key]
        for i, g in enumerate(self.attribute_groups):
            if key in g:
                self.attribute_groups[i] = AttributeGroup([a for a in g.attrs if _attr_key(a) != key])
                if self.module is not None:
                    self.module.attribute_groups.append(self.attribute_groups[i])

    def clone(self, new_name: str) -> Function:
        """A deep copy named ``new_name``, added to the same module."""
        from .clone import clone_function

        return clone_function(self, new_name)

    def erase(self) -> None:
        """Remove from the module; the function must be unused."""
        self.module.remove_function(self)


class Module:
    """A parsed or built LLVM module."""

    __slots__ = ("source_filename", "datalayout", "triple", "asm", "struct_types", "comdats",
                 "globals", "functions", "aliases", "attribute_groups", "named_metadata", "metadata")

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

    def __str__(self) -> str:
        from .printer import print_module

        return print_module(self)

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

    def _remove(self, table: dict, value: GlobalValue) -> None:
        if value._uses:
            raise ValueError(f"cannot remove {value!r}: still used by {len(value._uses)} use(s)")
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

    def get_global(self, name: str) -> GlobalValue | None:
        return self.functions.get(name) or self.globals.get(name) or self.aliases.get(name)


__all__ = ["BasicBlock", "DebugRecord", "Function", "GlobalAlias", "GlobalValue", "GlobalVariable", "Module"]
