"""Advisory file locks (POSIX `flock`), so concurrent runs can share a folder.

Two uses: a writer holds a lock on its temp file while it exists, so another
run's cleanup can tell a live write from a leftover of a killed one; and a
read-merge-replace of one file (a perf baseline) holds a lock on its folder,
so two runs merge instead of the last one winning. A lock dies with its
process, so a `kill -9` never leaves one behind. Where `fcntl` does not
exist (Windows) locking is a no-op: single runs behave the same, concurrent
runs are not protected there.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

try:
    import fcntl
except ImportError:  # Windows
    fcntl = None  # type: ignore[assignment]


def available() -> bool:
    """Whether locks exist here (`fcntl`): without them no lock tells a live run from a dead one."""
    return fcntl is not None


def lock(fd: int) -> bool:
    """Take an exclusive lock on an open file, waiting for it; False where locks do not exist."""
    if fcntl is None:
        return False
    fcntl.flock(fd, fcntl.LOCK_EX)
    return True


def is_locked(path: Path) -> bool:
    """Whether another open file holds a lock on `path` (a live writer's temp file)."""
    if fcntl is None:
        return False
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))  # a FIFO must not block
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)
    return False


@contextmanager
def folder_lock(folder: Path) -> Iterator[None]:
    """Hold an exclusive lock on a folder (created if missing) for the block; no lock file is left."""
    folder.mkdir(parents=True, exist_ok=True)
    if fcntl is None:
        yield
        return
    fd = os.open(folder, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)
