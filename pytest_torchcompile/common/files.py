"""Files written so an interrupted run leaves each one old or new, never partial."""

from __future__ import annotations

import errno
import os
import secrets
from pathlib import Path

from .locks import lock


def atomic_write_text(target: Path, data: str) -> None:
    """Write `data` to a temp file beside `target`, fsync, then rename over it.

    The file gets the mode `open()` would give a new file (0666 less the
    umask), not `mkstemp`'s 0600. The temp file, `.<name>.<random>.tmp`, is
    locked until renamed, so another run's cleanup leaves a live write alone.
    A folder that a concurrent cleanup removes between creating it and
    creating the temp file is created again. On failure no temp file and no
    folder this call created is left.
    """
    created = [p for p in (target.parent, *target.parent.parents) if not p.exists()]
    try:
        fd, tmp = _create_temp(target)
    except BaseException:
        _remove_empty(created)
        raise
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            held = lock(handle.fileno())
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
            if held:  # rename while still locked; where nothing locks, after closing (Windows cannot rename an open file)
                os.replace(tmp, target)
        if not held:
            os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        _remove_empty(created)
        raise


def _create_temp(target: Path, tries: int = 5) -> tuple[int, Path]:
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    for attempt in range(tries):
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.parent / f".{target.name}.{secrets.token_hex(4)}.tmp"
        try:
            return os.open(tmp, flags, 0o666), tmp
        except FileNotFoundError:  # the folder was removed under us (a concurrent cleanup)
            if attempt == tries - 1:
                raise
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no free temp file name", str(target.parent))


def _remove_empty(folders: list[Path]) -> None:
    for folder in folders:  # deepest first
        try:
            folder.rmdir()
        except OSError:
            return
