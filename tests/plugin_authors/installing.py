"""Installing plugins as ``pip`` would: a ``*.dist-info`` with ``gpucompiler.plugins`` entry points."""

from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).resolve().parent
AUTHOR_PLUGINS = {"divsan": "author_plugins.divsan:DivSan", "overlay": "author_plugins.overlay:OverlayPlugin",
                  "keep_rules": "author_plugins.keep_rules:KeepRules",
                  "straight": "author_plugins.straight:StraightThrough"}


def install(directory: Path, dist: str, entry_points: dict[str, str]) -> Path:
    """A distribution ``dist`` whose ``gpucompiler.plugins`` entry points are ``entry_points``."""
    info = directory / f"{dist}-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 1.0\n")
    lines = [f"{name} = {value}" for name, value in entry_points.items()]
    (info / "entry_points.txt").write_text("[gpucompiler.plugins]\n" + "\n".join(lines) + "\n")
    return directory
