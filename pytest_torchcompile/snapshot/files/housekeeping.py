"""Update bookkeeping: each test's unused files, the run's stale folders, and their summary lines.

Unused files are judged per test, right after it passed, in the process that
ran it (an xdist worker): only artifact files in that test's folder and its
case folders. Stale folders (renamed or deleted tests, see `stale.py`) are
judged once per run, by the process that saw every worker's collection.
Both are always reported, and both are removed at the end of the run, by
that process: unused files by any update, stale folders only by one that
ran everything it collected under its paths (no -k/-m/--deselect dropped a
test, no --lf, no `file.py::test` argument, not interrupted). A test that
failed with a usage error stops every removal: a wrong marker or folder may
be why a file looks unused or a folder stale.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from ...common.hooks.report_data import attached
from ..spec import MARKER
from .claims import Claims, TestFolder
from .ownership import root_problem
from .paths import folds_case, module_folder
from .placeholders import device_sets
from .report import SnapshotReport
from .stale import Inventory, StaleFolder, find_stale
from .store import SnapshotStore, UnusedFiles

UNUSED_PROPERTY = "torchcompile_unused"
INVENTORY_KEY = "torchcompile_inventory"
REMOVE_HINT = (
    "a full `pytest --update-snapshots` (no -k, -m, --lf, --deselect or test ids) removes them"
)
#: how the plugin's usage errors begin (`[case_0] usage error: ...` for a case's)
_USAGE_ERROR = re.compile(r"^(?:\[[^\]\n]*\] )?usage error: ", re.MULTILINE)

folder_key = pytest.StashKey[TestFolder]()


@dataclass(eq=False)  # a plugin object must stay hashable (pluggy keeps plugins in sets)
class Housekeeping:
    """Per-run state of the update bookkeeping; a pytest plugin object.

    `claims` are the collected tests' folders (`claims.py`), `inventory`
    what stale folders are judged by; `report` the run's `SnapshotReport`
    (the unused files, what removal did, the counts), shared with the session.
    """

    store: SnapshotStore
    worker: bool
    scopes: (
        list[Path] | None
    )  # folders under the snapshot root this run's paths cover; None: all of it
    claims: Claims
    blocked: str | None  # why this run may not remove stale folders, whatever they are
    sets: tuple[str, str] | None = None  # the run's folder template and torch: every device's set
    usage_error: str | None = None  # the first test that failed with a usage error
    inventory: Inventory = field(default_factory=Inventory)
    report: SnapshotReport = field(default_factory=SnapshotReport)

    @classmethod
    def from_config(cls, config: pytest.Config, store: SnapshotStore) -> Housekeeping:
        scopes, partial = _scopes(config, store)
        claims = Claims(store.rootdir, folds_case(store.root), partial=partial)
        return cls(store, hasattr(config, "workerinput"), scopes, claims, _blocked(config))

    @staticmethod
    def folder(item: pytest.Item) -> TestFolder:
        """The test's folder, as worked out when it was collected."""
        return item.stash[folder_key]

    # --- collection ------------------------------------------------------------

    def pytest_itemcollected(self, item: pytest.Item) -> None:
        if not isinstance(item, pytest.Function):
            return
        folder = TestFolder.of(item, self.store.rootdir)
        item.stash[folder_key] = folder
        snapshots = "compile_model" in item.fixturenames
        self.claims.add(folder, snapshots and item.get_closest_marker(MARKER) is not None)
        root = self.store.root
        self.inventory.add(folder.under(root), root / folder.function, root / folder.module)
        self.inventory.snapshots = self.inventory.snapshots or snapshots

    def pytest_deselected(self, items: list[pytest.Item]) -> None:
        if items:
            self.inventory.deselected = True

    # --- each test -------------------------------------------------------------

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """The call report carries each test's unused files (`SnapshotStore.check_test`);
        a test that failed with a usage error stops every removal."""
        for value in attached(report, UNUSED_PROPERTY):
            self.report.found_unused(UnusedFiles.from_json(json.loads(value)))
        if report.failed and self.usage_error is None and _USAGE_ERROR.search(report.longreprtext):
            self.usage_error = report.nodeid

    # --- end of run ------------------------------------------------------------

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: object, error: object) -> None:
        """xdist controller: each worker sends what it collected."""
        data = getattr(node, "workeroutput", {}).get(INVENTORY_KEY)
        if data is not None:
            self.inventory.merge(Inventory.from_json(data))

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        self.inventory.modules -= {self.store.root / p for p in self.claims.partial}
        if self.worker:
            session.config.workeroutput[INVENTORY_KEY] = self.inventory.to_json()  # type: ignore[attr-defined]
            return
        for found in self.report.unused:
            self._handle_unused(found)
        if session.config.option.collectonly or session.config.getoption("lf", False):
            return  # --lf collects failed files only: the others would look deleted
        blocked = (
            self.blocked or self._usage_blocked() or _blocked_by_run(exitstatus, self.inventory)
        )
        for store in [self.store, *self._other_sets()]:
            inventory = self.inventory.rebased(self.store.root, store.root)
            for stale in find_stale(store.root, store.rootdir, inventory):
                self._handle_stale(store, stale, blocked)

    def _handle_unused(self, found: UnusedFiles) -> None:
        """A passing test's unused files: deleted by an update that had no usage error."""
        store = SnapshotStore(found.root, self.store.rootdir, self.store.update, self.store.started)
        delete = self.store.update and self._usage_blocked() is None
        lines, deleted = store.remove_unused(found, delete)
        self.report.removed_unused(lines, deleted, delete)

    def _usage_blocked(self) -> str | None:
        """Why an update removes nothing after a usage error (the line that says so)."""
        if self.usage_error is None or self.blocked is not None:
            return None
        return (
            f"nothing was deleted: {self.usage_error} failed with a usage error; "
            "fix it, then run `pytest --update-snapshots` again"
        )

    def _other_sets(self) -> list[SnapshotStore]:
        """The other devices' snapshot sets on disk (`snapshots/2.13/cuda-sm90` beside `.../cpu`)."""
        if self.sets is None:
            return []
        roots = device_sets(self.store.rootdir, *self.sets).values()
        return [
            SnapshotStore(root, self.store.rootdir, self.store.update, self.store.started)
            for root in roots
            if root != self.store.root and root_problem(root, self.store.rootdir) is None
        ]

    def _handle_stale(self, store: SnapshotStore, stale: StaleFolder, blocked: str | None) -> None:
        shown = f"{store.show(stale.path)}/ ({stale.reason})"
        if blocked is None and self._in_scope(stale.path, store):
            files = store.stale_files(stale.path)
            failed = store.delete(files)
            deleted = len(files) - len(failed)
            if not failed:
                self.report.stale(f"removed stale: {shown}", deleted, left=False)
            else:
                self.report.stale(
                    f"stale: {shown}; {next(iter(failed.values()))}", deleted, left=True
                )
            return
        self.report.stale(f"stale: {shown}", 0, left=True)

    def _in_scope(self, folder: Path, store: SnapshotStore) -> bool:
        """Under a folder this run's paths cover (scopes are in the first set; the others mirror it)."""
        mirrored = self.store.root / folder.relative_to(store.root)
        return self.scopes is None or any(mirrored.is_relative_to(scope) for scope in self.scopes)

    @pytest.hookimpl(trylast=True)  # after the cases table
    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        report = self.report
        if self.worker or not report.lines:
            return
        terminalreporter.write_sep("-", "torch.compile snapshots not used by this run")
        for line in report.lines:
            terminalreporter.write_line(line)
        blocked = self._usage_blocked()
        if blocked is not None:
            terminalreporter.write_line(blocked)
            return
        if report.unused_left:
            terminalreporter.write_line("run `pytest --update-snapshots` to delete unused files")
        if report.stale_left:
            terminalreporter.write_line(
                f"stale folders belong to renamed or deleted tests: {REMOVE_HINT}"
            )


