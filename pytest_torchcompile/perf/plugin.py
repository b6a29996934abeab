"""pytest side of benchmarks: options, the `compile_benchmark` marker and fixture, the gate's hooks.

Loaded by `plugin.py` (`pytest_plugins`); like it, it does not import torch.
Per-run state lives in `PerfSession`, registered in `pytest_configure`; a
test's benchmark object lives in `item.stash`. The gate's per-case verdicts
are taken inside the test (a case is re-measured there before a FAIL
stands); a FAIL (under `strict` an INCONCLUSIVE too) fails its own test
once the body has returned, with the verdict line as its message, and every
gated case's line is the test's `perf_gate` property (junit writes it). The
run's verdict, the baseline file and the CI outputs are produced in
`pytest_sessionfinish`, and the tables are printed in
`pytest_terminal_summary`. No hook raises.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
from collections.abc import Generator, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from ..common.files import atomic_write_text, unwritable
from ..common.hooks.crashes import guarded, guarded_report, reported_errors
from ..common.hooks.markers import marker_problem
from ..common.hooks.report_data import attach, attached
from ..common.options import SpecError, folder_option
from ..common.terminal import align, for_config
from .baseline import BaselineWriteError
from .gate import CaseVerdict, Gate, GateSettings, Verdict, run_fails, worst
from .report.table import (
    GATE_HEADER,
    RESULT_HEADER,
    MeasuredCase,
    benchmark_json,
    gate_rows,
    json_report,
    markdown,
    result_rows,
    verdict_line,
)
from .spec import MARKER, BenchmarkSpec
from .timing import TimingSettings

if TYPE_CHECKING:
    from .baseline import BaselineStore
    from .fixture import CompileBenchmark

INTERNAL_PROPERTY = "torchcompile_perf_internal_error"
#: the user property (junit writes it) holding each gated case's verdict line.
VERDICT_PROPERTY = "perf_gate"
#: a passed test with an INCONCLUSIVE case: its letter and word in pytest's progress output.
INCONCLUSIVE_STATUS = ("passed", "I", "PASSED (perf gate INCONCLUSIVE)")
_VERDICTS = "perf_verdicts"
XDIST_SKIP = (
    "compile_benchmark does not run in pytest-xdist workers (benchmarks running in parallel measure each other): "
    "skipped; run benchmarks in a separate run without -n"
)
GATE_MODES = ("on", "strict")
CONTENTION_MODES = ("inconclusive", "ignore")
#: passes a baseline is measured in: its noise counts less, and the spread
#: between passes is recorded as the case's noise for later gates.
BASELINE_PASSES = 5

perf_key = pytest.StashKey["PerfSession"]()
bench_key = pytest.StashKey["CompileBenchmark"]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("torchcompile", "torch.compile snapshots (pytest-torchcompile)")
    group.addoption(
        "--perf-update-baseline",
        action="store_true",
        default=False,
        help="record this run's compile_benchmark results as this machine's baseline",
    )
    group.addoption(
        "--perf-gate",
        nargs="?",
        const="on",
        default=None,
        metavar="strict",
        help="compare compile_benchmark results with the baseline and fail the run on a regression; "
        "=strict also fails on INCONCLUSIVE (e.g. a missing baseline)",
    )
    group.addoption(
        "--perf-baseline-dir",
        default=None,
        type=folder_option("perf-baselines"),
        metavar="DIR",
        help="baseline folder relative to the rootdir (overrides ini torchcompile_perf_baseline)",
    )
    group.addoption(
        "--perf-report",
        default=None,
        type=file_path,
        metavar="PATH",
        help="write the benchmark and gate results as JSON",
    )
    group.addoption(
        "--perf-benchmark-json",
        default=None,
        type=file_path,
        metavar="PATH",
        help="write the benchmark results in pytest-benchmark's JSON format (for pytest-benchmark compare)",
    )
    parser.addini(
        "torchcompile_perf_baseline",
        default="perf-baselines",
        help="baseline folder, relative to the rootdir",
    )
    parser.addini(
        "torchcompile_perf_threshold",
        default="0.15",
        help="smallest relative regression that fails the gate (0.15 = 15%%)",
    )
    parser.addini(
        "torchcompile_perf_confidence", default="0.95", help="confidence of the gate's intervals"
    )
    parser.addini(
        "torchcompile_perf_max_time",
        default="1.0",
        help="seconds of timing per benchmark case (before re-measuring)",
    )
    parser.addini(
        "torchcompile_perf_threads", default="1", help="intra-op threads benchmarks are pinned to"
    )
    parser.addini(
        "torchcompile_perf_contention",
        default=CONTENTION_MODES[0],
        help="inconclusive (default): a regression measured under CPU contention is INCONCLUSIVE, "
        "not FAIL; ignore: judge as if the machine had been quiet",
    )
    parser.addini(
        "torchcompile_perf_gate_cpu_times",
        type="bool",
        default=False,
        help="also gate CPU wall times per call when the baseline is this machine's",
    )


def gate_mode(value: str | None) -> str | None:
    """The gate mode as given (`--perf-gate`, `--perf-gate=strict`); None without the flag."""
    if value is not None and value not in GATE_MODES:
        raise pytest.UsageError(
            f"--perf-gate={value}: {value!r} is not a gate mode: use --perf-gate or --perf-gate=strict"
        )
    return value


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(args: list[str]) -> None:
    """`--perf-gate PATH` gates and runs PATH, as pytest reads any flag followed by a path.

    The flag's mode is optional (`--perf-gate=strict`), so argparse would
    take a path after the flag as the mode; a word after it that is not a
    mode is given back to the command line as a test path.
    """
    for i, arg in enumerate(args[:-1]):
        if arg == "--perf-gate" and args[i + 1] not in GATE_MODES:
            args[i] = "--perf-gate=on"


def file_path(value: str) -> str:
    if not value.strip() or value.endswith(("/", os.sep)):
        raise argparse.ArgumentTypeError(f"{value!r} must name a file, e.g. perf.json")
    return value


@dataclass(frozen=True)
class PerfSettings:
    """Everything the session needs from flags and ini, validated once."""

    baseline_dir: Path
    update: bool
    gate: GateSettings | None
    timing: TimingSettings
    threads: int
    report: Path | None
    benchmark_json: Path | None
    baseline_setting: str = (
        "ini torchcompile_perf_baseline"  # how the folder was named, for messages
    )

    @classmethod
    def from_config(cls, config: pytest.Config) -> PerfSettings:
        rootdir = Path(config.rootpath)
        mode = gate_mode(config.getoption("perf_gate"))
        try:
            gate = GateSettings(
                threshold=_ini_number(config, "torchcompile_perf_threshold", float),
                confidence=_ini_number(config, "torchcompile_perf_confidence", float),
                strict=mode == "strict",
                gate_cpu_times=_ini_bool(config, "torchcompile_perf_gate_cpu_times"),
                ignore_contention=_ini_contention(config) == "ignore",
            )
            timing = TimingSettings(
                max_time=_ini_number(config, "torchcompile_perf_max_time", float),
                confidence=gate.confidence,
            )
            threads = _ini_threads(config)
            flag = config.getoption("perf_baseline_dir")
            baseline_dir = flag or _ini_folder(config, "torchcompile_perf_baseline")
        except ValueError as exc:
            raise pytest.UsageError(f"pytest-torchcompile ini option: {exc}") from None
        report, bench_json = (
            config.getoption("perf_report"),
            config.getoption("perf_benchmark_json"),
        )
        return cls(
            baseline_dir=rootdir / baseline_dir,
            update=bool(config.getoption("perf_update_baseline")),
            gate=gate if mode else None,
            timing=timing,
            threads=threads,
            report=Path(report) if report else None,
            benchmark_json=Path(bench_json) if bench_json else None,
            baseline_setting=f"--perf-baseline-dir={flag}"
            if flag
            else f"ini torchcompile_perf_baseline = {baseline_dir!r}",
        )


def _check_baseline_folder(settings: PerfSettings) -> None:
    """Before any test runs: a baseline folder an update could not write is a usage error."""
    folder = settings.baseline_dir
    blocker = next((p for p in (folder, *folder.parents) if p.exists()), None)
    if blocker is not None and not blocker.is_dir():
        raise pytest.UsageError(
            f"{settings.baseline_setting} names {folder}, but {blocker} is a file: name a folder"
        )
    problem = unwritable(folder)
    if problem is not None:
        raise pytest.UsageError(
            f"--perf-update-baseline cannot write the baseline folder {folder} ({settings.baseline_setting}): "
            f"{problem}; nothing was run or written"
        )


def _marker_error(marker: pytest.Mark) -> str | None:
    try:
        BenchmarkSpec.from_marker(marker.args, marker.kwargs)
    except SpecError as exc:
        return str(exc)
    return None


def _ini_bool(config: pytest.Config, name: str) -> bool:
    """pytest's own bool parsing, with a message that names the setting."""
    try:
        return bool(config.getini(name))
    except (
        ValueError,
        pytest.UsageError,
    ) as exc:  # pytest 9 raises UsageError, older ones ValueError
        raise ValueError(f"{name}: {exc} (use true or false)") from None


