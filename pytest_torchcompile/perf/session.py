"""The perf wing's per-run session: measured cases, verdicts, and what the run writes.

Made from a `PerfSettings` (the validated flags and ini options, see
`plugin.py`) and registered in `pytest_configure`; a test's benchmark object
lives in `item.stash`. The gate's per-case verdicts are taken inside the
test (a case is re-measured there before a FAIL stands); a FAIL (under
`strict` an INCONCLUSIVE too) fails its own test once the body has returned,
with the verdict line as its message, and every gated case's line is the
test's `perf_gate` property (junit writes it). The baseline file and the CI
outputs are written in `pytest_sessionfinish`, the tables printed in
`pytest_terminal_summary` (`report/`). No hook raises (`WingSession`).
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from ..common.hooks.crashes import guarded
from ..common.hooks.report_data import attach, attached
from ..common.hooks.session import WingSession
from ..common.options import SpecError
from ..common.terminal import Progress, align, for_config
from .baseline import BaselineWriteError
from .compile_time.request import Request
from .gate import CaseVerdict, Gate, GateSettings, Verdict, run_fails
from .record import MeasuredCase
from .report.outputs import append_step_summary, benchmark_json, json_report, write_json
from .report.table import (
    contended_baseline_lines,
    doubtful_baseline_lines,
    next_step,
    result_header,
    result_rows,
    run_verdict,
    summary_lines,
    verdict_details,
    verdict_line,
)
from .spec import MARKER, BenchmarkSpec
from .timing import TimingSettings

if TYPE_CHECKING:
    from .baseline import BaselineStore
    from .compile_time.child import CompilingBenchmark
    from .compile_time.runner import FreshCompiles
    from .fixture import CompileBenchmark

#: the user property (junit writes it) holding each gated case's verdict line.
VERDICT_PROPERTY = "perf_gate"
#: a passed test with an INCONCLUSIVE case: its letter and word in pytest's progress output.
INCONCLUSIVE_STATUS = ("passed", "I", "PASSED (perf gate INCONCLUSIVE)")
_VERDICTS = "perf_verdicts"
XDIST_SKIP = (
    "compile_benchmark does not run in pytest-xdist workers (benchmarks running in parallel measure each other): "
    "skipped; run benchmarks in a separate run without -n"
)
#: passes a baseline is measured in: its noise counts less, and the spread
#: between passes is recorded as the case's noise for later gates.
BASELINE_PASSES = 5

bench_key = pytest.StashKey["CompileBenchmark | CompilingBenchmark"]()


@dataclass(frozen=True)
class PerfSettings:
    """Everything the session needs from flags and ini options, validated once."""

    baseline_dir: Path
    update: bool
    gate: GateSettings | None
    timing: TimingSettings
    threads: int
    report: Path | None
    benchmark_json: Path | None
    threshold: float = GateSettings.threshold  # the gate's, also known when recording a baseline
    baseline_setting: str = (
        "ini torchcompile_perf_baseline_dir"  # how the folder was named, for messages
    )
    compile_runs: int = 5
    child_arguments: tuple[str, ...] = ()
    compiling: Request | None = None  # this process compiles one case for compile_time=True


class PerfSession(WingSession):
    """Per-run state: measured cases, verdicts, and what the run wrote."""

    marker = MARKER
    fixture = "compile_benchmark"
    internal_property = "torchcompile_perf_internal_error"

    def __init__(self, settings: PerfSettings, rootdir: Path, worker: bool) -> None:
        super().__init__(worker)
        self.settings = settings
        self.rootdir = rootdir
        self.cases: list[MeasuredCase] = []
        self.verdicts: list[CaseVerdict] = []
        self.skipped_in_workers = 0
        self.messages: list[str] = []
        self._store: BaselineStore | None = None

    def store(self) -> BaselineStore:
        """The baseline files, read on first use (torch is loaded by then)."""
        if self._store is None:
            from .baseline import BaselineStore, Machine

            self._store = BaselineStore(
                self.settings.baseline_dir,
                Machine.current(self.settings.threads),
                self.settings.baseline_setting,
            )
        return self._store

    def marker_error(self, marker: pytest.Mark) -> str | None:
        try:
            BenchmarkSpec.from_marker(marker.args, marker.kwargs)
        except SpecError as exc:
            return str(exc)
        return None

    def benchmark_for(self, item: pytest.Item) -> CompileBenchmark | CompilingBenchmark:
        """A test's benchmark object, with the marker's overrides of the ini settings (in a
        process compiling one case for `compile_time=True`, the object that compiles it)."""
        from .fixture import CompileBenchmark

        marker = item.get_closest_marker(MARKER)
        try:
            spec = (
                BenchmarkSpec.from_marker(marker.args, marker.kwargs) if marker else BenchmarkSpec()
            )
        except SpecError as exc:
            return CompileBenchmark(
                item.nodeid, None, str(exc), self.settings.timing, self.settings.threads
            )
        if self.settings.compiling is not None and self.settings.compiling.nodeid == item.nodeid:
            from .compile_time.child import CompilingBenchmark

            return CompilingBenchmark(self.settings.compiling, spec, self.settings.threads)
        timing = replace(
            self.settings.timing,
            **_given(max_time=spec.max_time, confidence=spec.confidence),
        )
        gate = None
        if self.settings.gate is not None:
            settings = replace(
                self.settings.gate,
                **_given(
                    threshold=spec.threshold,
                    confidence=spec.confidence,
                    compile_threshold=spec.compile_threshold,
                ),
            )
            gate = Gate(settings, self.store().lookup)
        progress = for_config(item.config).named(item.nodeid)
        return CompileBenchmark(
            item.nodeid,
            spec,
            None,
            timing,
            self.settings.threads,
            gate,
            self.store().lookup,
            BASELINE_PASSES if self.settings.update else 1,
            progress,
            self._fresh_compiles(item, progress) if spec.compile_time else None,
            self.settings.compile_runs,
        )

    def _fresh_compiles(self, item: pytest.Item, progress: Progress) -> FreshCompiles:
        from .compile_time.runner import FreshCompiles

        return FreshCompiles(
            item.nodeid, self.rootdir, list(self.settings.child_arguments), progress
        )

    # --- each test -------------------------------------------------------------

    @pytest.hookimpl(wrapper=True)
    def pytest_pyfunc_call(self, pyfuncitem: pytest.Function) -> Generator[None, object, object]:
        """Once the body has returned: a gated FAIL fails its test (under strict an INCONCLUSIVE too)."""
        result = yield
        benchmark = pyfuncitem.stash.get(bench_key, None)
        if benchmark is None or self.settings.gate is None:
            return result
        verdicts = [c.verdict for _, c in benchmark.finished() if c.verdict is not None]
        for verdict in verdicts:
            pyfuncitem.user_properties.append((VERDICT_PROPERTY, verdict_line(verdict)))
        failing = [v for v in verdicts if run_fails([v], self.settings.gate)]
        if failing:
            lines = [line for v in failing for line in (verdict_line(v), *verdict_details(v))]
            hints = dict.fromkeys(next_step(v, pyfuncitem.nodeid) for v in failing)
            pytest.fail("\n".join([*lines, *hints]), pytrace=False)
        return result

    def attach(self, report: pytest.TestReport, item: pytest.Item) -> None:
        """The test's measured cases and verdicts, straight into the session.

        Benchmarks never run in an xdist worker (the fixture skips there), so
        the process that measured a case is the one that reports it.
        """
        benchmark = item.stash.get(bench_key, None)
        if benchmark is None:
            return
        threshold = benchmark.threshold(self.settings.threshold)
        for key, case in benchmark.finished():
            if case.final is not None:
                self.cases.append(MeasuredCase(key, item.nodeid, case.final.record, threshold))
            if case.verdict is not None:
                self.verdicts.append(case.verdict)
                attach(report, _VERDICTS, case.verdict.verdict.value)

    def pytest_report_teststatus(self, report: pytest.TestReport) -> tuple[str, str, str] | None:
        """A passed test whose benchmark was INCONCLUSIVE says so in the progress output."""
        if report.when == "call" and report.passed:
            if Verdict.INCONCLUSIVE.value in attached(report, _VERDICTS):
                return INCONCLUSIVE_STATUS
        return None

    def collect(self, report: pytest.TestReport) -> None:
        """Count the benchmarks xdist workers skipped."""
        if report.skipped and XDIST_SKIP in str(report.longrepr):
            self.skipped_in_workers += 1

    # --- end of run ------------------------------------------------------------

    def finish(self, session: pytest.Session) -> None:
        """Write the baseline and the CI outputs; a regression or a failed write fails the run."""
        if self.worker or not self.cases:
            return
        failed = self.settings.gate is not None and run_fails(self.verdicts, self.settings.gate)
        for write in (
            self._write_baseline,
            self._write_report,
            self._write_benchmark_json,
            self._append_step_summary,
        ):
            try:
                write()
            except BaselineWriteError as exc:  # names the file, the setting and the fix
                self.messages.append(f"error: {exc}")
                failed = True
            except (OSError, ValueError, TypeError) as exc:  # a hook must not raise: say it
                self.messages.append(f"error: {type(exc).__name__}: {exc}")
                failed = True
        if self._store is not None:
            # the gate and the fixture look a case up twice: each problem once
            self.messages.extend(dict.fromkeys(self._store.problems))
        if failed and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def _write_baseline(self) -> None:
        if not self.settings.update:
            return
        path = self.store().write({c.key: c.record for c in self.cases})
        self.messages.append(f"baseline written: {self._show(path)} ({len(self.cases)} cases)")
        self.messages.extend(contended_baseline_lines(self.cases))
        self.messages.extend(doubtful_baseline_lines(self.cases))

    def _write_report(self) -> None:
        if self.settings.report is None:
            return
        verdict = run_verdict(self.verdicts, self.settings.gate)
        machine = self.store().machine.to_json()
        path = self.rootdir / self.settings.report
        write_json(
            path,
            json_report(
                verdict.value if verdict else None,
                self.verdicts,
                self.cases,
                machine,
                self.messages,
            ),
        )
        self.messages.append(f"perf report written: {self._show(path)}")

    def _write_benchmark_json(self) -> None:
        if self.settings.benchmark_json is None:
            return
        path = self.rootdir / self.settings.benchmark_json
        machine = self.store().machine.to_json()
        write_json(path, benchmark_json(self.cases, machine), sort_keys=False)
        self.messages.append(f"pytest-benchmark JSON written: {self._show(path)}")

    def _append_step_summary(self) -> None:
        append_step_summary(
            summary_lines(self.cases, self.verdicts, self.settings.gate, markdown_tables=True)
        )

    def _show(self, path: Path) -> str:
        return (
            str(path.relative_to(self.rootdir)) if path.is_relative_to(self.rootdir) else str(path)
        )

    @pytest.hookimpl(optionalhook=True)
    def pytest_html_results_summary(
        self, prefix: list[str], summary: list[str], postfix: list[str], session: pytest.Session
    ) -> None:
        """pytest-html's report opens with the gate's chart (each case's speedup interval) and the
        table of the fresh-process compiles (`compile_time=True`)."""
        if self.worker:
            return
        with guarded("pytest_html_results_summary", self.internal_errors):
            from .report.chart import speedup_chart
            from .report.html import compile_table

            if self.settings.gate is not None and self.verdicts:
                prefix.append(speedup_chart(self.verdicts, self.settings.gate.threshold))
            table = compile_table(self.cases, self.verdicts)
            if table:
                prefix.append(table)

    def summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        if self.cases:
            terminalreporter.write_sep("-", "torch.compile benchmarks")
            for line in align(result_header(self.cases), result_rows(self.cases)):
                terminalreporter.write_line(line)
        if self.settings.gate is not None and self.cases:
            terminalreporter.write_sep("-", "torch.compile perf gate")
            for line in summary_lines(
                self.cases, self.verdicts, self.settings.gate, markdown_tables=False
            ):
                terminalreporter.write_line(line)
        if self.skipped_in_workers:
            terminalreporter.write_line(
                f"{self.skipped_in_workers} compile_benchmark test(s): {XDIST_SKIP}"
            )
        for message in self.messages:
            terminalreporter.write_line(message)


def _given(**overrides: float | None) -> dict[str, float]:
    """The marker's overrides it gave (None: not given, the ini value stands)."""
    return {name: value for name, value in overrides.items() if value is not None}
