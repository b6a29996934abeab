"""The snapshot wing's per-run session: the snapshot check, the text-only policy, the tables.

Made in `pytest_configure` (`plugin.py`) from the snapshot folder template
(`files/sets.py` checks it and resolves each test's set); per-test state
lives in `item.stash`. Once a marked test's body has returned, its set is
resolved once, its cases' artifact texts go to that set's store in one call
(`SnapshotStore.check_test`), each changed case is compared once
(`ChangedCases`), and what came back (a failure, counts, unused files)
travels on the test's report. No hook raises (`WingSession`);
this module does not import torch until a test's folder needs its version.
"""

from __future__ import annotations

import json
import time
from collections.abc import Generator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import pytest

from ..common.hooks.crashes import internal_error
from ..common.hooks.flags import Given
from ..common.hooks.report_data import attach, attached, keep
from ..common.hooks.session import WingSession
from ..common.options import SpecError
from .artifacts.normalize import Normalizer
from .case_table import CaseRow, PrecompileRow, format_precompile_table, format_table
from .compare.changes import ChangedCases
from .compare.failure import compose
from .compare.html import failure_fragment
from .compare.text_only import TextOnly, split
from .files.housekeeping import UNUSED_PROPERTY, Housekeeping
from .files.other_torch import OtherTorch
from .files.other_torch import summary_lines as other_torch_lines
from .files.outcome import Outcome, Status
from .files.sets import SnapshotSets
from .files.store import FileCounts, FolderClash, SnapshotStore
from .fresh_process.servers import FreshProcesses
from .spec import MARKER, CompileSpec

if TYPE_CHECKING:
    from .case import CompileCase
    from .distributed.case import DistributedCase
    from .fixture import CompileModel
    from .precompile.round_trip import PrecompileReport

    #: a case of either fixture, as the snapshot check and the tables read it
    Case = CompileCase | DistributedCase

ROWS_PROPERTY = "torchcompile_cases"
PRECOMPILE_PROPERTY = "torchcompile_precompile"
COUNTS_PROPERTY = "torchcompile_file_counts"
OTHER_TORCH_PROPERTY = "torchcompile_other_torch"
TEXT_ONLY_PROPERTY = "torchcompile_text_only"

model_key = pytest.StashKey["CompileModel"]()
#: a failing test's verdicts and side-by-side diffs, for pytest-html
html_key = pytest.StashKey[str]()


def parse_marker(marker: pytest.Mark | None) -> tuple[CompileSpec | None, str | None]:
    """The marker's spec, or what is wrong with it; unmarked tests compile and capture but
    assert nothing (numerics off)."""
    if marker is None:
        return CompileSpec(numerics=False), None
    try:
        return CompileSpec.from_marker(marker.args, marker.kwargs), None
    except SpecError as exc:
        return None, str(exc)


@dataclass(frozen=True)
class TextOnlyMode:
    """What a case whose snapshots changed in text only does, and the flags that say so."""

    update_flag: str  # writes them
    strict_flag: str  # fails on them
    action: Literal["pass", "fail", "update"] = "pass"


