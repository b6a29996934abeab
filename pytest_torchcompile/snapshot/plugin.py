"""pytest entry point: options, the marker, the `compile_model` fixture, hooks.

This module must not import torch: `pytest --help` in a project without
compiled models stays fast. Everything that needs torch is imported inside
the fixture. Per-run state lives in `TorchCompileSession`, registered as a
plugin in `pytest_configure`; per-test state in `item.stash`.
"""

from __future__ import annotations

import json
import time
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from ..common.crashes import (
    attach,
    attached,
    carry,
    guarded,
    guarded_report,
    internal_error,
    keep,
    reported_errors,
)
from ..common.files import unwritable
from ..common.markers import marker_problem
from ..common.options import SpecError, folder_option
from ..common.terminal import for_config
from .artifacts.normalize import Normalizer
from .case_table import CaseRow, PrecompileRow, format_precompile_table, format_table
from .compare.failure import FULL_DIFF_FLAG, compose
from .compare.html import failure_fragment
from .files.housekeeping import Housekeeping
from .files.ownership import root_problem
from .files.placeholders import (
    PlaceholderError,
    case_device,
    installed_torch_minor,
    placeholders,
    resolve,
    resolve_some,
    sets_glob,
    torch_minor,
)
from .files.store import FolderClash, SnapshotStore
from .fresh_process.servers import FreshProcesses
from .spec import MARKER, CompileSpec

if TYPE_CHECKING:
    from .fixture import CompileModel

ROWS_PROPERTY = "torchcompile_cases"
PRECOMPILE_PROPERTY = "torchcompile_precompile"
INTERNAL_PROPERTY = "torchcompile_internal_error"
WRITES_PROPERTY = "torchcompile_writes"

session_key = pytest.StashKey["TorchCompileSession"]()
model_key = pytest.StashKey["CompileModel"]()
html_key = pytest.StashKey[
    str
]()  # a failing test's verdicts and side-by-side diffs, for pytest-html


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("torchcompile", "torch.compile snapshots (pytest-torchcompile)")
    group.addoption(
        "--update-snapshots",
        action="store_true",
        default=False,
        dest="update_snapshots",
        help="write new and changed snapshots, delete unused ones and stale folders (same as syrupy's --snapshot-update)",
    )
    group.addoption(
        "--torchcompile-snapshot-dir",
        default=None,
        type=folder_option("snapshots", placeholders),
        help="folder for snapshot files, relative to the rootdir (overrides ini torchcompile_snapshot_dir); "
        "{torch} and {device} stand for torch's major.minor and the cases' device (cpu, cuda-sm90)",
    )
    parser.addini(
        "torchcompile_snapshot_dir",
        default="snapshots",
        help="folder for snapshot files, relative to the rootdir; may hold {torch} and {device}, e.g. snapshots/{torch}/{device}",
    )
    group.addoption(
        FULL_DIFF_FLAG,
        action="store_true",
        default=False,
        dest="torchcompile_full_diff",
        help="on a snapshot failure, show the diff of every changed artifact (also on with -vv)",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{CompileSpec.marker_signature()}: compile with torch.compile, snapshot the compiler's artifacts and check numerics against eager (pytest-torchcompile)",
    )
    session = TorchCompileSession.from_config(config)
    config.stash[session_key] = session
    config.pluginmanager.register(session, "torchcompile-session")
    config.pluginmanager.register(session.housekeeping, "torchcompile-housekeeping")


def pytest_unconfigure(config: pytest.Config) -> None:
    session = config.stash.get(session_key, None)
    if session is not None:
        session.processes.close()
        config.pluginmanager.unregister(session.housekeeping)
        config.pluginmanager.unregister(session)
        del config.stash[session_key]


