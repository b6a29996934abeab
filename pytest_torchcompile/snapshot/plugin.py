"""pytest entry point: options, the marker, the `compile_model` fixture, hooks.

This module must not import torch: `pytest --help` in a project without
compiled models stays fast. Everything that needs torch is imported inside
the fixture. Per-run state lives in `TorchCompileSession`, registered as a
plugin in `pytest_configure`; per-test state in `item.stash`.
"""

from __future__ import annotations

import json
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from ..common.options import SpecError, folder_option
from .normalize import Normalizer
from .report import CaseRow, PrecompileRow, format_precompile_table, format_table
from .spec import MARKER, CompileSpec
from .store import Outcome, SnapshotStore

if TYPE_CHECKING:
    from .fixture import CompileModel

ROWS_PROPERTY = "torchcompile_cases"
UNUSED_PROPERTY = "torchcompile_unused"
PRECOMPILE_PROPERTY = "torchcompile_precompile"

session_key = pytest.StashKey["TorchCompileSession"]()
model_key = pytest.StashKey["CompileModel"]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("torchcompile", "torch.compile snapshots (pytest-torchcompile)")
    group.addoption(
        "--update-snapshots",
        action="store_true",
        default=False,
        dest="update_snapshots",
        help="write new and changed snapshots, delete unused ones (same as syrupy's --snapshot-update)",
    )
    group.addoption(
        "--torchcompile-snapshot-dir",
        default=None,
        type=folder_option("snapshots"),
        help="folder for snapshot files, relative to the rootdir (overrides ini torchcompile_snapshot_dir)",
    )
    parser.addini("torchcompile_snapshot_dir", default="snapshots", help="folder for snapshot files, relative to the rootdir")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", f"{CompileSpec.marker_signature()}: compile with torch.compile, snapshot the compiler's artifacts and check numerics against eager (pytest-torchcompile)")
    session = TorchCompileSession.from_config(config)
    config.stash[session_key] = session
    config.pluginmanager.register(session, "torchcompile-session")


def pytest_unconfigure(config: pytest.Config) -> None:
    session = config.stash.get(session_key, None)
    if session is not None:
        config.pluginmanager.unregister(session)
        del config.stash[session_key]


@pytest.fixture
def compile_model(request: pytest.FixtureRequest) -> Iterator[CompileModel]:
    """Compile a model (or function) with the marker's settings; returns a CompileResult per call."""
    from .fixture import CompileModel

    session = request.config.stash[session_key]
    marker = request.node.get_closest_marker(MARKER)
    spec, error = _parse_marker(marker)
    model = CompileModel(spec=spec, spec_error=error, normalizer=session.normalizer())
    request.node.stash[model_key] = model
    yield model
    model.release()


def _parse_marker(marker: pytest.Mark | None) -> tuple[CompileSpec | None, str | None]:
    """Unmarked tests compile and capture but assert nothing (numerics off)."""
    if marker is None:
        return CompileSpec(numerics=False), None
    try:
        return CompileSpec.from_marker(marker.args, marker.kwargs), None
    except SpecError as exc:
        return None, str(exc)


