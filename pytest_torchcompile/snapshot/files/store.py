"""Snapshot files: compare a test's artifact texts with the stored files, or write them.

`TextSnapshotExtension` is syrupy's single-file extension in text mode with
two roles overridden: reading (not UTF-8, or not a regular file, is a clear
message) and writing (atomic, so an interrupted update leaves each file old
or new). `SnapshotStore.check_test` is a test's one visit: it refuses a
folder another test claims (`claims.py`), compares and writes the layout of
`paths.py`, and, once every file matched, finds the test's unused files (an
update deletes them at the end of the run, unless a usage error stopped every
removal: `housekeeping.py`); it writes and deletes only what `ownership.py` allows,
and a file system that refuses gives an `Outcome` with a message, never an
exception. What it did comes back as data (`TestFiles`: outcomes, counts,
lines).
"""

from __future__ import annotations

import errno
import functools
import os
import stat
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from syrupy.data import Snapshot, SnapshotCollection
from syrupy.extensions.single_file import SingleFileSnapshotExtension, WriteMode

from ...common.files import atomic_write_text, leftover_temps
from ..artifacts.legend import with_legend, without_legend
from .claims import Claims, TestFolder
from .generated import mark_generated
from .outcome import Outcome, Status
from .ownership import delete_problem, write_problem
from .paths import artifact_filename, folds_case, is_artifact_file, segment

#: how to write a snapshot that does not exist yet
RECORD_HINT = "run `pytest --update-snapshots` to accept the new output"


class FolderClash(ValueError):
    """A test's snapshot folder, or one of its cases', is another test's or case's."""


class UnreadableSnapshot(Exception):
    """A stored snapshot exists but cannot be read as text."""


class NotAFile(UnreadableSnapshot):
    """A FIFO, socket or device where a snapshot file should be: never read, never replaced."""

    def __init__(self, kind: str) -> None:
        super().__init__(kind)
        self.kind = kind


def _read_regular_file(path: Path) -> bytes | None:
    """The file's bytes; None when it does not exist. Opened without blocking
    (reading a FIFO would hang) and checked to be a regular file (`NotAFile`)."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        return None
    with os.fdopen(fd, "rb") as handle:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(errno.EISDIR, "Is a directory", str(path))
        if not stat.S_ISREG(mode):
            kinds = ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"))
            raise NotAFile(next((kind for test, kind in kinds if test(mode)), "a device"))
        return handle.read()


class TextSnapshotExtension(SingleFileSnapshotExtension):
    """Plain UTF-8 text files, written atomically."""

    _write_mode = WriteMode.TEXT
    file_extension = "txt"

    def read_snapshot_data_from_location(
        self, *, snapshot_location: str, snapshot_name: str, session_id: str
    ) -> str | None:
        raw = _read_regular_file(Path(snapshot_location))
        if raw is None:
            return None
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise UnreadableSnapshot(
                f"snapshot {snapshot_location} is not valid UTF-8 (byte 0x{raw[exc.start]:02x} at offset {exc.start}); "
                "it was edited or damaged outside pytest: run `pytest --update-snapshots` to rewrite it with this run's output"
            ) from None

    @classmethod
    def write_snapshot_collection(
        cls, *, snapshot_collection: SnapshotCollection, name_order: dict[str, int] | None = None
    ) -> None:
        target = Path(snapshot_collection.location)
        data = next(iter(snapshot_collection)).data
        if not isinstance(data, str):
            raise TypeError(f"snapshot data must be str, got {type(data).__name__}")
        atomic_write_text(target, data)


def normalize_newlines(text: str) -> str:
    """CRLF as LF, and exactly one final newline where there was none: how files are compared."""
    text = text.replace("\r\n", "\n")
    return text if not text or text.endswith("\n") else text + "\n"


@dataclass(frozen=True)
class FileCounts:
    """Snapshot files a test (or a run) wrote, updated and deleted: the run's last line."""

    written: int = 0
    updated: int = 0
    deleted: int = 0

    def __add__(self, other: FileCounts) -> FileCounts:
        return FileCounts(
            self.written + other.written,
            self.updated + other.updated,
            self.deleted + other.deleted,
        )

    def to_json(self) -> dict[str, int]:
        return {"written": self.written, "updated": self.updated, "deleted": self.deleted}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> FileCounts:
        return cls(*(int(data.get(name, 0)) for name in ("written", "updated", "deleted")))

    def line(self) -> str:
        return f"{self.written} written, {self.updated} updated, {self.deleted} deleted"