class TorchCompileSession(WingSession):
    """Per-run state: the snapshot sets (`files/sets.py`), case rows, and the run's
    `SnapshotReport` (files written, updated and deleted, shared with `housekeeping.py`,
    which collects each test's folder and judges unused files and stale folders)."""

    marker = MARKER
    fixture = "compile_model"
    internal_property = "torchcompile_internal_error"

    def __init__(
        self,
        sets: SnapshotSets,
        worker: bool,
        housekeeping: Housekeeping,
        full_diff: bool = False,
        text_only: TextOnlyMode | None = None,
    ) -> None:
        self.sets = sets
        self.store = sets.store  # the `cpu` set (or the only one)
        super().__init__(worker)
        self.rootdir = sets.rootdir
        self.housekeeping = housekeeping
        self.full_diff = full_diff
        self.all_findings = False  # `-v`: a failure lists every finding, without every diff
        self.text_only = text_only or TextOnlyMode("", "")
        self.text_only_rows: list[tuple[str, dict[str, Any]]] = []
        self.report = housekeeping.report  # the files the run wrote, updated and deleted
        # tests new on this torch that another torch's set holds
        self.other_torches: list[OtherTorch] = []
        self.rows: list[CaseRow] = []
        self.precompile_rows: list[PrecompileRow] = []
        self.processes = FreshProcesses()  # the fork server of this session (or xdist worker)

    @classmethod
    def from_config(
        cls, config: pytest.Config, folder: Given, full_diff: bool, text_only: TextOnlyMode
    ) -> TorchCompileSession:
        """The run's session, for the snapshot folder template `folder` (a flag or ini option)."""
        update = bool(config.getoption("update_snapshots"))
        sets = SnapshotSets.from_setting(folder, Path(config.rootpath), update, time.time())
        housekeeping = Housekeeping.from_config(config, sets.store)
        housekeeping.sets = (sets.folder.text, sets.torch) if sets.torch else None
        worker = hasattr(config, "workerinput")
        return cls(sets, worker, housekeeping, full_diff, text_only)

    def normalizer(self) -> Normalizer:
        import torch  # only called from the fixture, where torch is needed anyway

        return Normalizer.for_paths(str(self.rootdir), str(Path(torch.__file__).parent))

    def marker_error(self, marker: pytest.Mark) -> str | None:
        return parse_marker(marker)[1]

    @pytest.hookimpl(wrapper=True)
    def pytest_pyfunc_call(self, pyfuncitem: pytest.Function) -> Generator[None, object, object]:
        """Compare snapshots once the test function has returned without error."""
        result = yield
        model = pyfuncitem.stash.get(model_key, None)
        if model is None or pyfuncitem.get_closest_marker(MARKER) is None:
            return result
        crash = failure = ""
        try:
            cases = model.finished()
            texts = model.snapshot_texts(cases)
            own = model.spec.snapshot_dir if model.spec is not None else None
            snapshot_set = self.sets.for_test(pyfuncitem.nodeid, cases, own)
            store = snapshot_set.store
            folder = self.housekeeping.folder(pyfuncitem)
            checked = store.check_test(folder, texts, self.housekeeping.claims)
            changed, refreshed = self._pass_text_only(pyfuncitem, store, checked.outcomes)
            counts = checked.counts + refreshed
            keep(pyfuncitem, COUNTS_PROPERTY, json.dumps(counts.to_json()))
            if checked.unused is not None:
                keep(pyfuncitem, UNUSED_PROPERTY, json.dumps(checked.unused.to_json()))
            other = snapshot_set.other_torch(folder, checked.outcomes)
            if other is not None:
                keep(pyfuncitem, OTHER_TORCH_PROPERTY, json.dumps(other.to_json()))
            if changed is not None and changed.failed:
                failure = compose(
                    changed, store.show(checked.folder), self.full_diff, self.all_findings
                )
                if other is not None:
                    failure = "\n".join([other.headline(), failure, other.next_steps()])
                if _html_report_wanted(pyfuncitem.config):
                    pyfuncitem.stash[html_key] = failure_fragment(changed)
        except FolderClash as exc:
            failure = f"usage error: {exc}"
        except OSError:
            raise  # the file system's own error, with its path (the store's to word)
        except Exception as exc:  # the plugin's bug: fail this test with a line that says so
            crash = internal_error(exc, "the snapshot check")
        if crash or failure:
            pytest.fail(crash or failure, pytrace=False)  # outside `except`: no chained traceback
        return result

    def _pass_text_only(
        self, item: pytest.Item, store: SnapshotStore, outcomes: list[Outcome]
    ) -> tuple[ChangedCases | None, FileCounts]:
        """Each changed case compared once (None when no file failed); cases that changed in
        text only pass (kept for the summary) or, with the update flag, are written; the cases
        left to judge, and the files written."""
        if not any(o.failed for o in outcomes):
            return None, FileCounts()
        changed = ChangedCases.of(outcomes)
        if self.text_only.action == "fail":
            return changed, FileCounts()
        passing, rest = split(changed)
        written, failed = FileCounts(), []
        for case in passing:
            refreshed = self._refresh(store, case) if self.text_only.action == "update" else []
            failed += [o for o in refreshed if o.failed]
            written += FileCounts(updated=sum(o.status is Status.UPDATED for o in refreshed))
            done = bool(refreshed) and not any(o.failed for o in refreshed)
            row = {"case": case.case, "reason": case.reason, "refreshed": done}
            keep(item, TEXT_ONLY_PROPERTY, json.dumps(row))
        return (rest.without((), failed) if failed else rest), written

    def _refresh(self, store: SnapshotStore, case: TextOnly) -> list[Outcome]:
        """Write a text-only case's changed files, as `--update-snapshots` would write them."""
        writer = SnapshotStore(
            root=store.root, rootdir=store.rootdir, update=True, started=store.started
        )
        return [writer.check(o.path, o.new or "", o.case, o.artifact) for o in case.outcomes]

    @pytest.hookimpl(tryfirst=True)
    def pytest_report_teststatus(self, report: pytest.TestReport) -> Any:
        """A test that passed with text-only snapshot differences says so on its line."""
        if report.when == "call" and report.passed and attached(report, TEXT_ONLY_PROPERTY):
            return "passed", "t", ("PASSED (snapshot text only)", {"yellow": True})
        return None

    def attach(self, report: pytest.TestReport, item: pytest.Item) -> None:
        """The test's case rows (and its verdicts and diffs for pytest-html) on its call report."""
        model = item.stash.get(model_key, None)
        if model is None:
            return
        self._attach_rows(report, item, model)
        if html_key in item.stash:
            _attach_html(report, item.stash[html_key])

    def _attach_rows(
        self, report: pytest.TestReport, item: pytest.Item, model: CompileModel
    ) -> None:
        rows = [_row(item.nodeid, case) for case in model.cases if case.result is not None]
        attach(report, ROWS_PROPERTY, json.dumps([r.to_json() for r in rows]))
        from .case import CompileCase  # a test with cases has imported torch already

        trips = [
            _precompile_row(item.nodeid, case.name, trip)
            for case in model.cases
            if isinstance(case, CompileCase) and (trip := case.precompile_report()) is not None
        ]
        if trips:
            attach(report, PRECOMPILE_PROPERTY, json.dumps([r.to_json() for r in trips]))

    def collect(self, report: pytest.TestReport) -> None:
        """Rows and counts from every report: the xdist controller sees its workers' cases too."""
        for value in attached(report, ROWS_PROPERTY):
            self.rows.extend(CaseRow.from_json(d) for d in json.loads(value))
        for value in attached(report, PRECOMPILE_PROPERTY):
            self.precompile_rows.extend(PrecompileRow.from_json(d) for d in json.loads(value))
        for value in attached(report, COUNTS_PROPERTY):
            self.report.wrote(FileCounts.from_json(json.loads(value)))
        for value in attached(report, OTHER_TORCH_PROPERTY):
            self.other_torches.append(OtherTorch.from_json(json.loads(value)))
        for value in attached(report, TEXT_ONLY_PROPERTY):
            self.text_only_rows.append((report.nodeid, json.loads(value)))

    def summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        if self.rows:
            self._write_tables(terminalreporter)
        for line in self._text_only_summary():
            terminalreporter.write_line(line, yellow=True)
        if self.store.update:
            terminalreporter.write_line(f"torch.compile snapshots: {self.report.counts.line()}")
        for line in other_torch_lines(self.other_torches, self.store.update):
            terminalreporter.write_line(line)

    def _write_tables(self, terminalreporter: pytest.TerminalReporter) -> None:
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

    def _text_only_summary(self) -> list[str]:
        """How many cases passed with text-only differences, which, and why (their verdicts)."""
        rows = self.text_only_rows
        if not rows:
            return []
        mode = self.text_only
        kept = [row for row in rows if not row[1]["refreshed"]]
        what = (
            f"the stored files are kept: {mode.update_flag} writes them, {mode.strict_flag} fails on them"
            if kept
            else "their snapshots were rewritten"
        )
        cases = f"{len(rows)} case{'s' if len(rows) > 1 else ''}"
        lines = [f"torch.compile snapshots: {cases} changed in text only and passed ({what}):"]
        for nodeid, row in rows:
            case = f"[{row['case']}]" if row["case"] else ""
            lines.append(f"  {nodeid}{case}: {row['reason']}")
        return lines


