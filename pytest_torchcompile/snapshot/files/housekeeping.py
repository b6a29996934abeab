"""Update bookkeeping: each test's unused files, the run's stale folders, and their summary lines.

Unused files are judged per test, right after it passed, in the process that
ran it (an xdist worker): only artifact files in that test's folder and its
case folders. Stale folders (renamed or deleted tests, see `stale.py`) are
judged once per run, by the process that saw every worker's collection.
They are always reported; they are removed only by an update that ran
everything it collected under its paths: no -k/-m/--deselect dropped a test,
no --lf, no `file.py::test` argument, not interrupted.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from ..spec import MARKER
from .paths import folds_case, module_folder, test_folder
from .stale import Inventory, StaleFolder, find_stale
from .store import SnapshotStore

UNUSED_PROPERTY = "torchcompile_unused"
INVENTORY_KEY = "torchcompile_inventory"
REMOVE_HINT = (
    "a full `pytest --update-snapshots` (no -k, -m, --lf, --deselect or test ids) removes them"
)


def owner_of(item: pytest.Item) -> str:
    """The test's node id; with its file's path where the node id has none.

    pytest gives a test file outside the rootdir a node id without its path
    (`::test_x`), so `a/test_m.py::test_x` and `b/test_m.py::test_x` would
    look like one test.
    """
    return f"{item.path}{item.nodeid}" if item.nodeid.startswith("::") else item.nodeid


def classes_of(item: pytest.Item) -> tuple[str, ...]:
    return tuple(node.name for node in item.listchain() if isinstance(node, pytest.Class))


@dataclass(eq=False)  # a plugin object must stay hashable (pluggy keeps plugins in sets)
class Housekeeping:
    """Per-run state of the update bookkeeping; a pytest plugin object."""

    store: SnapshotStore
    worker: bool
    scopes: (
        list[Path] | None
    )  # folders under the snapshot root this run's paths cover; None: all of it
    partial: set[Path]  # module folders of `file.py::test` arguments: collected in part
    blocked: str | None  # why this run may not remove stale folders, whatever they are
    inventory: Inventory = field(default_factory=Inventory)
    lines: list[str] = field(default_factory=list)
    stale_left: bool = False
    owners: dict[str, list[str]] = field(
        default_factory=dict
    )  # folder under the root -> node ids collected for it

    @classmethod
    def from_config(cls, config: pytest.Config, store: SnapshotStore) -> Housekeeping:
        scopes, partial = _scopes(config, store)
        return cls(store, hasattr(config, "workerinput"), scopes, partial, _blocked(config))

    def test_dir(self, item: pytest.Item, store: SnapshotStore | None = None) -> Path:
        """The test's folder in `store` (default: the set stale folders are judged in)."""
        store = store or self.store
        return test_folder(
            store.root, store.rootdir, Path(str(item.path)), classes_of(item), item.name
        )

    # --- collection ------------------------------------------------------------

    def pytest_itemcollected(self, item: pytest.Item) -> None:
        if not isinstance(item, pytest.Function):
            return
        path, classes = Path(str(item.path)), classes_of(item)
        test_dir = self.test_dir(item)
        self.store.known.add(test_dir)
        function = test_folder(
            self.store.root, self.store.rootdir, path, classes, item.originalname
        )
        self.inventory.add(
            test_dir, function, module_folder(self.store.root, self.store.rootdir, path)
        )
        self.inventory.snapshots = self.inventory.snapshots or "compile_model" in item.fixturenames
        if (
            "compile_model" in item.fixturenames and item.get_closest_marker(MARKER) is not None
        ):  # tests that write snapshots
            self.owners.setdefault(self._owner_key(test_dir), []).append(owner_of(item))

    def shared_folder(self, item: pytest.Item, store: SnapshotStore) -> str | None:
        """A message if another collected test has `item`'s folder, else None.

        Every process (each xdist worker included) collects every test, so
        two tests that would share a folder are both refused whichever
        worker runs them, not only the second one a process sees.
        """
        test_dir = self.test_dir(item)
        owner = owner_of(item)
        others = [
            other for other in self.owners.get(self._owner_key(test_dir), []) if other != owner
        ]
        if not others:
            return None
        return store.sharing_message(self.test_dir(item, store), *sorted([others[0], owner]))

    def _owner_key(self, test_dir: Path) -> str:
        relative = str(test_dir.relative_to(self.store.root))
        return relative.casefold() if folds_case(self.store.root) else relative

    def pytest_deselected(self, items: list[pytest.Item]) -> None:
        if items:
            self.inventory.deselected = True

    # --- each test -------------------------------------------------------------

    def after_test(
        self, item: pytest.Item, test_dir: Path, store: SnapshotStore | None = None
    ) -> None:
        """Report (on update: delete) the test's unused files; silently remove leftover temp files."""
        store = store or self.store
        unused = store.unused_in(test_dir)
        failed: dict[Path, str] = {}
        if store.update:
            failed = store.delete(unused + store.leftover_temps(test_dir))
        lines = [
            failed.get(p) or f"{'deleted' if store.update else 'unused'}: {store.show(p)}"
            for p in unused
        ]
        if lines:
            item.user_properties.append((UNUSED_PROPERTY, json.dumps(lines)))

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """The call report carries the lines (the teardown report repeats the item's properties)."""
        if report.when != "call":
            return
        for name, value in report.user_properties:
            if name == UNUSED_PROPERTY:
                self.lines.extend(json.loads(str(value)))

    # --- end of run ------------------------------------------------------------

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: object) -> None:
        """xdist controller: each worker sends what it collected."""
        data = getattr(node, "workeroutput", {}).get(INVENTORY_KEY)
        if data is not None:
            self.inventory.merge(Inventory.from_json(data))

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        self.inventory.modules -= self.partial
        if self.worker:
            session.config.workeroutput[INVENTORY_KEY] = self.inventory.to_json()  # type: ignore[attr-defined]
            return
        if session.config.option.collectonly or session.config.getoption("lf", False):
            return  # --lf collects failed files only: the others would look deleted
        blocked = self.blocked or _blocked_by_run(exitstatus, self.inventory)
        for stale in find_stale(self.store.root, self.store.rootdir, self.inventory):
            self.lines.append(self._handle_stale(stale, blocked))

    def _handle_stale(self, stale: StaleFolder, blocked: str | None) -> str:
        shown = f"{self.store.show(stale.path)}/ ({stale.reason})"
        if blocked is None and self._in_scope(stale.path):
            failed = self.store.delete(self.store.stale_files(stale.path))
            if not failed:
                return f"removed stale: {shown}"
            self.stale_left = True
            return next(iter(failed.values()))
        self.stale_left = True
        return f"stale: {shown}"

    def _in_scope(self, folder: Path) -> bool:
        return self.scopes is None or any(folder.is_relative_to(scope) for scope in self.scopes)

    @pytest.hookimpl(trylast=True)  # after the cases table
    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.worker or not self.lines:
            return
        terminalreporter.write_sep("-", "torch.compile snapshots not used by this run")
        for line in self.lines:
            terminalreporter.write_line(line)
        if any(line.startswith("unused: ") for line in self.lines):
            terminalreporter.write_line("run `pytest --update-snapshots` to delete unused files")
        if self.stale_left:
            terminalreporter.write_line(
                f"stale folders belong to renamed or deleted tests: {REMOVE_HINT}"
            )


def _scopes(config: pytest.Config, store: SnapshotStore) -> tuple[list[Path] | None, set[Path]]:
    """The snapshot folders the run's path arguments cover, and the test files it collects only in part."""
    if config.args_source != pytest.Config.ArgsSource.ARGS:
        return None, set()
    scopes, partial = [], set()
    for arg in config.args:
        path = Path(config.invocation_params.dir, arg.split("::", 1)[0])
        if "::" in arg:
            partial.add(module_folder(store.root, store.rootdir, path))
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