class TorchCompileSession:
    """Per-run state: the snapshot store, case rows and unused snapshot files."""

    def __init__(self, store: SnapshotStore, rootdir: Path, worker: bool) -> None:
        self.store = store
        self.rootdir = rootdir
        self.worker = worker
        self.rows: list[CaseRow] = []
        self.unused: list[str] = []
        self.outcomes: list[Outcome] = []
        self.precompile_rows: list[PrecompileRow] = []

    @classmethod
    def from_config(cls, config: pytest.Config) -> TorchCompileSession:
        rootdir = Path(config.rootpath)
        folder = config.getoption("torchcompile_snapshot_dir") or config.getini("torchcompile_snapshot_dir")
        store = SnapshotStore(root=rootdir / folder, rootdir=rootdir, update=bool(config.getoption("update_snapshots")))
        return cls(store, rootdir, worker=hasattr(config, "workerinput"))

    def normalizer(self) -> Normalizer:
        import torch  # only called from the fixture, where torch is needed anyway

        return Normalizer.for_paths(str(self.rootdir), str(Path(torch.__file__).parent))

    @pytest.hookimpl(wrapper=True)
    def pytest_pyfunc_call(self, pyfuncitem: pytest.Function) -> Generator[None, object, object]:
        """Compare snapshots once the test function has returned without error."""
        result = yield
        model = pyfuncitem.stash.get(model_key, None)
        if model is None or pyfuncitem.get_closest_marker(MARKER) is None:
            return result
        test_dir = self.store.test_dir(Path(str(pyfuncitem.path)), pyfuncitem.name)
        outcomes = model.check_snapshots(self.store, test_dir)
        self.outcomes.extend(outcomes)
        self._handle_unused(pyfuncitem, test_dir)
        failures = [o.message for o in outcomes if o.failed]
        if failures:
            pytest.fail("\n\n".join(failures), pytrace=False)
        return result

    def _handle_unused(self, item: pytest.Function, test_dir: Path) -> None:
        unused = self.store.unused_in(test_dir)
        if unused and self.store.update:
            self.store.delete(unused)
        shown = [str(p.relative_to(self.rootdir)) if p.is_relative_to(self.rootdir) else str(p) for p in unused]
        item.user_properties.append((UNUSED_PROPERTY, json.dumps({"deleted": self.store.update, "paths": shown})))

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[Any]:
        report = yield
        model = item.stash.get(model_key, None)
        if call.when == "call" and model is not None:
            rows = [_row(item.nodeid, case) for case in model.cases if case.result is not None]
            report.user_properties.append((ROWS_PROPERTY, json.dumps([r.to_json() for r in rows])))
            trips = [_precompile_row(item.nodeid, case) for case in model.cases if case.round_trip is not None]
            if trips:
                report.user_properties.append((PRECOMPILE_PROPERTY, json.dumps([r.to_json() for r in trips])))
        return report

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Collect rows here so the xdist controller sees its workers' cases too."""
        for name, value in report.user_properties:
            if name == ROWS_PROPERTY:
                self.rows.extend(CaseRow.from_json(d) for d in json.loads(value))
            elif name == PRECOMPILE_PROPERTY:
                self.precompile_rows.extend(PrecompileRow.from_json(d) for d in json.loads(value))
            elif name == UNUSED_PROPERTY:
                data = json.loads(value)
                self.unused.extend(f"{'deleted' if data['deleted'] else 'unused'}: {p}" for p in data["paths"])

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.worker or not self.rows:
            return
        terminalreporter.write_sep("-", "torch.compile cases")
        for line in format_table(self.rows):
            terminalreporter.write_line(line)
        if self.precompile_rows:
            terminalreporter.write_sep("-", "torch.compile precompile round trips (aot_compile, save, load in a fresh process)")
            for line in format_precompile_table(self.precompile_rows):
                terminalreporter.write_line(line)
        if self.unused:
            terminalreporter.write_sep("-", "torch.compile snapshots not used by this run")
            for line in self.unused:
                terminalreporter.write_line(line)
            if not self.store.update:
                terminalreporter.write_line("run `pytest --update-snapshots` to delete them")


def _row(nodeid: str, case: Any) -> CaseRow:
    r = case.result
    return CaseRow(nodeid, case.name, r.graph_count, r.graph_break_count, r.recompile_count, r.kernel_count, round(case.compile_seconds, 2))


def _precompile_row(nodeid: str, case: Any) -> PrecompileRow:
    r = case.round_trip.report
    first_load = r.load_seconds[0] if r.load_seconds else 0.0
    return PrecompileRow(nodeid, case.name, r.artifact_bytes, round(r.compile_seconds, 2), round(r.save_seconds, 3), round(first_load, 2), len(r.load_seconds))