@pytest.fixture
def compile_model(request: pytest.FixtureRequest) -> Iterator[CompileModel]:
    """Compile a model (or function) with the marker's settings; returns a CompileResult per call."""
    from .fixture import CompileModel

    session = request.config.stash[session_key]
    marker = request.node.get_closest_marker(MARKER)
    spec, error = _parse_marker(marker)
    progress = for_config(request.config).named(request.node.nodeid)
    model = CompileModel(
        spec=spec,
        spec_error=error,
        normalizer=session.normalizer(),
        progress=progress,
        processes=session.processes,
    )
    request.node.stash[model_key] = model
    yield model
    model.release()


def _marker_error(marker: pytest.Mark) -> str | None:
    return _parse_marker(marker)[1]


def _parse_marker(marker: pytest.Mark | None) -> tuple[CompileSpec | None, str | None]:
    """Unmarked tests compile and capture but assert nothing (numerics off)."""
    if marker is None:
        return CompileSpec(numerics=False), None
    try:
        return CompileSpec.from_marker(marker.args, marker.kwargs), None
    except SpecError as exc:
        return None, str(exc)


class TorchCompileSession:
    """Per-run state: the snapshot stores (one per resolved folder), case rows, and the
    update bookkeeping (housekeeping.py, which judges unused files and stale folders)."""

    def __init__(
        self,
        folder: str,
        store: SnapshotStore,
        rootdir: Path,
        worker: bool,
        housekeeping: Housekeeping,
        full_diff: bool = False,
    ) -> None:
        self.folder = folder  # the template, `{torch}` resolved when torch's version was known without importing it
        self.uses = placeholders(folder)
        self.store = (
            store  # the `cpu` set (or the only one): the set housekeeping judges stale folders in
        )
        self.rootdir = rootdir
        self.update = store.update
        self.worker = worker
        self.housekeeping = housekeeping
        self.stores: dict[Path, SnapshotStore] = {store.root: store}
        self.full_diff = full_diff
        self.writes = {"written": 0, "updated": 0}
        self.rows: list[CaseRow] = []
        self.precompile_rows: list[PrecompileRow] = []
        self.internal_errors: list[str] = []
        self.processes = FreshProcesses()  # the fork server of this session (or xdist worker)

    @classmethod
    def from_config(cls, config: pytest.Config) -> TorchCompileSession:
        rootdir = Path(config.rootpath)
        update = bool(config.getoption("update_snapshots"))
        folder, setting = _snapshot_setting(config)
        if not folder.strip():
            raise pytest.UsageError(
                f"{setting} is empty: name a folder relative to the rootdir, e.g. snapshots (the default)"
            )
        try:
            placeholders(folder)
        except PlaceholderError as exc:
            raise pytest.UsageError(f"torchcompile_snapshot_dir: {exc}") from None
        version = installed_torch_minor()
        if version is not None:
            folder = resolve_some(folder, torch=version)
        root = _snapshot_root(
            setting,
            rootdir / resolve(folder, torch=version or "{torch}", device="cpu"),
            rootdir,
            update,
        )
        store = SnapshotStore(root=root, rootdir=rootdir, update=update, started=time.time())
        full_diff = (
            bool(config.getoption("torchcompile_full_diff")) or config.getoption("verbose") >= 2
        )
        housekeeping = Housekeeping.from_config(config, store)
        housekeeping.sets = sets_glob(rootdir, folder, version) if version else None
        return cls(folder, store, rootdir, hasattr(config, "workerinput"), housekeeping, full_diff)

    def store_for(self, nodeid: str, cases: list[Any]) -> SnapshotStore:
        """The store of the folder these cases resolve to (one per torch version and device).

        `{device}` comes from the cases themselves (`case_device`): a CPU case on
        a GPU machine shares the `cpu` set. Only here is torch needed.
        """
        if not self.uses:
            return self.store
        import torch

        folder = resolve(
            self.folder, torch=torch_minor(torch.__version__), device=self._device(nodeid, cases)
        )
        root = self.rootdir / folder
        if root not in self.stores:
            problem = root_problem(root, self.rootdir)
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
        return self.stores[root]

    def _device(self, nodeid: str, cases: list[Any]) -> str:
        if "device" not in self.uses:
            return "cpu"
        devices = sorted({case_device(c.model, c.calls[:1]) for c in cases})
        if len(devices) > 1:
            pytest.fail(
                f"usage error: the cases of {nodeid} ran on {' and '.join(devices)}, but the snapshot folder "
                f"{self.folder!r} has one {{device}} per test: put the cases of each device in a test of their own",
                pytrace=False,
            )
        return devices[0] if devices else "cpu"

    def normalizer(self) -> Normalizer:
        import torch  # only called from the fixture, where torch is needed anyway

        return Normalizer.for_paths(str(self.rootdir), str(Path(torch.__file__).parent))

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_call(self, item: pytest.Item) -> None:
        """A wrong marker fails its test before the body runs, used or not (see common/markers.py)."""
        problem = marker_problem(item, MARKER, "compile_model", _marker_error)
        if problem is not None:
            pytest.fail(problem, pytrace=False)

    @pytest.hookimpl(wrapper=True)
    def pytest_pyfunc_call(self, pyfuncitem: pytest.Function) -> Generator[None, object, object]:
        """Compare snapshots once the test function has returned without error."""
        result = yield
        model = pyfuncitem.stash.get(model_key, None)
        if model is None or pyfuncitem.get_closest_marker(MARKER) is None:
            return result
        crash = failure = ""
        try:
            store = self.store_for(pyfuncitem.nodeid, model.finished())
            test_dir = self.housekeeping.test_dir(pyfuncitem, store)
            texts = model.snapshot_texts()
            clash = self.housekeeping.shared_folder(
                pyfuncitem, store
            ) or self.housekeeping.case_clash(pyfuncitem, store, [name for name, _ in texts])
            if clash:
                pytest.fail(f"usage error: {clash}", pytrace=False)
            outcomes = store.check_test(test_dir, texts)
            writes = {status: sum(o.status == status for o in outcomes) for status in self.writes}
            keep(pyfuncitem, WRITES_PROPERTY, json.dumps(writes))
            if any(o.failed for o in outcomes):
                failure = compose(outcomes, store.show(test_dir), self.full_diff)
                if _html_report_wanted(pyfuncitem.config):
                    pyfuncitem.stash[html_key] = failure_fragment(outcomes)
        except FolderClash as exc:
            failure = f"usage error: {exc}"
        except OSError:
            raise  # the file system's own error, with its path (the store's to word)
        except Exception as exc:  # the plugin's bug: fail this test with a line that says so
            crash = internal_error(exc, "the snapshot check")
        if crash or failure:
            pytest.fail(crash or failure, pytrace=False)  # outside `except`: no chained traceback
        self.housekeeping.after_test(pyfuncitem, test_dir, store)
        return result

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Iterator[Any]:
        report = yield
        model = item.stash.get(model_key, None)
        if call.when == "call":
            carry(item, report)
        if call.when == "call" and model is not None:
            with guarded_report("pytest_runtest_makereport", report, INTERNAL_PROPERTY):
                self._attach_rows(report, item, model)
                if html_key in item.stash:
                    _attach_html(report, item.stash[html_key])
        return report

    def _attach_rows(
        self, report: pytest.TestReport, item: pytest.Item, model: CompileModel
    ) -> None:
        rows = [_row(item.nodeid, case) for case in model.cases if case.result is not None]
        attach(report, ROWS_PROPERTY, json.dumps([r.to_json() for r in rows]))
        trips = [
            _precompile_row(item.nodeid, case)
            for case in model.cases
            if case.round_trip is not None
        ]
        if trips:
            attach(report, PRECOMPILE_PROPERTY, json.dumps([r.to_json() for r in trips]))

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Collect rows here so the xdist controller sees its workers' cases too."""
        self.internal_errors.extend(reported_errors(report, INTERNAL_PROPERTY))
        with guarded("pytest_runtest_logreport", self.internal_errors):
            self._collect(report)

    def _collect(self, report: pytest.TestReport) -> None:
        for value in attached(report, ROWS_PROPERTY):
            self.rows.extend(CaseRow.from_json(d) for d in json.loads(value))
        for value in attached(report, PRECOMPILE_PROPERTY):
            self.precompile_rows.extend(PrecompileRow.from_json(d) for d in json.loads(value))
        for value in attached(report, WRITES_PROPERTY):
            for status, count in json.loads(value).items():
                self.writes[status] += count

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        """The plugin's own crashes fail the run (they were reported, not raised)."""
        if self.internal_errors and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        with guarded("pytest_terminal_summary", self.internal_errors):
            self._summary(terminalreporter)
        for line in self.internal_errors:
            terminalreporter.write_line(line, red=True)

    def _summary(self, terminalreporter: Any) -> None:
        if self.worker:
            return
        if self.rows:
            self._write_tables(terminalreporter)
        if self.store.update:
            deleted = self.housekeeping.removed + sum(
                line.startswith("deleted: ") for line in self.housekeeping.lines
            )
            counts = ", ".join(
                f"{count} {status}" for status, count in {**self.writes, "deleted": deleted}.items()
            )
            terminalreporter.write_line(f"torch.compile snapshots: {counts}")

    def _write_tables(self, terminalreporter: Any) -> None:
        terminalreporter.write_sep("-", "torch.compile cases")
        for line in format_table(self.rows):
            terminalreporter.write_line(line)
        if self.precompile_rows:
            terminalreporter.write_sep(
                "-",
                "torch.compile precompile round trips (aot_compile, save, load in a fresh process)",
            )
            for line in format_precompile_table(self.precompile_rows):
                terminalreporter.write_line(line)