def _html_report_wanted(config: pytest.Config) -> bool:
    """pytest-html is loaded and this run writes its report (`--html PATH`); it stays optional."""
    return config.pluginmanager.hasplugin("html") and bool(config.getoption("htmlpath", None))


def _attach_html(report: pytest.TestReport, fragment: str) -> None:
    """Show `fragment` under the test's row of pytest-html's report."""
    from pytest_html import extras  # only when its report is written

    report.extras = [*getattr(report, "extras", []), extras.html(fragment)]  # type: ignore[attr-defined]


def _row(nodeid: str, case: Case) -> CaseRow:
    r = case.result
    assert r is not None
    return CaseRow(
        nodeid,
        case.name,
        r.graph_count,
        r.graph_break_count,
        r.recompile_count,
        r.kernel_count,
        round(case.compile_seconds, 2),
    )


def _precompile_row(nodeid: str, name: str, r: PrecompileReport) -> PrecompileRow:
    """The table's row of a case's `PrecompileReport`."""
    first_load = r.load_seconds[0] if r.load_seconds else 0.0
    return PrecompileRow(
        nodeid,
        name,
        r.artifact_bytes,
        round(r.compile_seconds, 2),
        round(r.save_seconds, 3),
        round(first_load, 2),
        len(r.load_seconds),
    )
