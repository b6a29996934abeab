"""The fresh processes' temporary folders: named for their owner, removed when a killed run left them.

Each holds what a fresh process reads and writes (a call's pickled model and
inputs, its answer, its output; the fork server's log), under the system's
temporary folder as `torchcompile_<kind>_<pid>_<random>`. The process that
made it holds a lock (`flock`) on its `owner.lock` for as long as it exists,
and removes it when done. A run killed by SIGKILL or SIGTERM cannot: its
folders stay, and `remove_leftovers`, at the start of a later session,
removes a folder only when all of these hold: the name is one of the
plugin's own kinds, it is a folder (not a link) this user owns, its lock
file exists and no process holds its lock, and the pid in its name is not
a live process. A concurrent run (another xdist worker, another terminal)
holds its locks, so its folders are never touched; a folder without a
lock file (an older plugin's, or one being made) is left alone. Where
locks do not exist (no `fcntl`), nothing is removed.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import tempfile
from pathlib import Path

from ...common import locks

PREFIX = "torchcompile_"
#: what each kind holds: the fork server's log, a program run's files, a precompiled artifact
KINDS = ("forkserver", "program", "precompile")
#: `torchcompile_<kind>_<pid>_<mkdtemp's random part>`: the only names `remove_leftovers` removes
NAME = re.compile(rf"{PREFIX}(?:{'|'.join(KINDS)})_(?P<pid>[0-9]{{1,10}})_[a-z0-9_]{{4,32}}")
LOCK = "owner.lock"


class OwnedFolder:
    """A temporary folder this process made and holds the lock of, until `cleanup`."""

    def __init__(self, kind: str) -> None:
        assert kind in KINDS, kind
        self.path = Path(tempfile.mkdtemp(prefix=f"{PREFIX}{kind}_{os.getpid()}_"))
        self._lock: int | None = os.open(self.path / LOCK, os.O_WRONLY | os.O_CREAT, 0o600)
        locks.lock(self._lock)

    def cleanup(self) -> None:
        """Remove the folder and release its lock (again: a no-op)."""
        if self._lock is None:
            return
        os.close(
            self._lock
        )  # first: an open file cannot be removed on Windows (this pid still lives)
        self._lock = None
        shutil.rmtree(self.path, ignore_errors=True)


def remove_leftovers(folder: Path | None = None) -> list[Path]:
    """Remove the folders killed runs left in `folder` (the system's temporary folder); the removed."""
    if not locks.available():
        return []
    root = Path(folder or tempfile.gettempdir())
    try:
        names = [n for n in os.listdir(root) if NAME.fullmatch(n)]
    except OSError:
        return []
    removed = []
    for name in names:
        path = root / name
        if _left_over(path, int(NAME.fullmatch(name)["pid"])):  # type: ignore[index]
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
    return removed


def _left_over(path: Path, pid: int) -> bool:
    """Ours, a real folder, its lock file there and free, and its owner's pid not running."""
    try:
        info = os.lstat(path)
        lock_info = os.lstat(path / LOCK)
    except OSError:
        return False
    mine = info.st_uid == os.getuid() and lock_info.st_uid == os.getuid()
    if not (mine and stat.S_ISDIR(info.st_mode) and stat.S_ISREG(lock_info.st_mode)):
        return False
    return not _running(pid) and not locks.is_locked(path / LOCK)


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True  # someone else's process, or no pid at all: not provably dead
    return True
