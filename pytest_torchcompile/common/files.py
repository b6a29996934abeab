"""Files written so an interrupted run leaves each one old or new, never partial.

The temp files are named by one exact pattern (`TEMP_NAME`), so a cleanup
recognises the plugin's own leftovers and nothing else.
"""

from __future__ import annotations

import errno
import os
import re
import secrets
from collections.abc import Callable
from pathlib import Path

from .locks import is_locked, lock

#: `.<target file name>.<8 lowercase hex digits>.tmp`: the only temp names `atomic_write_text` writes.
TEMP_NAME = re.compile(r"\.(?P<target>.+)\.[0-9a-f]{8}\.tmp")


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
        tmp = target.parent / f".{target.name}.{secrets.token_hex(4)}.tmp"  # TEMP_NAME
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


def temp_target(name: str) -> str | None:
    """The file name a temp file of `atomic_write_text` was written for; None for any other name."""
    match = TEMP_NAME.fullmatch(name)
    return match["target"] if match else None


def leftover_temps(folder: Path, started: float, target: Callable[[str], bool]) -> list[Path]:
    """Temp files in `folder` that a killed write left: the exact temp name of a
    file `target` accepts, a regular file, older than `started` (this run) and
    locked by no live writer."""
    found = []
    try:
        with os.scandir(folder) as entries:
            for entry in entries:
                name = temp_target(entry.name)
                if name is None or not target(name) or not entry.is_file(follow_symlinks=False):
                    continue
                if entry.stat(follow_symlinks=False).st_mtime < started and not is_locked(
                    Path(entry.path)
                ):
                    found.append(Path(entry.path))
    except OSError:  # a folder that cannot be listed holds nothing to clean
        return []
    return sorted(found)


def unwritable(path: Path) -> str | None:
    """Why files cannot be created at `path` (a folder, created when needed), or None.

    Asked of the nearest folder that exists; nothing is written to find out.
    """
    existing = next((p for p in (path, *path.parents) if p.exists()), None)
    if existing is None or not existing.is_dir():
        return None  # nothing to ask, or a file in the way: the caller's own message says which
    try:
        read_only = bool(os.statvfs(existing).f_flag & os.ST_RDONLY)
    except (OSError, AttributeError):  # no statvfs (Windows)
        read_only = False
    if read_only:
        return f"{existing} is on a read-only file system"
    if not os.access(existing, os.W_OK | os.X_OK):
        return f"permission denied on {existing} (make it writable: chmod u+w {existing})"
    return None
