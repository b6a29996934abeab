"""Files written so an interrupted run leaves each one old or new, never partial."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def atomic_write_text(target: Path, data: str) -> None:
    """Write `data` to a temp file beside `target`, fsync, then rename over it."""
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
