"""What the attack tests need to act as someone else: a second local user, a directory they can reach."""

from __future__ import annotations

import os
import shutil
import tempfile
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

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


def public_directory() -> Iterator[Path]:
    """A fresh directory both users can reach (mode 755, under /tmp), removed afterwards."""
    path = Path(tempfile.mkdtemp(prefix="gpuc-attack-", dir="/tmp"))
    os.chmod(path, 0o755)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)
