"""A run's snapshot sets: its folder template, checked when pytest starts, and each test's set.

A set is one folder of snapshots per torch and device (`placeholders.py`).
The run's template is checked once, before any test runs (a wrong setting is
a usage error, nothing written); after a marked test's body, `SnapshotSets.for_test`
resolves the test's set once (its template, the run's or the marker's
`snapshot_dir`; torch's version; the device its cases ran on; the folder and
its store), and the `SnapshotSet` it returns answers the rest: its store, and
another torch's set that holds the test (`other_torch.py`). Torch is imported
only when a test's folder needs its version.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import pytest

from ...common.files import unwritable
from ...common.hooks.flags import Given
from ...common.options import folder_problem
from ..spec import MARKER
from .claims import TestFolder
from .other_torch import OtherTorch, first_run, other_torch
from .outcome import Outcome
from .ownership import root_problem
from .placeholders import (
    PlaceholderError,
    expand_home,
    installed_torch_minor,
    placeholders,
    resolve,
    resolve_some,
    set_relation,
    torch_minor,
)
from .store import SnapshotStore


class HasDevice(Protocol):
    """A case, as its set reads it: where it ran."""

    def device_key(self) -> str: ...


@dataclass(frozen=True)
class FolderTemplate:
    """A snapshot folder template, `~` expanded, and the placeholders it uses (read once)."""

    text: str
    uses: frozenset[str]

    @classmethod
    def parse(cls, text: str) -> FolderTemplate:
        """`PlaceholderError` for an unknown placeholder or a home folder the machine lacks."""
        placeholders(text)
        return cls.of(expand_home(text))

    @classmethod
    def of(cls, text: str) -> FolderTemplate:
        """A template already checked and expanded (`{torch}` filled in, say)."""
        return cls(text, placeholders(text))


@dataclass(frozen=True)
class SnapshotSet:
    """The set one test's snapshots resolved to, and how: its template, torch and device."""

    store: SnapshotStore
    template: FolderTemplate  # as given: other torches' sets are found by it
    torch: str | None  # None where the folder did not need torch's version
    device: str

    def other_torch(self, folder: TestFolder, outcomes: Sequence[Outcome]) -> OtherTorch | None:
        """Another torch's set that holds this test, when this torch's set held none of its files."""
        if "torch" not in self.template.uses or not first_run(outcomes):
            return None
        now = self.torch or _torch_now()
        store = self.store
        rootdir = store.rootdir
        return other_torch(
            self.template.text, rootdir, now, self.device, store.root, folder, store.show
        )


class SnapshotSets:
    """The run's template and one store per set its tests resolved to (one per torch and device)."""

    def __init__(
        self, given: FolderTemplate, folder: FolderTemplate, store: SnapshotStore, torch: str | None
    ) -> None:
        self.given = given  # as given: other torches' sets are found by it
        self.folder = (
            folder  # `{torch}` resolved where torch's version was known without importing it
        )
        self.torch = torch  # that version (torch's package metadata), None without torch
        self.store = (
            store  # the `cpu` set (or the only one): the set housekeeping judges stale folders in
        )
        self.stores: dict[Path, SnapshotStore] = {store.root: store}

    @classmethod
    def from_setting(
        cls, setting: Given, rootdir: Path, update: bool, started: float
    ) -> SnapshotSets:
        """The run's sets, for the snapshot folder template `setting` (a flag or ini option);
        a usage error when it is wrong."""
        given = _checked_template(setting)
        version = installed_torch_minor()
        folder = (
            given if version is None else FolderTemplate.of(resolve_some(given.text, torch=version))
        )
        root = _snapshot_root(
            setting.source,
            rootdir / resolve(folder.text, torch=version or "{torch}", device="cpu"),
            rootdir,
            update,
        )
        store = SnapshotStore(root=root, rootdir=rootdir, update=update, started=started)
        return cls(given, folder, store, version)

    @property
    def rootdir(self) -> Path:
        return self.store.rootdir

    def for_test(self, nodeid: str, cases: Sequence[HasDevice], own: str | None) -> SnapshotSet:
        """The set of a test whose finished cases are `cases`, under the run's template or the
        test's own (`own`, the marker's `snapshot_dir`): resolved once.

        `{device}` comes from the cases themselves (`case_device`): a CPU case on
        a GPU machine shares the `cpu` set. Only here is torch needed.
        """
        template = _own_template(own) if own is not None else None
        if template is None and not self.folder.uses:
            return SnapshotSet(self.store, self.given, None, "cpu")
        import torch

        version = torch_minor(torch.__version__)
        device = _device(nodeid, cases, template or self.folder)
        root = self.rootdir / resolve((template or self.folder).text, torch=version, device=device)
        if root not in self.stores:
            run_root = self.rootdir / resolve(self.folder.text, torch=version, device=device)
            problem = root_problem(root, self.rootdir) or self._beside(root, run_root, version)
            if problem is not None:
                pytest.fail(
                    f"usage error: the snapshot folder {root} of {nodeid} {problem}", pytrace=False
                )
            self.stores[root] = SnapshotStore(
                root=root,
                rootdir=self.rootdir,
                update=self.store.update,
                started=self.store.started,
            )
        return SnapshotSet(self.stores[root], template or self.given, version, device)

    def _beside(self, root: Path, run_root: Path, version: str) -> str | None:
        """Why a test's own folder (`snapshot_dir=`) may not lie inside a set of the run's folder
        (any device's), nor hold one: the run judges the folders there by its own layout, and
        would take the test's for a deleted one's (an update wrote them, then removed them)."""
        relation = set_relation(root, self.rootdir, self.folder.text, version)
        if relation is None:
            return None
        how, where = relation
        if how == "inside":
            said = f"lies inside the run's snapshot folder {where}"
        else:
            said = f"holds the run's snapshot folder {run_root if run_root.is_relative_to(root) else where}"
        return (
            f"(the marker's snapshot_dir) {said}, whose update would take its files for a deleted "
            "test's: name a folder beside the run's, neither inside nor around it (with "
            "torchcompile_snapshot_dir = snapshots/{torch}/{device}: "
            "snapshot_dir='snapshots-py{python}/{torch}/{device}')"
        )


