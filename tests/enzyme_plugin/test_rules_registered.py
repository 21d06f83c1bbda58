"""The language's AD rules are all registered with the plugin, whatever the program imported: a kernel
launch inside differentiated compiled code points to the launch tape in a process that never imported
``enzyme_plugin.launches`` (before, that rule was registered by importing it)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

PROGRAM = f"""
import json, sys
sys.path.insert(0, {str(HERE)!r})
import numpy as np
import launch_programs as P
from enzyme_plugin import Duplicated, Reverse, autodiff
from gpucompiler.errors import TypeInferenceError

x, y = np.ones(4), np.zeros(4)
try:
    autodiff(Reverse, P.host_program, Duplicated(x, np.zeros(4)), Duplicated(y, np.ones(4)))
    out = {{"raised": None}}
except TypeInferenceError as exc:
    out = {{"raised": type(exc).__name__, "message": exc.message, "hint": exc.hint, "file": exc.filename}}
out["launches imported"] = "enzyme_plugin.launches" in sys.modules
print(json.dumps(out))
"""


def test_a_launch_in_differentiated_compiled_code_points_to_the_launch_tape_without_importing_launches(tmp_path):
    done = subprocess.run([sys.executable, "-c", PROGRAM], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "GPUC_CACHE_DIR": str(tmp_path / "cache")})
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["launches imported"] is False
    assert out["raised"] == "TypeInferenceError"
    assert "in compiled code: kernels are launched from Python" in out["message"]
    assert "LaunchTape" in out["hint"] and out["file"] == str(HERE / "launch_programs.py")


def _cube(x):
    return x * x * x


def test_the_generated_callers_autodiff_is_the_same_call_as_the_users_in_compiled_code_and_from_python():
    """The rules know ``autodiff`` by its ``Call``: the user's and the one generated callers use
    (``autodiff_deferred``, below the modules that run ``autodiff`` from Python) type and run alike."""
    from enzyme_plugin import Active, Reverse, autodiff
    from enzyme_plugin.calls import Call, call_of
    from enzyme_plugin.compiled import autodiff_deferred
    from gpucompiler import jit

    assert call_of(autodiff) is Call.AUTODIFF and call_of(autodiff_deferred) is Call.AUTODIFF
    assert call_of(_cube) is None and call_of(print) is None

    @jit(plugins=("enzyme",))
    def both(x):
        return autodiff(Reverse, _cube, Active(x))[0] + 10.0 * autodiff_deferred(Reverse, _cube, Active(x))[0]

    assert both(1.5) == 11.0 * 3 * 1.5 ** 2
    assert autodiff_deferred(Reverse, _cube, Active(2.0)) == (12.0,)
