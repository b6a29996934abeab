"""The snapshot wing's per-run session: snapshot stores, the snapshot check, the tables.

Made in `pytest_configure` (`plugin.py`) from the snapshot folder template;
per-test state lives in `item.stash`. Once a marked test's body has
returned, its cases' artifact texts go to the store of their folder in one
call (`SnapshotStore.check_test`), and what came back (a failure, counts,
unused files) travels on the test's report. No hook raises (`WingSession`);
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

from ..common.files import unwritable
from ..common.hooks.crashes import internal_error
from ..common.hooks.flags import Given
from ..common.hooks.report_data import attach, attached, keep
from ..common.hooks.session import WingSession
from ..common.options import SpecError, folder_problem
from .artifacts.normalize import Normalizer
from .case_table import CaseRow, PrecompileRow, format_precompile_table, format_table
from .compare.changes import ChangedCases
from .compare.failure import compose
from .compare.html import failure_fragment
from .compare.text_only import TextOnly, split
from .files.claims import TestFolder
from .files.housekeeping import UNUSED_PROPERTY, Housekeeping
from .files.other_torch import OtherTorch, first_run, other_torch
from .files.other_torch import summary_lines as other_torch_lines
from .files.outcome import Outcome, Status
from .files.ownership import root_problem
from .files.placeholders import (
    PlaceholderError,
    expand_home,
    installed_torch_minor,
    placeholders,
    resolve,
    resolve_some,
    set_relation,
    torch_minor,
)
from .files.store import FileCounts, FolderClash, SnapshotStore, TestFiles
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
    """Per-run state: the snapshot stores (one per resolved folder), case rows, and the
    counts of files written, updated and deleted; `housekeeping.py` collects each test's
    folder and judges stale folders."""

    marker = MARKER
    fixture = "compile_model"
    internal_property = "torchcompile_internal_error"

    def __init__(
        self,
        folder: str,
        store: SnapshotStore,
        rootdir: Path,
        worker: bool,
        housekeeping: Housekeeping,
        full_diff: bool = False,
        template: str | None = None,
        text_only: TextOnlyMode | None = None,
    ) -> None:
        self.folder = folder  # the template, `{torch}` resolved when torch's version was known without importing it
        self.template = template or folder  # as given: other torches' sets are found by it
        self.uses = placeholders(folder)
        self.store = (
            store  # the `cpu` set (or the only one): the set housekeeping judges stale folders in
        )
        super().__init__(worker)
        self.rootdir = rootdir
        self.update = store.update
        self.housekeeping = housekeeping
        self.stores: dict[Path, SnapshotStore] = {store.root: store}
        self.full_diff = full_diff
        self.all_findings = False  # `-v`: a failure lists every finding, without every diff
        self.text_only = text_only or TextOnlyMode("", "")
        self.text_only_rows: list[tuple[str, dict[str, Any]]] = []
        self.counts = FileCounts()  # files the run's tests wrote, updated and deleted
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
        rootdir = Path(config.rootpath)
        update = bool(config.getoption("update_snapshots"))
        given = template = _checked_template(folder)
        version = installed_torch_minor()
        if version is not None:
            template = resolve_some(template, torch=version)
        root = _snapshot_root(
            folder.source,
            rootdir / resolve(template, torch=version or "{torch}", device="cpu"),
            rootdir,
            update,
        )
        store = SnapshotStore(root=root, rootdir=rootdir, update=update, started=time.time())
        housekeeping = Housekeeping.from_config(config, store)
        housekeeping.sets = (template, version) if version else None
        worker = hasattr(config, "workerinput")
        return cls(template, store, rootdir, worker, housekeeping, full_diff, given, text_only)

    def store_for(
        self, nodeid: str, cases: list[Case], template: str | None = None
    ) -> SnapshotStore:
        """The store of the folder these cases resolve to (one per torch version and device),
        under the run's folder template or the test's own (the marker's `snapshot_dir`).

        `{device}` comes from the cases themselves (`case_device`): a CPU case on
        a GPU machine shares the `cpu` set. Only here is torch needed.
        """
        if template is None and not self.uses:
            return self.store
        import torch

        template = template or self.folder
        version, device = torch_minor(torch.__version__), self._device(nodeid, cases, template)
        root = self.rootdir / resolve(template, torch=version, device=device)
        if root not in self.stores:
            run_root = self.rootdir / resolve(self.folder, torch=version, device=device)
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
        return self.stores[root]

    def _beside(self, root: Path, run_root: Path, version: str) -> str | None:
        """Why a test's own folder (`snapshot_dir=`) may not lie inside a set of the run's folder
        (any device's), nor hold one: the run judges the folders there by its own layout, and
        would take the test's for a deleted one's (an update wrote them, then removed them)."""
        relation = set_relation(root, self.rootdir, self.folder, version)
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

    def _other_torch(
        self,
        nodeid: str,
        cases: list[Case],
        store: SnapshotStore,
        folder: TestFolder,
        checked: TestFiles,
        template: str | None = None,
    ) -> OtherTorch | None:
        """Another torch's set that holds this test, when this torch's set held none of its files."""
        template = template or self.template
        if "torch" not in placeholders(template) or not first_run(checked.outcomes):
            return None
        import torch

        now, device = torch_minor(torch.__version__), self._device(nodeid, cases, template)
        return other_torch(template, self.rootdir, now, device, store.root, folder, store.show)

    def _device(self, nodeid: str, cases: list[Case], template: str) -> str:
        if "device" not in placeholders(template):
            return "cpu"
        devices = sorted({c.device_key() for c in cases})
        if len(devices) > 1:
            pytest.fail(
                f"usage error: the cases of {nodeid} ran on {' and '.join(devices)}, but the snapshot folder "
                f"{template!r} has one {{device}} per test: put the cases of each device in a test of their own",
                pytrace=False,
            )
        return devices[0] if devices else "cpu"

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
            texts = model.snapshot_texts()
            own = _own_template(model.spec.snapshot_dir if model.spec is not None else None)
            store = self.store_for(pyfuncitem.nodeid, model.finished(), own)
            folder = self.housekeeping.folder(pyfuncitem)
            checked = store.check_test(folder, texts, self.housekeeping.claims)
            changed, refreshed = self._pass_text_only(pyfuncitem, store, checked.outcomes)
            counts = checked.counts + refreshed
            keep(pyfuncitem, COUNTS_PROPERTY, json.dumps(counts.to_json()))
            if checked.unused is not None:
                keep(pyfuncitem, UNUSED_PROPERTY, json.dumps(checked.unused.to_json()))
            other = self._other_torch(
                pyfuncitem.nodeid, model.finished(), store, folder, checked, own
            )
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
        trips = [
            _precompile_row(item.nodeid, case.name, trip)
            for case in model.cases
            if (trip := case.precompile_report()) is not None
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
            self.counts += FileCounts.from_json(json.loads(value))
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
            counts = self.counts + self.housekeeping.removed
            terminalreporter.write_line(f"torch.compile snapshots: {counts.line()}")
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


def _own_template(template: str | None) -> str | None:
    """A test's own folder template (the marker's `snapshot_dir`), `~` expanded; the test fails
    when its placeholders are wrong."""
    if template is None:
        return None
    try:
        placeholders(template)
        return expand_home(template)
    except PlaceholderError as exc:
        pytest.fail(f"usage error: {MARKER}(snapshot_dir=...): {exc}", pytrace=False)


def _checked_template(folder: Given) -> str:
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
        placeholders(template)
        return expand_home(template)
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
