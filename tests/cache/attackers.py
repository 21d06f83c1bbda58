"""What the attack tests need to act as someone else: a second local user, a directory they can reach."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.cache.servers import ROOT

#: the second local user (``nobody``) and a group the victim shares a directory with
OTHER_UID = 65534
TEAM_GID = 64999


def as_another_user(action: Callable[[], None], *, groups: tuple[int, ...] = ()) -> None:
    """Run ``action`` in a forked child as uid/gid 65534 (with supplementary ``groups``): what a second
    local user can do. Needs root (skips otherwise: no other uid to become)."""
    if os.getuid() != 0:
        pytest.skip("acting as a second local user needs root (setuid to 65534); no other uid is available")
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        code = 1
        try:
            os.setgroups(list(groups))
            os.setgid(OTHER_UID)
            os.setuid(OTHER_UID)
            action()
            code = 0
        except BaseException:
            traceback.print_exc()
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, "the other user's action failed (traceback above)"


def run_as_another_user(script: str, *args: str, groups: tuple[int, ...] = ()) -> str:
    """Run a Python ``script`` (with ``args``) in a fresh interpreter as uid/gid 65534 (and ``groups``):
    for actions that compile (LLVM in a forked child of a threaded process is not safe). Its stdout."""
    setpriv = shutil.which("setpriv")
    if os.getuid() != 0 or setpriv is None:
        pytest.skip("acting as a second local user needs root and setpriv (util-linux); no other uid is available")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HOME": "/nonexistent", "GPUC_CACHE": "off"}
    who = [setpriv, f"--reuid={OTHER_UID}", f"--regid={OTHER_UID}",
           f"--groups={','.join(map(str, groups))}" if groups else "--clear-groups"]
    probe = subprocess.run([*who, sys.executable, "-c", "import attrs, llvmlite, numpy"], env=env, cwd=ROOT,
                           capture_output=True, text=True, timeout=60)
    if probe.returncode != 0:
        pytest.skip(f"uid {OTHER_UID} cannot import this interpreter's packages (a virtual environment in a "
                    f"private directory?): make it readable by others, as .ci/run does")
    proc = subprocess.run([*who, sys.executable, "-c", script, *args], env=env, cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, f"the other user's script failed:\n{proc.stderr}"
    return proc.stdout


def public_directory() -> Iterator[Path]:
    """A fresh directory both users can reach (mode 755, under /tmp), removed afterwards."""
    path = Path(tempfile.mkdtemp(prefix="gpuc-attack-", dir="/tmp"))
    os.chmod(path, 0o755)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)
