"""A mutable Python model of LLVM IR: ``parse(text) -> Module``, ``str(module)`` prints it.

``binding`` keeps the llvmlite helpers (``parse_ir``, ``initialize``), imported with the package;
the model (its ``types`` too) loads on first use.
"""

from typing import TYPE_CHECKING

from ..lazy import attach
from . import binding
from .binding import ADDRESSES, address_bindings, initialize, parse_ir

if TYPE_CHECKING:
    from . import types
    from .builder import Builder
    from .instructions import DebugRecord, Instruction
    from .metadata import AttributeGroup, MDNode, NamedMetadata
    from .module import BasicBlock, Function, GlobalAlias, GlobalValue, GlobalVariable, Module
    from .parser import no_cyclic_gc, parse
    from .printer import print_module
    from .values import (Argument, ConstantAggregate, ConstantData, ConstantExpr, InlineAsm, Use, User, Value,
                         const_float, const_int, constant)

#: the model's classes, parser and printer load on first use (:mod:`gpucompiler.lazy`): a compile that never
#: asks for the model (``IRModule.model``) loads only :mod:`.binding`
_LAZY = {"Builder": ".builder", "DebugRecord": ".instructions", "Instruction": ".instructions",
         "AttributeGroup": ".metadata", "MDNode": ".metadata", "NamedMetadata": ".metadata",
         "BasicBlock": ".module", "Function": ".module", "GlobalAlias": ".module", "GlobalValue": ".module",
         "GlobalVariable": ".module", "Module": ".module", "no_cyclic_gc": ".parser", "parse": ".parser",
         "print_module": ".printer", "Argument": ".values", "ConstantAggregate": ".values",
         "ConstantData": ".values", "ConstantExpr": ".values", "InlineAsm": ".values", "Use": ".values",
         "User": ".values", "Value": ".values", "const_float": ".values", "const_int": ".values",
         "constant": ".values"}
__getattr__, __dir__ = attach(__name__, _LAZY, globals(), submodules=True)

__all__ = [
    "ADDRESSES", "address_bindings", "Argument", "AttributeGroup", "BasicBlock", "Builder", "ConstantAggregate", "ConstantData", "ConstantExpr",
    "DebugRecord", "Function", "GlobalAlias", "GlobalValue", "GlobalVariable", "InlineAsm", "Instruction",
    "MDNode", "Module", "NamedMetadata", "Use", "User", "Value", "binding", "const_float", "const_int",
    "constant", "initialize", "no_cyclic_gc", "parse", "parse_ir", "print_module", "types",
]