@dataclass(frozen=True)
class UnusedFiles:
    """A passing test's files that its run did not use, in the set at `root`, and (on update)
    the temp files killed updates left beside them: what the end of an update deletes."""

    root: Path
    files: list[Path] = field(default_factory=list)
    temps: list[Path] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "root": str(self.root),
            **{k: list(map(str, getattr(self, k))) for k in ("files", "temps")},
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> UnusedFiles:
        return cls(
            Path(data["root"]), *([Path(p) for p in data.get(k, ())] for k in ("files", "temps"))
        )


@dataclass(frozen=True)
class TestFiles:
    """What one test's visit to the store did: each file's outcome, the counts, and its
    unused files (none when a file failed)."""

    __test__ = False  # not a pytest test class, whatever its name

    folder: Path
    outcomes: list[Outcome]
    counts: FileCounts = FileCounts()
    unused: UnusedFiles | None = None

    @property
    def failed(self) -> bool:
        return any(o.failed for o in self.outcomes)


@dataclass
class SnapshotStore:
    """Compare or write snapshot files under `root`, remembering which were used.

    `started` is when the run began: a temp file older than that and not
    locked is a leftover of a killed update.
    """

    root: Path
    rootdir: Path
    update: bool
    started: float = 0.0
    extension: TextSnapshotExtension = field(default_factory=TextSnapshotExtension)
    used: set[Path] = field(default_factory=set)
    marked: bool = False  # the set's .gitattributes seen to this run (`generated.mark_generated`)

    def check_test(
        self, folder: TestFolder, cases: Sequence[tuple[str, Mapping[str, str]]], claims: Claims
    ) -> TestFiles:
        """A test's visit: compare (on update: write) every case's artifact texts (case
        name -> artifact -> text) with its files, then, when all matched, judge its unused files.

        A test with one case keeps its files in its folder, several cases each
        in a folder of their own. `FolderClash` where the folder, or a case's,
        is another test's, or where two cases would share one.
        """
        test_dir = folder.under(self.root)
        clash = claims.clash(folder, [name for name, _ in cases], self.show(test_dir))
        if clash is not None:
            raise FolderClash(clash)
        outcomes = self._compare(test_dir, cases)
        counts = FileCounts(
            written=sum(o.status is Status.WRITTEN for o in outcomes),
            updated=sum(o.status is Status.UPDATED for o in outcomes),
        )
        checked = TestFiles(test_dir, outcomes, counts)
        return checked if checked.failed else self._unused(checked, folder, claims)

    def _compare(
        self, test_dir: Path, cases: Sequence[tuple[str, Mapping[str, str]]]
    ) -> list[Outcome]:
        if len(cases) == 1:
            folders = {cases[0][0]: ("", test_dir)}
        else:
            paths = self.case_folders(test_dir, [name for name, _ in cases])
            folders = {name: (path.name, path) for (name, _), path in zip(cases, paths)}
        return [
            self.check(folder / artifact_filename(artifact), text, label, artifact)
            for name, texts in cases
            for label, folder in [folders[name]]
            for artifact, text in texts.items()
        ]

    def _unused(self, checked: TestFiles, folder: TestFolder, claims: Claims) -> TestFiles:
        """The test's unused files and, on update, the leftover temp files beside them."""
        own = self._own_folders(folder, claims)
        unused = sorted(p for f in own for p in self.unused_in(f))
        temps = [p for f in own for p in self.leftover_temps(f)] if self.update else []
        found = UnusedFiles(self.root, unused, temps) if unused or temps else None
        return TestFiles(checked.folder, checked.outcomes, checked.counts, found)

    def remove_unused(self, found: UnusedFiles, delete: bool) -> tuple[list[str], int]:
        """A line for each unused file (`unused: P`, `deleted: P`, or why it was kept), and how
        many were deleted: `delete` deletes them and silently removes the temp files."""
        failed = self.delete(found.files + found.temps) if delete else {}
        lines = [
            failed.get(p) or f"{'deleted' if delete else 'unused'}: {self.show(p)}"
            for p in found.files
        ]
        return lines, sum(p not in failed for p in found.files) if delete else 0

    def case_folders(self, test_dir: Path, names: list[str]) -> list[Path]:
        """Each case's folder; `FolderClash` naming both where two would be one folder."""
        folds = folds_case(self.root)
        seen: dict[str, str] = {}
        for name in names:
            key = segment(name).casefold() if folds else segment(name)
            if key in seen:  # distinct names always escape apart: only case folding gets here
                raise FolderClash(
                    f"cases {seen[key]!r} and {name!r} would share one snapshot folder on this file system, "
                    "which does not tell upper from lower case; give them names that differ in more than case"
                )
            seen[key] = name
        return [test_dir / segment(name) for name in names]

    def check(self, path: Path, text: str, case: str = "", artifact: str = "") -> Outcome:
        """Compare `text` with the file at `path`; write it only on update."""
        self.used.add(path)
        outcome = functools.partial(Outcome, path, case=case, artifact=artifact)
        try:
            stored = self.extension.read_snapshot_data_from_location(
                snapshot_location=str(path), snapshot_name=path.name, session_id=""
            )
        except NotAFile as exc:  # not the plugin's: neither compared nor replaced
            return outcome(
                Status.UNREADABLE,
                f"snapshot {self.show(path)} is {exc.kind}, not a file pytest-torchcompile wrote: "
                "it neither reads nor replaces it; delete it, then run `pytest --update-snapshots`",
            )
        except (UnreadableSnapshot, OSError) as exc:
            if self.update:
                return self._write(outcome, text, Status.UPDATED)
            message = str(exc) if isinstance(exc, UnreadableSnapshot) else None
            return outcome(Status.UNREADABLE, message or self._trouble(path, exc, "read"))
        stored = None if stored is None else without_legend(stored)
        if stored is not None and normalize_newlines(stored) == normalize_newlines(text):
            return outcome(Status.MATCHED, new=normalize_newlines(text))
        if self.update:
            return self._write(outcome, text, Status.WRITTEN if stored is None else Status.UPDATED)
        if stored is None:
            message = f"snapshot {self.show(path)} does not exist yet: {RECORD_HINT}"
            return outcome(Status.MISSING, message, new=text)
        return outcome(Status.CHANGED, old=normalize_newlines(stored), new=normalize_newlines(text))

    def _write(self, outcome: functools.partial[Outcome], text: str, status: Status) -> Outcome:
        path: Path = outcome.args[0]
        refused = write_problem(path, self.root, self.show)
        if refused is not None:
            return outcome(Status.UNWRITABLE, f"snapshot {self.show(path)} not written: {refused}")
        collection = SnapshotCollection(location=str(path))
        stored = with_legend(outcome.keywords.get("artifact", ""), text.replace("\r\n", "\n"))
        collection.add(Snapshot(name=path.name, data=stored))
        try:
            self.extension.write_snapshot_collection(snapshot_collection=collection)
        except OSError as exc:
            return outcome(Status.UNWRITABLE, self._trouble(path, exc, "write"))
        if not self.marked:
            mark_generated(self.root)
            self.marked = True
        return outcome(status)

    def _trouble(self, path: Path, exc: OSError, doing: str) -> str:
        """What the file system refused, where, and what to do about it."""
        shown = self.show(path)
        loop = _loop_in(path)
        if loop is not None:
            return f"{self.show(loop)} is a symbolic link that loops: delete it, then run `pytest --update-snapshots`"
        blocker = _file_in_the_way(path)
        if blocker is not None:
            return f"{self.show(blocker)} is a file where a snapshot folder should be: move or delete it, then run `pytest --update-snapshots`"
        if isinstance(exc, IsADirectoryError) or path.is_dir():
            return f"snapshot {shown} is a folder, not a file: move or delete it, then run `pytest --update-snapshots`"
        if isinstance(exc, PermissionError):
            where = path if doing == "read" else _existing_parent(path)
            fix = (
                f"make it readable (chmod u+r {self.show(where)})"
                if doing == "read"
                else f"make it writable (chmod u+w {self.show(where)})"
            )
            return (
                f"cannot {doing} snapshot {shown}: permission denied on {self.show(where)}: {fix}"
            )
        if exc.errno == errno.ENAMETOOLONG:
            return f"cannot {doing} snapshot {shown}: the path is too long for this file system; choose a shorter --torchcompile-snapshot-dir or test path"
        if doing == "write":
            return (
                f"cannot write snapshot {shown}: {exc.strerror or exc}; the stored file, if any, is unchanged: "
                "fix that, then run `pytest --update-snapshots` again"
            )
        return f"cannot {doing} snapshot {shown}: {exc.strerror or exc}"

    def show(self, path: Path) -> str:
        try:
            return str(path.relative_to(self.rootdir))
        except ValueError:
            return str(path)

    # --- unused files ----------------------------------------------------------

    def unused_in(self, folder: Path) -> list[Path]:
        """The plugin's files in `folder` that this run did not use.

        Only artifact file names count (a README.txt stays).
        """
        return sorted(p for p in _files(folder) if is_artifact_file(p.name) and p not in self.used)

    def leftover_temps(self, folder: Path) -> list[Path]:
        """Temp files of killed updates in `folder`: older than this run and locked by no live writer."""
        return leftover_temps(folder, self.started, is_artifact_file)

    def _own_folders(self, folder: TestFolder, claims: Claims) -> list[Path]:
        """The test's folder and its subfolders, less those that may be another test's."""
        test_dir = folder.under(self.root)
        return [test_dir] + [
            sub
            for sub in _folders(test_dir)
            if not claims.maybe_other_test(folder.relative, sub.relative_to(self.root))
        ]

    def stale_files(self, folder: Path) -> list[Path]:
        """What removing a stale folder deletes: artifact files and leftover temp files, nothing else."""
        artifacts = [p for p in _files(folder) if is_artifact_file(p.name)]
        return artifacts + leftover_temps(folder, self.started, is_artifact_file)

    def delete(self, paths: list[Path]) -> dict[Path, str]:
        """Remove the files `ownership.py` allows, and the folders they leave empty;
        those not removed, and why."""
        failed = {}
        for path in paths:
            refused = delete_problem(path, self.root, self.show)
            if refused is not None:
                failed[path] = f"kept {self.show(path)}: {refused}"
                continue
            try:
                path.unlink(missing_ok=True)
            except OSError as exc:
                failed[path] = f"could not delete {self.show(path)}: {exc.strerror or exc}"
                continue
            prune_empty(path.parent, self.root)
        return failed


