"""What comparing one snapshot file found, as plain data.

Apart from `store.py` (which reads and writes the files through syrupy) so
that what reads outcomes (the failure text, the HTML diffs) and the `diff`
command beside them import neither syrupy nor pytest: the command runs where
only this package is installed (`pip install --no-deps`, no torch).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from pathlib import Path


class Status(str, enum.Enum):
    """What comparing one artifact file found (a `str`, so it reads and prints as its word)."""

    MATCHED = "matched"
    WRITTEN = "written"
    UPDATED = "updated"
    MISSING = "missing"
    CHANGED = "changed"
    UNREADABLE = "unreadable"
    UNWRITABLE = "unwritable"

    def __str__(self) -> str:
        return self.value


FAILED = frozenset({Status.MISSING, Status.CHANGED, Status.UNREADABLE, Status.UNWRITABLE})


@dataclass
class Outcome:
    """What comparing one artifact of one case found; `message` is empty when it matched.

    `case` is the case's folder under the test's (empty for a test with one
    case); `old` is the stored text of a changed file, `new` this run's text
    of every compared file (a whole case feeds the verdict).
    """

    path: Path
    status: Status
    message: str = ""
    old: str | None = None
    new: str | None = None
    case: str = ""
    artifact: str = ""

    def __post_init__(self) -> None:
        self.status = Status(self.status)

    @property
    def failed(self) -> bool:
        return self.status in FAILED