def _html_report_wanted(config: pytest.Config) -> bool:
    """pytest-html is loaded and this run writes its report (`--html PATH`); it stays optional."""
    return config.pluginmanager.hasplugin("html") and bool(config.getoption("htmlpath", None))


def _attach_html(report: pytest.TestReport, fragment: str) -> None:
    """Show `fragment` under the test's row of pytest-html's report."""
    from pytest_html import extras  # only when its report is written

    report.extras = [*getattr(report, "extras", []), extras.html(fragment)]  # type: ignore[attr-defined]


def _snapshot_setting(config: pytest.Config) -> tuple[str, str]:
    """The snapshot folder template and how the user set it (for messages)."""
    flag = config.getoption("torchcompile_snapshot_dir")
    folder = flag or config.getini("torchcompile_snapshot_dir")
    return (
        str(folder),
        f"--torchcompile-snapshot-dir={folder}"
        if flag
        else f"ini torchcompile_snapshot_dir = {folder!r}",
    )


def _snapshot_root(setting: str, root: Path, rootdir: Path, update: bool) -> Path:
    """The snapshot folder; a usage error when it (or a folder above it) is a file, when
    `ownership.root_problem` refuses it, or when an update could not write there."""
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


def _row(nodeid: str, case: Any) -> CaseRow:
    r = case.result
    return CaseRow(
        nodeid,
        case.name,
        r.graph_count,
        r.graph_break_count,
        r.recompile_count,
        r.kernel_count,
        round(case.compile_seconds, 2),
    )


def _precompile_row(nodeid: str, case: Any) -> PrecompileRow:
    r = case.round_trip.report
    first_load = r.load_seconds[0] if r.load_seconds else 0.0
    return PrecompileRow(
        nodeid,
        case.name,
        r.artifact_bytes,
        round(r.compile_seconds, 2),
        round(r.save_seconds, 3),
        round(first_load, 2),
        len(r.load_seconds),
    )