def prune_empty(folder: Path, root: Path) -> None:
    """Remove `folder` and its parents up to (not including) `root` while they are empty."""
    while folder != root and folder.is_relative_to(root):
        try:
            folder.rmdir()
        except OSError:  # not empty (or another run wrote into it): keep it
            return
        folder = folder.parent


def _files(folder: Path) -> list[Path]:
    """Regular files directly in `folder` (no symlinks); none when it cannot be listed."""
    try:
        with os.scandir(folder) as entries:
            return [Path(e.path) for e in entries if e.is_file(follow_symlinks=False)]
    except OSError:
        return []


def _folders(folder: Path) -> list[Path]:
    try:
        with os.scandir(folder) as entries:
            return [Path(e.path) for e in entries if e.is_dir(follow_symlinks=False)]
    except OSError:
        return []


def _file_in_the_way(path: Path) -> Path | None:
    """The first parent of `path` that exists as something other than a folder."""
    for parent in reversed(path.parents):
        if parent.exists() and not parent.is_dir():
            return parent
        if not parent.exists():
            return None
    return None


def _loop_in(path: Path) -> Path | None:
    """The first part of `path` that is a symbolic link leading nowhere (a loop)."""
    for part in (*reversed(path.parents), path):
        if part.is_symlink() and not part.exists():
            return part
    return None


def _existing_parent(path: Path) -> Path:
    for parent in path.parents:
        if parent.exists():
            return parent
    return path.parent
