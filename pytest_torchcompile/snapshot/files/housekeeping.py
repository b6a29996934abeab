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

import ast
import glob
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from ...common.hooks.report_data import attached, keep
from ..spec import MARKER
from .ownership import root_problem
from .paths import base_name, folds_case, module_folder, segment, test_folder
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
    sets: str | None = (
        None  # glob of every device's snapshot set (`{device}` as `*`); None: one set
    )
    inventory: Inventory = field(default_factory=Inventory)
    lines: list[str] = field(default_factory=list)
    removed: int = 0  # files deleted with stale folders
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

    def case_clash(self, item: pytest.Item, store: SnapshotStore, cases: list[str]) -> str | None:
        """A message if one of the test's case folders is another test's folder, else None.

        Only known once the cases ran (a case is named by the call). The other
        test is a collected one, or, in a run that did not collect its file in
        full, a test or class that file defines with the case's name.
        """
        if len(cases) < 2:  # a single case keeps its files in the test's own folder
            return None
        test_dir = self.test_dir(item)
        for name in cases:
            other = self._test_at(test_dir / segment(name)) or self._uncollected_test(
                test_dir, name
            )
            if other is not None:
                shown = store.show(self.test_dir(item, store) / segment(name))
                return (
                    f"case {name!r} of {owner_of(item)} would write snapshot folder {shown}, which is the folder "
                    f"of {other}; rename the case (a case never shares a folder with a test)"
                )
        return None

    def _test_at(self, folder: Path) -> str | None:
        """A collected snapshot test whose folder is `folder` or lies inside it."""
        key = self._owner_key(folder)
        for owned, tests in sorted(self.owners.items()):
            if owned == key or owned.startswith(key + "/"):
                return tests[0]
        return None

    def _uncollected_test(self, test_dir: Path, case: str) -> str | None:
        """`test_dir` doubles as the folder of a test file this run did not collect in full,
        and that file defines a test or class named as the case."""
        source = self.store.rootdir / Path(f"{test_dir.relative_to(self.store.root)}.py")
        if not source.is_file() or (
            test_dir in self.inventory.modules and test_dir not in self.partial
        ):
            return None
        try:
            tree = ast.parse(source.read_bytes())
        except (OSError, SyntaxError, ValueError):
            return None
        names = {
            node.name
            for node in ast.walk(tree)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
        }
        name = base_name(case)
        return f"{source.relative_to(self.store.rootdir)}::{name}" if name in names else None

    def _owner_key(self, test_dir: Path) -> str:
        relative = test_dir.relative_to(self.store.root).as_posix()
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
            keep(item, UNUSED_PROPERTY, json.dumps(lines))

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """The call report carries the lines."""
        for value in attached(report, UNUSED_PROPERTY):
            self.lines.extend(json.loads(value))

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
        for store in [self.store, *self._other_sets()]:
            inventory = self.inventory.rebased(self.store.root, store.root)
            for stale in find_stale(store.root, store.rootdir, inventory):
                self.lines.append(self._handle_stale(store, stale, blocked))

    def _other_sets(self) -> list[SnapshotStore]:
        """The other devices' snapshot sets on disk (`snapshots/2.13/cuda-sm90` beside `.../cpu`)."""
        if self.sets is None:
            return []
        roots = sorted(Path(p) for p in glob.glob(self.sets) if Path(p).is_dir())
        return [
            SnapshotStore(root, self.store.rootdir, self.store.update, self.store.started)
            for root in roots
            if root != self.store.root and root_problem(root, self.store.rootdir) is None
        ]

    def _handle_stale(self, store: SnapshotStore, stale: StaleFolder, blocked: str | None) -> str:
        shown = f"{store.show(stale.path)}/ ({stale.reason})"
        if blocked is None and self._in_scope(stale.path, store):
            files = store.stale_files(stale.path)
            failed = store.delete(files)
            self.removed += len(files) - len(failed)
            if not failed:
                return f"removed stale: {shown}"
            self.stale_left = True
            return f"stale: {shown}; {next(iter(failed.values()))}"
        self.stale_left = True
        return f"stale: {shown}"

    def _in_scope(self, folder: Path, store: SnapshotStore) -> bool:
        """Under a folder this run's paths cover (scopes are in the first set; the others mirror it)."""
        mirrored = self.store.root / folder.relative_to(store.root)
        return self.scopes is None or any(mirrored.is_relative_to(scope) for scope in self.scopes)

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
