"""Another torch's snapshot set: where a new torch's first run points.

With `{torch}` in the snapshot folder each torch keeps a set of its own. On
a torch whose set does not hold a test yet, every file of the test is
missing, which alone reads like a broken checkout. When another torch's set
holds the test, the failure opens with that set and ends with the two steps
of an upgrade: record this torch's set, then compare the two with
`python -m pytest_torchcompile diff OLD NEW`. The set named is the torch
before this one (`versions.nearness`); the run's summary says it once.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ...common.versions import nearness
from .claims import TestFolder
from .outcome import Outcome, Status
from .paths import is_artifact_file
from .placeholders import torch_sets

DIFF_COMMAND = "python -m pytest_torchcompile diff"
#: statuses of a test none of whose files this torch's set held before the run
NOTHING_STORED = frozenset({Status.MISSING, Status.WRITTEN})

Show = Callable[[Path], str]


@dataclass(frozen=True)
class OtherTorch:
    """The set of another torch that holds a test this torch's set does not.

    Paths are as shown to the user (relative to the rootdir), so the data
    travels on a test's report unchanged.
    """

    torch: str
    root: str
    test: str
    now: str
    this_root: str
    this_test: str

    def headline(self) -> str:
        """The failure's first line (the short test summary shows it)."""
        return (
            f"no snapshots of this test for torch {self.now} yet ({self.this_test}); "
            f"torch {self.torch}'s set has them ({self.test})"
        )

    def diff(self) -> str:
        return f"{DIFF_COMMAND} {shlex.quote(self.root)} {shlex.quote(self.this_root)}"

    def next_steps(self) -> str:
        """The failure's last line: how a new torch gets its set, and how to review the upgrade."""
        return (
            f"a new torch: record its set with `pytest --update-snapshots`, then review what the "
            f"upgrade changed: {self.diff()}"
        )

    def to_json(self) -> dict[str, str]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> OtherTorch:
        return cls(**{name: str(data[name]) for name in cls.__dataclass_fields__})


def first_run(outcomes: Sequence[Outcome]) -> bool:
    """None of the test's files was stored in this torch's set (all missing, or all new)."""
    return bool(outcomes) and all(o.status in NOTHING_STORED for o in outcomes)


def other_torch(
    template: str,
    rootdir: Path,
    now: str,
    device: str,
    this_root: Path,
    test: TestFolder,
    show: Show,
) -> OtherTorch | None:
    """The nearest other torch's set holding `test` (its files, on `device`); None without one."""
    holding = {
        version: root
        for version, root in torch_sets(rootdir, template, device).items()
        if root != this_root and _holds(test.under(root))
    }
    if not holding:
        return None
    version = max(holding, key=lambda v: nearness(now, v))
    root = holding[version]
    return OtherTorch(
        version,
        show(root),
        show(test.under(root)),
        now,
        show(this_root),
        show(test.under(this_root)),
    )


def summary_lines(found: Sequence[OtherTorch], update: bool) -> list[str]:
    """Once per pair of sets: how many tests were new on this torch, and the `diff` to review them."""
    counts: dict[tuple[str, str, str, str], int] = {}
    for other in found:
        key = (other.torch, other.root, other.now, other.this_root)
        counts[key] = counts.get(key, 0) + 1
    lines = []
    for (torch, root, now, this_root), count in sorted(counts.items()):
        pair = OtherTorch(torch, root, "", now, this_root, "")
        tests = f"{count} test{'s' if count > 1 else ''}"
        if update:
            lines.append(
                f"torch {now}'s snapshots written for {tests} that torch {torch}'s set holds "
                f"({this_root} beside {root}): review what the upgrade changed: {pair.diff()}"
            )
        else:
            lines.append(
                f"torch {now} has no snapshots yet for {tests} that torch {torch}'s set holds "
                f"({root}): {pair.next_steps()}"
            )
    return lines


def _holds(folder: Path) -> bool:
    """The test's folder holds snapshot files (its own, or its cases' folders')."""
    try:
        return any(p.is_file() and is_artifact_file(p.name) for p in folder.rglob("*"))
    except OSError:
        return False
