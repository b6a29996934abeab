"""Snapshot files: one plain-text file per artifact per case.

`TextSnapshotExtension` is a syrupy `SingleFileSnapshotExtension` in text mode
that overrides three roles: reading (a file that is not UTF-8 becomes a clear
message, never a crash), writing (a temp file renamed over the old one, so an
interrupted update leaves each file old or new, never partial) and the diff
(a unified diff with context, readable in a CI log).

`SnapshotStore` owns the layout of the contract,
`<root>/<test file without .py>/<test name>[/<case>]/<artifact>.<ext>`, and
the bookkeeping syrupy's own session cannot do for nested case folders:
which files a test used, and which are unused and may be deleted on update.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from syrupy.data import Snapshot, SnapshotCollection
from syrupy.extensions.single_file import SingleFileSnapshotExtension, WriteMode

from ..common.files import atomic_write_text
from .catalogue import ARTIFACT_EXTENSIONS

MAX_DIFF_LINES = 400
UPDATE_HINT = "run `pytest --update-snapshots` to accept the new output"


class UnreadableSnapshot(Exception):
    """A stored snapshot exists but cannot be read as text."""


class TextSnapshotExtension(SingleFileSnapshotExtension):
    """Plain UTF-8 text files, written atomically, diffed as unified diffs."""

    _write_mode = WriteMode.TEXT
    file_extension = "txt"

    def read_snapshot_data_from_location(
        self, *, snapshot_location: str, snapshot_name: str, session_id: str
    ) -> str | None:
        try:
            raw = Path(snapshot_location).read_bytes()
        except FileNotFoundError:
            return None
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise UnreadableSnapshot(
                f"snapshot {snapshot_location} is not valid UTF-8 (byte 0x{raw[exc.start]:02x} at offset {exc.start}); "
                f"it was edited or damaged outside pytest: {UPDATE_HINT} to rewrite it"
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

    def diff_lines(self, serialized_data: object, snapshot_data: object) -> Iterator[str]:
        """`---` the stored snapshot, `+++` this run; three lines of context."""
        old = str(snapshot_data).splitlines()
        new = str(serialized_data).splitlines()
        yield from difflib.unified_diff(old, new, "snapshot", "this run", lineterm="", n=3)


def _is_ours(name: str, known: tuple[str, ...]) -> bool:
    return name.endswith(known) or (name.startswith(".") and name.endswith(".tmp"))


def artifact_filename(artifact: str) -> str:
    return f"{artifact}.{ARTIFACT_EXTENSIONS[artifact]}"


def safe_segment(name: str) -> str:
    """A test or case name as one path segment (parametrize ids may hold `/`)."""
    cleaned = "".join("_" if c in '\\/:*?"<>|' or ord(c) < 32 else c for c in name)
    return cleaned.strip(" .") or "_"


@dataclass
class Outcome:
    """What comparing one artifact found; `message` is empty when it matched."""

    path: Path
    status: str  # "matched", "written", "updated", "missing", "changed", "unreadable"
    message: str = ""

    @property
    def failed(self) -> bool:
        return self.status in ("missing", "changed", "unreadable")


@dataclass
class SnapshotStore:
    """Compare or write snapshot files under `root`, remembering which were used."""

    root: Path
    rootdir: Path
    update: bool
    extension: TextSnapshotExtension = field(default_factory=TextSnapshotExtension)
    used: set[Path] = field(default_factory=set)

    def test_dir(self, test_path: Path, test_name: str) -> Path:
        """`<root>/<test file path without .py>/<test name>`."""
        try:
            relative = test_path.resolve().relative_to(self.rootdir.resolve())
        except ValueError:
            relative = Path(test_path.name)
        return self.root / relative.with_suffix("") / safe_segment(test_name)

    def check(self, path: Path, text: str) -> Outcome:
        """Compare `text` with the file at `path`; write it only on update."""
        self.used.add(path)
        try:
            stored = self.extension.read_snapshot_data_from_location(
                snapshot_location=str(path), snapshot_name=path.name, session_id=""
            )
        except UnreadableSnapshot as exc:
            return self._write(path, text, "updated") if self.update else Outcome(path, "unreadable", str(exc))
        if stored == text:
            return Outcome(path, "matched")
        if self.update:
            return self._write(path, text, "written" if stored is None else "updated")
        if stored is None:
            return Outcome(path, "missing", f"snapshot {self._show(path)} does not exist yet: {UPDATE_HINT}")
        return Outcome(path, "changed", self._diff_message(path, stored, text))

    def _write(self, path: Path, text: str, status: str) -> Outcome:
        collection = SnapshotCollection(location=str(path))
        collection.add(Snapshot(name=path.name, data=text))
        self.extension.write_snapshot_collection(snapshot_collection=collection)
        return Outcome(path, status)

    def _diff_message(self, path: Path, stored: str, text: str) -> str:
        lines = list(self.extension.diff_lines(text, stored))
        if len(lines) > MAX_DIFF_LINES:
            lines = lines[:MAX_DIFF_LINES] + [f"... {len(lines) - MAX_DIFF_LINES} more diff lines not shown"]
        return f"snapshot {self._show(path)} differs:\n" + "\n".join(lines)

    def _show(self, path: Path) -> str:
        try:
            return str(path.relative_to(self.rootdir))
        except ValueError:
            return str(path)

    def unused_in(self, test_dir: Path) -> list[Path]:
        """Snapshot files under one test's folder that this run did not use.

        Temp files left by a killed update (`.<name>.<random>.tmp`) count too.
        """
        if not test_dir.is_dir():
            return []
        known = tuple(f".{ext}" for ext in set(ARTIFACT_EXTENSIONS.values()))
        return sorted(p for p in test_dir.rglob("*") if p.is_file() and _is_ours(p.name, known) and p not in self.used)

    def delete(self, paths: list[Path]) -> None:
        """Remove unused files and the folders they leave empty."""
        for path in paths:
            path.unlink(missing_ok=True)
            parent = path.parent
            while parent != self.root and parent.is_dir() and not any(parent.iterdir()):
                parent.rmdir()
                parent = parent.parent
