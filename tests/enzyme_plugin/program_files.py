"""Generated test programs written to a file and imported, so that their functions have source the
frontend can read."""

from __future__ import annotations

import importlib.util


def load_program(tmp_path, name: str, source: str, attr: str = "f"):
    """``attr`` of the module ``name`` made from ``source`` in ``tmp_path``."""
    path = tmp_path / f"{name}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, attr)
