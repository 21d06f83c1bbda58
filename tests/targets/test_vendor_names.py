"""No module outside a target's files and the runtimes names a vendor's intrinsics or a GPU target class.

A target owns everything vendor-specific (docs/architecture.md): the driver,
the language, the service and the plugins reach it through the hooks of
:class:`gpucompiler.core.Target`. The scan reads the source of
``gpucompiler``, ``enzyme_plugin`` and the first-party plugins.
"""

from __future__ import annotations

import re
from pathlib import Path

from gpucompiler.targets import target_classes

ROOT = Path(__file__).resolve().parents[2]
SCANNED = ("gpucompiler", "enzyme_plugin", "plugins")
#: where vendor knowledge lives: the targets' files and the runtimes that load their code
OWNERS = ("gpucompiler/targets/", "gpucompiler/runtime/")
VENDOR = re.compile(r"__nv_|llvm\.nvvm\.")


def _gpu_target_class_names() -> list[str]:
    return sorted(cls.__name__ for cls in target_classes().values() if cls().is_gpu)


def _offenders(pattern: re.Pattern[str]) -> list[str]:
    found = []
    for top in SCANNED:
        for path in sorted((ROOT / top).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            if rel.startswith(OWNERS):
                continue
            for number, line in enumerate(path.read_text().splitlines(), 1):
                if pattern.search(line):
                    found.append(f"{rel}:{number}: {line.strip()}")
    return found


def test_no_module_outside_the_targets_names_vendor_intrinsics():
    assert _offenders(VENDOR) == [], "ask the target (a hook of gpucompiler.core.Target) instead"


def test_no_module_outside_the_targets_names_a_gpu_target_class():
    names = _gpu_target_class_names()
    assert "PTXTarget" in names  # the scan cannot pass for want of a class to look for
    assert _offenders(re.compile(r"\b(" + "|".join(names) + r")\b")) == [], \
        "take a target object (parse_target, @kernel(target=...), the kernel's target) instead of a class"


def test_the_scan_finds_a_vendor_name():
    """The patterns match what they are for (they cannot pass vacuously)."""
    assert VENDOR.search('cg.call_extern("__nv_sin", rt, xs)')
    assert VENDOR.search('name = "llvm.nvvm.read.ptx.sreg.tid.x"')
    assert not VENDOR.search("target.math_to_device(name)")