def _scopes(config: pytest.Config, store: SnapshotStore) -> tuple[list[Path] | None, set[Path]]:
    """The snapshot folders the run's path arguments cover, and the folders (relative to the
    snapshot root) of the test files it collects only in part."""
    if config.args_source != pytest.Config.ArgsSource.ARGS:
        return None, set()
    scopes, partial = [], set()
    for arg in config.args:
        path = Path(config.invocation_params.dir, arg.split("::", 1)[0])
        if "::" in arg:
            partial.add(module_folder(Path(), store.rootdir, path))
        elif path.suffix == ".py":
            scopes.append(module_folder(store.root, store.rootdir, path))
        else:
            try:
                scopes.append(store.root / path.resolve().relative_to(store.rootdir.resolve()))
            except ValueError:
                continue
    return scopes, partial


def _blocked(config: pytest.Config) -> str | None:
    """Why nothing this run finds stale may be removed, known before it starts."""
    if not config.getoption("update_snapshots"):
        return "not an update"
    if config.option.pyargs:
        return "--pyargs"
    return None


def _blocked_by_run(exitstatus: int, inventory: Inventory) -> str | None:
    if exitstatus in (pytest.ExitCode.INTERRUPTED, pytest.ExitCode.INTERNAL_ERROR):
        return "the run was interrupted"
    if inventory.deselected:
        return "some collected tests did not run"
    return None