def _ini_contention(config: pytest.Config) -> str:
    value = str(config.getini("torchcompile_perf_contention")).strip()
    if value not in CONTENTION_MODES:
        raise ValueError(
            f"torchcompile_perf_contention = {value!r}: use {' or '.join(CONTENTION_MODES)}"
        )
    return value


def _ini_threads(config: pytest.Config) -> int:
    """At least 1 and at most this machine's CPUs: more threads than cores time the scheduler, and
    torch crashes on absurd counts (100000 ended the process with a segfault)."""
    threads = _ini_number(config, "torchcompile_perf_threads", int)
    cpus = os.cpu_count() or 1
    if threads < 1:
        raise ValueError(f"torchcompile_perf_threads={threads} must be at least 1")
    if threads > cpus:
        raise ValueError(
            f"torchcompile_perf_threads={threads} is more than this machine's {cpus} CPUs: use at most {cpus}"
        )
    return threads


def _ini_folder(config: pytest.Config, name: str) -> str:
    value = str(config.getini(name)).strip()
    if not value:
        raise ValueError(
            f"{name} is empty: name a folder relative to the rootdir, e.g. perf-baselines"
        )
    return value


def _ini_number(config: pytest.Config, name: str, kind: type[float] | type[int]) -> Any:
    raw = str(config.getini(name)).strip()
    try:
        return kind(raw)
    except ValueError:
        raise ValueError(
            f"{name} = {raw!r} is not {'an integer' if kind is int else 'a number'}"
        ) from None


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{BenchmarkSpec.marker_signature()}: time eager against compiled and gate on the baseline (pytest-torchcompile)",
    )
    session = PerfSession.from_config(config)
    config.stash[perf_key] = session
    config.pluginmanager.register(session, "torchcompile-perf-session")


