"""What a run did to its snapshot files: one report, as syrupy's `SnapshotReport` is.

The tests write and update files (their counts travel on their reports, so
the xdist controller sees its workers'); the end of an update deletes unused
files and stale folders (`housekeeping.py`). Both add to one `SnapshotReport`,
and the run's summary reads the counts, and what was left on disk, from it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .store import FileCounts, UnusedFiles


@dataclass
class SnapshotReport:
    """The run's files written, updated and deleted, its tests' unused files, and the summary's
    lines about unused files and stale folders, with what they left on disk."""

    counts: FileCounts = FileCounts()
    unused: list[UnusedFiles] = field(default_factory=list)  # each passing test's, in report order
    lines: list[str] = field(default_factory=list)
    unused_left: bool = False  # unused files listed, not deleted (not an update)
    stale_left: bool = False  # stale folders listed, not all removed

    def wrote(self, counts: FileCounts) -> None:
        """A test's files written and updated."""
        self.counts += counts

    def found_unused(self, found: UnusedFiles) -> None:
        """A passing test's unused files, as its report carried them."""
        self.unused.append(found)

    def removed_unused(self, lines: list[str], deleted: int, deleting: bool) -> None:
        """A test's unused files, each on a line, `deleted` of them deleted."""
        self.lines += lines
        self.counts += FileCounts(deleted=deleted)
        self.unused_left = self.unused_left or (bool(lines) and not deleting)

    def stale(self, line: str, deleted: int, left: bool) -> None:
        """A stale folder's line, its files deleted, and whether it is still on disk."""
        self.lines.append(line)
        self.counts += FileCounts(deleted=deleted)
        self.stale_left = self.stale_left or left
