"""Loading the Enzyme plugin for a compile imports no command-line module (gpuc's parser, the plugin's
``gpuc enzyme``): those load when gpuc builds its parser."""

from __future__ import annotations

import json
import subprocess
import sys

CHILD = """
import json, sys
import gpucompiler.plugin as gp
gp.enabled(["enzyme"])
print(json.dumps(sorted(m for m in sys.modules if m.split(".")[:2] in (["gpucompiler", "cli"], ["enzyme_plugin", "cli"])
                        or m in ("argparse", "enzyme_plugin.cc"))))
"""


def test_the_loaded_plugin_imports_no_command_line_module():
    done = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, check=True)
    assert json.loads(done.stdout) == []


def test_gpuc_still_has_the_plugins_command():
    done = subprocess.run([sys.executable, "-m", "gpucompiler", "enzyme", "--help"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "usage:" in done.stdout and "enzyme" in done.stdout