def pytest_unconfigure(config: pytest.Config) -> None:
    session = config.stash.get(perf_key, None)
    if session is not None:
        config.pluginmanager.unregister(session)
        del config.stash[perf_key]


@pytest.fixture
def compile_benchmark(request: pytest.FixtureRequest) -> Iterator[CompileBenchmark]:
    """Time a model (or function) eager against compiled; returns a BenchmarkResult per call."""
    session = request.config.stash[perf_key]
    if session.worker:
        pytest.skip(XDIST_SKIP)
    benchmark = session.benchmark_for(request.node)
    request.node.stash[bench_key] = benchmark
    yield benchmark
    benchmark.release()


class PerfSession:
    """Per-run state: measured cases, verdicts, and what the run wrote."""

    def __init__(self, settings: PerfSettings, rootdir: Path, worker: bool) -> None:
        self.settings = settings
        self.rootdir = rootdir
        self.worker = worker
        self.cases: list[MeasuredCase] = []
        self.verdicts: list[CaseVerdict] = []
        self.skipped_in_workers = 0
        self.messages: list[str] = []
        self.internal_errors: list[str] = []
        self._store: BaselineStore | None = None

    @classmethod
    def from_config(cls, config: pytest.Config) -> PerfSession:
        settings = PerfSettings.from_config(config)
        worker = hasattr(config, "workerinput")
        distributed = config.getoption("dist", "no") != "no" and bool(config.getoption("tx", None))
        if distributed and not worker and (settings.gate or settings.update):
            raise pytest.UsageError(
                "--perf-gate and --perf-update-baseline need benchmarks to run, and compile_benchmark does not run "
                "in pytest-xdist workers: run them with -n 0 (or -p no:xdist)"
            )
        if settings.update and not worker:
            _check_baseline_folder(settings)
        return cls(settings, Path(config.rootpath), worker)

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

    def benchmark_for(self, item: pytest.Item) -> CompileBenchmark:
        """A test's benchmark object, with the marker's overrides of the ini settings."""
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
        overrides = {
            "max_time": spec.max_time,
            "confidence": spec.confidence,
            "threshold": spec.threshold,
        }
        given: dict[str, Any] = {
            name: value for name, value in overrides.items() if value is not None
        }
        timing = replace(
            self.settings.timing, **{k: v for k, v in given.items() if k != "threshold"}
        )
        gate = None
        if self.settings.gate is not None:
            settings = replace(
                self.settings.gate, **{k: v for k, v in given.items() if k != "max_time"}
            )
            gate = Gate(settings, self.store().lookup)
        passes = BASELINE_PASSES if self.settings.update else 1
        return CompileBenchmark(
            item.nodeid,
            spec,
            None,
            timing,
            self.settings.threads,
            gate,
            self.store().lookup,
            passes,
            for_config(item.config).named(item.nodeid),
        )

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_call(self, item: pytest.Item) -> None:
        """A wrong marker fails its test before the body runs, used or not (see common/hooks/markers.py)."""
        problem = marker_problem(item, MARKER, "compile_benchmark", _marker_error)
        if problem is not None:
            pytest.fail(problem, pytrace=False)

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
            lines = [verdict_line(v) for v in failing]
            hint = f"if the new numbers are intended: pytest --perf-update-baseline {pyfuncitem.nodeid}"
            pytest.fail("\n".join([*lines, hint]), pytrace=False)
        return result

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, Any, Any]:
        report = yield
        benchmark = item.stash.get(bench_key, None)
        if call.when == "call" and benchmark is not None:
            with guarded_report("pytest_runtest_makereport", report, INTERNAL_PROPERTY):
                self._attach_cases(report, item, benchmark)
        return report

    def pytest_report_teststatus(self, report: pytest.TestReport) -> tuple[str, str, str] | None:
        """A passed test whose benchmark was INCONCLUSIVE says so in the progress output."""
        if report.when == "call" and report.passed:
            if Verdict.INCONCLUSIVE.value in attached(report, _VERDICTS):
                return INCONCLUSIVE_STATUS
        return None

    def _attach_cases(
        self, report: pytest.TestReport, item: pytest.Item, benchmark: CompileBenchmark
    ) -> None:
        """The test's measured cases and verdicts, straight into the session.

        Benchmarks never run in an xdist worker (the fixture skips there), so
        the process that measured a case is the one that reports it.
        """
        for key, case in benchmark.finished():
            if case.final is not None:
                self.cases.append(MeasuredCase(key, item.nodeid, case.final.record))
            if case.verdict is not None:
                self.verdicts.append(case.verdict)
                attach(report, _VERDICTS, case.verdict.verdict.value)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Count the benchmarks xdist workers skipped; collect the plugin's own crashes."""
        self.internal_errors.extend(reported_errors(report, INTERNAL_PROPERTY))
        with guarded("pytest_runtest_logreport", self.internal_errors):
            self._collect(report)

    def _collect(self, report: pytest.TestReport) -> None:
        if report.skipped and XDIST_SKIP in str(report.longrepr):
            self.skipped_in_workers += 1

    @property
    def run_verdict(self) -> Verdict | None:
        """The worst case verdict; None without --perf-gate or without cases."""
        if self.settings.gate is None or not self.verdicts:
            return None
        return worst(v.verdict for v in self.verdicts)

    @property
    def fails_run(self) -> bool:
        return self.settings.gate is not None and run_fails(self.verdicts, self.settings.gate)

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        """Write the baseline and CI outputs, then fail the run on a regression (or on the plugin's own crash)."""
        with guarded("pytest_sessionfinish", self.internal_errors):
            self._finish(session)
        if self.internal_errors and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def _finish(self, session: pytest.Session) -> None:
        if self.worker or not self.cases:
            return
        failed = self.fails_run
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
            except (
                OSError,
                ValueError,
                TypeError,
            ) as exc:  # a hook must not raise: say it, fail the run
                self.messages.append(f"error: {type(exc).__name__}: {exc}")
                failed = True
        if self._store is not None:
            self.messages.extend(
                dict.fromkeys(self._store.problems)
            )  # the gate and the fixture look a case up twice
        if failed and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def _machine(self) -> dict[str, Any]:
        return self.store().machine.to_json()

    def _write_baseline(self) -> None:
        if not self.settings.update:
            return
        path = self.store().write({c.key: c.record for c in self.cases})
        self.messages.append(f"baseline written: {self._show(path)} ({len(self.cases)} cases)")

    def _write_report(self) -> None:
        if self.settings.report is None:
            return
        verdict = self.run_verdict.value if self.run_verdict else None
        data = json_report(verdict, self.verdicts, self.cases, self._machine(), self.messages)
        path = self.rootdir / self.settings.report
        atomic_write_text(path, json.dumps(data, indent=2, sort_keys=True) + "\n")
        self.messages.append(f"perf report written: {self._show(path)}")

    def _write_benchmark_json(self) -> None:
        if self.settings.benchmark_json is None:
            return
        path = self.rootdir / self.settings.benchmark_json
        atomic_write_text(
            path, json.dumps(benchmark_json(self.cases, self._machine()), indent=2) + "\n"
        )
        self.messages.append(f"pytest-benchmark JSON written: {self._show(path)}")

    def _append_step_summary(self) -> None:
        target = os.environ.get("GITHUB_STEP_SUMMARY")
        if not target:
            return
        with open(target, "a", encoding="utf-8") as handle:
            handle.write("\n".join(self.summary_lines(markdown_tables=True)) + "\n")

    def _show(self, path: Path) -> str:
        return (
            str(path.relative_to(self.rootdir)) if path.is_relative_to(self.rootdir) else str(path)
        )

    def refresh_command(self) -> str:
        """The one command that re-records the baselines of the cases that did not pass."""
        nodeids = sorted(
            {c.case.rsplit("::", 1)[0] for c in self.verdicts if c.verdict is not Verdict.PASS}
        )
        return " ".join(["pytest --perf-update-baseline", *map(shlex.quote, nodeids)])

    def summary_lines(self, markdown_tables: bool) -> list[str]:
        """The gate's verdict, its table (or the results table) and what to do next."""
        render = markdown if markdown_tables else align
        if self.settings.gate is None:
            title, table = (
                "torch.compile benchmarks",
                render(RESULT_HEADER, result_rows(self.cases)),
            )
        else:
            verdict = self.run_verdict
            title = f"perf gate: {verdict.value if verdict else 'nothing to gate'}"
            if verdict is Verdict.INCONCLUSIVE:
                title += (
                    ": the run fails (--perf-gate=strict)"
                    if self.fails_run
                    else ": the run does not fail (it would under --perf-gate=strict)"
                )
            table = render(GATE_HEADER, gate_rows(self.verdicts))
        lines = [f"### {title}", "", *table, ""] if markdown_tables else [title, *table]
        if self.settings.gate is not None and self.run_verdict not in (None, Verdict.PASS):
            lines.append(
                f"if the new numbers are intended, update the baseline: {self.refresh_command()}"
            )
        return lines

    @pytest.hookimpl(optionalhook=True)
    def pytest_html_results_summary(
        self, prefix: list[str], summary: list[str], postfix: list[str], session: pytest.Session
    ) -> None:
        """pytest-html's report opens with the gate's chart (each case's speedup interval)."""
        if self.settings.gate is None or not self.verdicts or self.worker:
            return
        with guarded("pytest_html_results_summary", self.internal_errors):
            from .report.chart import speedup_chart

            prefix.append(speedup_chart(self.verdicts, self.settings.gate.threshold))

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        with guarded("pytest_terminal_summary", self.internal_errors):
            self._summary(terminalreporter)
        for line in self.internal_errors:
            terminalreporter.write_line(line, red=True)

    def _summary(self, terminalreporter: Any) -> None:
        if self.worker:
            return
        if self.cases:
            terminalreporter.write_sep("-", "torch.compile benchmarks")
            for line in align(RESULT_HEADER, result_rows(self.cases)):
                terminalreporter.write_line(line)
        if self.settings.gate is not None and self.cases:
            terminalreporter.write_sep("-", "torch.compile perf gate")
            for line in self.summary_lines(markdown_tables=False):
                terminalreporter.write_line(line)
        if self.skipped_in_workers:
            terminalreporter.write_line(
                f"{self.skipped_in_workers} compile_benchmark test(s): {XDIST_SKIP}"
            )
        for message in self.messages:
            terminalreporter.write_line(message)
