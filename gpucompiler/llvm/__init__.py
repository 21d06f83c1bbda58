"""A mutable Python model of LLVM IR: ``parse(text) -> Module``, ``str(module)`` prints it.

``binding`` keeps the llvmlite helpers (``parse_ir``, ``initialize``).
"""

from . import binding, types
from .binding import ADDRESSES, address_bindings, initialize, parse_ir
from .builder import Builder
from .instructions import DebugRecord, Instruction
from .metadata import AttributeGroup, MDNode, NamedMetadata
from .module import BasicBlock, Function, GlobalAlias, GlobalValue, GlobalVariable, Module
from .parser import no_cyclic_gc, parse
from .printer import print_module
from .values import (Argument, ConstantAggregate, ConstantData, ConstantExpr, InlineAsm, Use, User, Value,
                     const_float, const_int, constant)

__all__ = [
    "ADDRESSES", "address_bindings", "Argument", "AttributeGroup", "BasicBlock", "Builder", "ConstantAggregate", "ConstantData", "ConstantExpr",
    "DebugRecord", "Function", "GlobalAlias", "GlobalValue", "GlobalVariable", "InlineAsm", "Instruction",
    "MDNode", "Module", "NamedMetadata", "Use", "User", "Value", "binding", "const_float", "const_int",
    "constant", "initialize", "no_cyclic_gc", "parse", "parse_ir", "print_module", "types",
]
