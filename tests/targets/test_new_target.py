"""A new target in one file: WebAssembly (wasm32) as a one-thread device, compiling a kernel to its triple.

Everything the target knows is here: its name (defining the class registers
it), triple and machine, its overlay of the kernel language (one thread: every
index 0, every size 1; a barrier waits for nobody), its output. Nothing else
in the compiler changes: ``parse_target`` and the command line know it,
``@kernel(target=...)`` compiles for it, and a launch says that no runtime
loads its code (a runtime file would add one). docs/architecture.md walks
through this file.
"""

from __future__ import annotations

import importlib
import subprocess
import sys

import attrs
import llvmlite.binding as llvm
import numpy as np
import pytest
from llvmlite import ir

from gpucompiler import device as gd, kernel, types as T
from gpucompiler.core import Rules, Target
from gpucompiler.device import KernelLowering, kernel_rules, new_shared_name
from gpucompiler.errors import ConfigError, LaunchError, UnknownTargetError
from gpucompiler.interpreter.rules import RuleSet
from gpucompiler.llvm.binding import initialize
from gpucompiler.targets import known_targets, parse_target, spelling
from gpucompiler.targets.native import cached_target_machine, emit_with

TRIPLE = "wasm32-unknown-unknown"
_I64 = ir.IntType(64)


def _one_thread(cg, triple, axis):
    """threadIdx/blockIdx are 0, blockDim/gridDim 1: a launch is one block of one thread."""
    return ir.Constant(_I64, 1 if triple.name in ("blockDim", "gridDim") else 0)


def _shared(cg, array_type):
    g = ir.GlobalVariable(cg.mod.module, array_type, name=new_shared_name(cg))
    g.linkage = "internal"  # pyright: ignore[reportAttributeAccessIssue]
    g.initializer = ir.Constant(array_type, None)  # pyright: ignore[reportAttributeAccessIssue]
    return g


KERNEL_RULES = kernel_rules(RuleSet("toy.kernel.wasm", target="wasm", builtin=True),
                            KernelLowering(_one_thread, lambda cg: None, _shared, lambda cg, word, delta: word))


@attrs.frozen
class WasmTarget(Target):
    """WebAssembly, one thread per launch."""

    name = "wasm"
    is_gpu = True

    def triple(self) -> str:
        return TRIPLE

    def target_machine(self, opt_level: int) -> llvm.TargetMachine:
        initialize()
        return cached_target_machine(TRIPLE, "generic", "", opt_level)

    def rule_overlays(self) -> tuple[Rules, ...]:
        return (KERNEL_RULES,)

    def emit(self, job, module, kind: str) -> str | bytes:
        return emit_with(self.target_machine(job.config.opt_level), module, kind)


@kernel(target=WasmTarget())
def scale(a, x, out):
    i = gd.grid(1)
    if i < out.shape[0]:
        gd.syncthreads()
        out[i] = a * x[i]


A = T.ArrayType(T.float64, 1, "C")


def test_the_new_target_is_known_by_name_from_its_file():
    assert parse_target("wasm") == WasmTarget()
    assert "wasm" in known_targets()


def test_a_kernel_compiles_to_the_targets_triple_through_its_overlay():
    text = scale.inspect_llvm(T.float64, A, A)
    module = llvm.parse_assembly(text)
    module.verify()
    assert module.triple == TRIPLE
    assert module.data_layout == str(WasmTarget().target_machine(2).target_data)
    assert "nvvm" not in text and "gpuc_emu" not in text  # the overlay's lowering, no other target's
    code, job = scale.compile((T.float64, A, A))
    assert job.target == WasmTarget() and job.config.kernel
    assert isinstance(code, bytes) and code[:4] == b"\0asm"  # a WebAssembly object file


def test_the_same_kernel_still_runs_on_the_cpu_emulation():
    x, out = np.arange(5.0), np.zeros(5)
    scale[1, 8, "cpu"](2.5, x, out)
    np.testing.assert_array_equal(out, 2.5 * np.arange(5.0))


def test_a_launch_on_a_target_without_a_runtime_is_a_launch_error_naming_it():
    with pytest.raises(LaunchError, match="no runtime launches kernels for target 'wasm'"):
        scale[1, 1](2.0, np.zeros(1), np.zeros(1))
    with pytest.raises(LaunchError, match="'wasm'"):
        kernel(scale.py_func)[1, 1, WasmTarget()](2.0, np.zeros(1), np.zeros(1))


def test_kernel_options_the_target_does_not_have_are_a_config_error():
    with pytest.raises(ConfigError, match="target 'wasm' has no kernel options"):
        kernel(scale.py_func, target=WasmTarget(), fastmath=True).compile((T.float64, A, A))
    with pytest.raises(ConfigError, match="must be a Target object"):
        kernel(scale.py_func, target="wasm")


def test_two_target_classes_of_one_name_are_refused():
    with pytest.raises(ConfigError, match="two target classes are named 'wasm'"):
        type("OtherWasm", (Target,), {"name": "wasm"})



def test_a_target_module_that_cannot_be_imported_is_named_where_a_target_is_asked_for(monkeypatch):
    """A broken target file leaves the others usable, and the errors that need a target say why it is missing."""
    failure = "gpucompiler.targets.broken: SyntaxError: invalid syntax (broken.py, line 3)"
    monkeypatch.setattr(spelling, "_load_all", lambda: (failure,))
    with pytest.raises(UnknownTargetError, match=r"could not be imported: gpucompiler\.targets\.broken: SyntaxError"):
        parse_target("broken")
    assert parse_target("wasm") == WasmTarget()
    monkeypatch.setattr(spelling, "target_classes", lambda: {"wasm": WasmTarget})
    monkeypatch.setattr(spelling, "KERNEL_DEFAULT_MODULE", "gpucompiler.targets.native")  # no default there
    with pytest.raises(ConfigError, match=r"found none \(target modules that could not be imported: .*broken"):
        spelling.default_kernel_target()


def test_the_default_kernel_targets_module_holds_the_one_class_that_says_so():
    defaults = [cls for cls in spelling.target_classes().values() if cls.kernel_default]
    assert len(defaults) == 1 and defaults[0].__module__ == spelling.KERNEL_DEFAULT_MODULE
    assert type(spelling.default_kernel_target()) is defaults[0]


def test_a_targets_runtime_module_registers_the_runtime_that_launches_it():
    from gpucompiler.runtime.launchers import RUNTIMES

    named = [cls for cls in spelling.target_classes().values() if cls.runtime_module]
    assert {cls.name for cls in named} >= {"ptx", "amdgpu", "spirv"}
    for cls in named:
        importlib.import_module(cls.runtime_module)
        assert any(base in RUNTIMES for base in cls.__mro__), cls


def test_a_launch_on_the_default_target_imports_no_other_target_or_runtime():
    code = ("import sys\n"
            "from gpucompiler.targets.spelling import default_kernel_target\n"
            "from gpucompiler.runtime.launchers import runtime_for\n"
            "runtime_for(default_kernel_target())\n"
            "print(sorted(m for m in sys.modules if m.startswith(('gpucompiler.targets.', 'gpucompiler.runtime.'))))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = done.stdout
    assert "gpucompiler.runtime.cuda" in loaded and "gpucompiler.targets.ptx" in loaded
    for other in ("amdgpu", "spirv", "runtime.vulkan", "runtime.hip"):
        assert other not in loaded, loaded