def _torch_now() -> str:
    import torch

    return torch_minor(torch.__version__)


def _device(nodeid: str, cases: Sequence[HasDevice], template: FolderTemplate) -> str:
    if "device" not in template.uses:
        return "cpu"
    devices = sorted({c.device_key() for c in cases})
    if len(devices) > 1:
        pytest.fail(
            f"usage error: the cases of {nodeid} ran on {' and '.join(devices)}, but the snapshot folder "
            f"{template.text!r} has one {{device}} per test: put the cases of each device in a test of their own",
            pytrace=False,
        )
    return devices[0] if devices else "cpu"


def _own_template(template: str) -> FolderTemplate:
    """A test's own folder template (the marker's `snapshot_dir`), `~` expanded; the test fails
    when its placeholders are wrong."""
    try:
        return FolderTemplate.parse(template)
    except PlaceholderError as exc:
        pytest.fail(f"usage error: {MARKER}(snapshot_dir=...): {exc}", pytrace=False)


def _checked_template(folder: Given) -> FolderTemplate:
    """The folder template as given; a usage error when it is empty or its placeholders are wrong."""
    template = str(folder.value)
    if not template.strip():
        raise pytest.UsageError(
            f"{folder.source} is empty: name a folder relative to the rootdir, e.g. snapshots (the default)"
        )
    problem = folder_problem(template)
    if problem is not None:
        raise pytest.UsageError(f"torchcompile_snapshot_dir {template[:60]!r} {problem}")
    try:
        return FolderTemplate.parse(template)
    except PlaceholderError as exc:
        raise pytest.UsageError(f"torchcompile_snapshot_dir: {exc}") from None


def _snapshot_root(setting: str, root: Path, rootdir: Path, update: bool) -> Path:
    """The snapshot folder; a usage error when it (or a folder above it) is a file, when
    `ownership.root_problem` refuses it, when an update could not write there, or when the
    file system refuses to look at it (a path too long)."""
    try:
        return _checked_root(setting, root, rootdir, update)
    except OSError as exc:
        shown = [
            text if len(text) < 200 else f"{text[:100]}...{text[-40:]}"
            for text in (setting, str(root))
        ]
        raise pytest.UsageError(
            f"{shown[0]}: cannot use the snapshot folder {shown[1]}: {exc.strerror or exc}; "
            "name a shorter folder inside the rootdir, e.g. snapshots (the default)"
        ) from None


def _checked_root(setting: str, root: Path, rootdir: Path, update: bool) -> Path:
    for path in (root, *root.parents):
        if path.exists():
            if not path.is_dir():
                raise pytest.UsageError(
                    f"{setting} names {path}, which is a file, not a folder: name a folder (e.g. snapshots, the default) or move the file"
                )
            break
    problem = root_problem(root, rootdir)
    if problem is not None:
        raise pytest.UsageError(f"{setting}: the snapshot folder {root} {problem}")
    problem = unwritable(root) if update else None
    if problem is not None:
        raise pytest.UsageError(
            f"{setting}: --update-snapshots cannot write the snapshot folder {root}: {problem}; nothing was written"
        )
    return root
