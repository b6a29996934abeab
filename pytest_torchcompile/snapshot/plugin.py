"""pytest entry point: options, the marker, the `compile_model` fixture, hooks.

This module must not import torch: `pytest --help` in a project without
compiled models stays fast. Everything that needs torch is imported inside
the fixture. Per-run state lives in `TorchCompileSession`, registered as a
plugin in `pytest_configure`; per-test state in `item.stash`.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from .housekeeping import Housekeeping
from .normalize import Normalizer
from .report import CaseRow, PrecompileRow, format_precompile_table, format_table
from .store import Outcome, SnapshotStore
from .spec import MARKER, CompileSpec, SpecError, marker_signature

if TYPE_CHECKING:
    from .fixture import CompileModel

ROWS_PROPERTY = "torchcompile_cases"
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
        help="write new and changed snapshots, delete unused ones and stale folders (same as syrupy's --snapshot-update)",
    )
    group.addoption(
        "--torchcompile-snapshot-dir",
        default=None,
        type=_relative_dir,
        help="folder for snapshot files, relative to the rootdir (overrides ini torchcompile_snapshot_dir)",
    )
    parser.addini("torchcompile_snapshot_dir", default="snapshots", help="folder for snapshot files, relative to the rootdir")


def _relative_dir(value: str) -> str:
    if not value.strip():
        raise argparse.ArgumentTypeError("must name a folder, e.g. snapshots")
    return value


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", f"{MARKER}{marker_signature()[len(MARKER):]}: compile with torch.compile, snapshot the compiler's artifacts and check numerics against eager (pytest-torchcompile)")
    session = TorchCompileSession.from_config(config)
    config.stash[session_key] = session
    config.pluginmanager.register(session, "torchcompile-session")
    config.pluginmanager.register(session.housekeeping, "torchcompile-housekeeping")


def pytest_unconfigure(config: pytest.Config) -> None:
    session = config.stash.get(session_key, None)
    if session is not None:
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
    """Per-run state: the snapshot store, case rows, and the update bookkeeping (housekeeping.py)."""

    def __init__(self, store: SnapshotStore, rootdir: Path, worker: bool, housekeeping: Housekeeping) -> None:
        self.store = store
        self.rootdir = rootdir
        self.worker = worker
        self.housekeeping = housekeeping
        self.rows: list[CaseRow] = []
        self.outcomes: list[Outcome] = []
        self.precompile_rows: list[PrecompileRow] = []

    @classmethod
    def from_config(cls, config: pytest.Config) -> TorchCompileSession:
        rootdir = Path(config.rootpath)
        update = bool(config.getoption("update_snapshots"))
        store = SnapshotStore(root=_snapshot_root(config, rootdir), rootdir=rootdir, update=update, started=time.time())
        return cls(store, rootdir, hasattr(config, "workerinput"), Housekeeping.from_config(config, store))

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
        test_dir = self.housekeeping.test_dir(pyfuncitem)
        collision = self.store.claim(test_dir, pyfuncitem.nodeid)
        if collision:
            pytest.fail(f"usage error: {collision}", pytrace=False)
        outcomes = model.check_snapshots(self.store, test_dir)
        self.outcomes.extend(outcomes)
        failures = [o.message for o in outcomes if o.failed]
        if failures:
            pytest.fail("\n\n".join(failures), pytrace=False)
        self.housekeeping.after_test(pyfuncitem, test_dir)
        return result

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


def _snapshot_root(config: pytest.Config, rootdir: Path) -> Path:
    """The snapshot folder; a usage error when the setting is empty or names a file."""
    flag = config.getoption("torchcompile_snapshot_dir")
    folder = flag or config.getini("torchcompile_snapshot_dir")
    setting = f"--torchcompile-snapshot-dir={folder}" if flag else f"ini torchcompile_snapshot_dir = {folder!r}"
    if not str(folder).strip():
        raise pytest.UsageError(f"{setting} is empty: name a folder relative to the rootdir, e.g. snapshots (the default)")
    root = rootdir / folder
    for path in (root, *root.parents):
        if path.exists():
            if not path.is_dir():
                raise pytest.UsageError(f"{setting} names {path}, which is a file, not a folder: name a folder (e.g. snapshots, the default) or move the file")
            break
    return root


def _row(nodeid: str, case: Any) -> CaseRow:
    r = case.result
    return CaseRow(nodeid, case.name, r.graph_count, r.graph_break_count, r.recompile_count, r.kernel_count, round(case.compile_seconds, 2))


def _precompile_row(nodeid: str, case: Any) -> PrecompileRow:
    r = case.round_trip.report
    first_load = r.load_seconds[0] if r.load_seconds else 0.0
    return PrecompileRow(nodeid, case.name, r.artifact_bytes, round(r.compile_seconds, 2), round(r.save_seconds, 3), round(first_load, 2), len(r.load_seconds))
