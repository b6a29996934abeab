"""The perf gate under CPU contention: a busy neighbour never FAILs unchanged code,
and a regression on a quiet machine still FAILs.

The verdict rules run on synthetic contention (no machine needs to be quiet);
the probe and a whole gated run are measured beside real spinning processes,
which only make a loaded machine more contended, so they hold on any machine.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace

import pytest

from pytest_torchcompile.perf.case import BenchmarkCase
from pytest_torchcompile.perf.contention import Contention, Probe
from pytest_torchcompile.perf.contention import describe_contention as describe
from pytest_torchcompile.perf.contention import worst_contention as worst
from pytest_torchcompile.perf.gate import Baseline, Gate, GateSettings, Verdict
from pytest_torchcompile.perf.record import CaseRecord
from pytest_torchcompile.perf.spec import BenchmarkSpec
from pytest_torchcompile.perf.timing import PairedTiming, TimingSettings
from tests.perf.test_gate_rules import record, rows_by_metric

QUIET = Contention(waiting=0.01, pressure=0.01, preemptions_per_s=2.0, steal=0.0, load=0.4)
BUSY = Contention(waiting=0.58, pressure=0.98, preemptions_per_s=140.0, steal=0.0, load=3.1)


def judged(now: CaseRecord, base: CaseRecord, same_machine: bool = True) -> dict[str, object]:
    baseline = Baseline(base, same_machine, "machine.json")
    return rows_by_metric(Gate(GateSettings(), lambda case: baseline).judge("c", now))


def test_a_regression_on_a_quiet_machine_fails() -> None:
    rows = judged(replace(record(1.2), contention=QUIET), replace(record(3.0), contention=QUIET))
    assert rows["speedup"].verdict is Verdict.FAIL


def test_a_regression_measured_under_contention_is_inconclusive_with_the_reason() -> None:
    rows = judged(replace(record(1.2), contention=BUSY), replace(record(3.0), contention=QUIET))
    speedup = rows["speedup"]
    assert speedup.verdict is Verdict.INCONCLUSIVE
    assert speedup.note == (
        "CPU contention: waited for a CPU 58% of the time, CPU pressure 98%, "
        "140 preemptions/s, load 3.1 per CPU"
    )


def test_a_baseline_recorded_under_contention_makes_a_fail_inconclusive() -> None:
    rows = judged(replace(record(1.2), contention=QUIET), replace(record(3.0), contention=BUSY))
    assert rows["speedup"].verdict is Verdict.INCONCLUSIVE
    assert rows["speedup"].note.startswith("CPU contention: baseline recorded under contention (")


def test_counters_fail_whatever_the_contention() -> None:
    now = replace(record(3.0, counters={"graph_count": 2}), contention=BUSY)
    rows = judged(now, replace(record(3.0), contention=QUIET))
    assert rows["counters"].verdict is Verdict.FAIL


def test_a_pass_under_contention_is_inconclusive_too() -> None:
    """Contention can hide a slowdown as well as fake one: beside a machine waiting for a CPU
    92% of the time, a planted 17% slowdown measured +1.1% [-13.8%, +18.6%]."""
    base = replace(record(2.43, spread=0.02), contention=QUIET)
    planted = replace(record(2.459, spread=0.16), contention=BUSY)
    rows = judged(planted, base)
    assert rows["speedup"].verdict is Verdict.INCONCLUSIVE
    assert rows["speedup"].note.startswith("CPU contention: waited for a CPU 58% of the time")
    assert rows["counters"].verdict is Verdict.PASS  # exact: no contention moves a counter
    quiet = Gate(GateSettings(ignore_contention=True), lambda case: Baseline(base, True, "m"))
    assert rows_by_metric(quiet.judge("c", planted))["speedup"].verdict is Verdict.PASS


def test_a_slower_calibration_kernel_counts_only_on_the_baselines_machine() -> None:
    slow = replace(QUIET, calibration_s=0.0015)
    base = replace(record(3.0), contention=replace(QUIET, calibration_s=0.001))
    assert judged(replace(record(1.2), contention=slow), base)["speedup"].verdict is (
        Verdict.INCONCLUSIVE
    )
    assert "a fixed kernel ran 1.50x slower than for the baseline" in describe(
        slow, base.contention, same_machine=True
    )
    other = judged(replace(record(1.2), contention=slow), base, same_machine=False)
    assert other["speedup"].verdict is Verdict.FAIL


def test_records_without_contention_are_judged_as_before() -> None:
    assert judged(record(1.2), record(3.0))["speedup"].verdict is Verdict.FAIL


def test_contention_round_trips_and_ignores_damage() -> None:
    stored = replace(record(3.0), contention=BUSY).to_json(samples=False)
    assert CaseRecord.from_json(json.loads(json.dumps(stored))).contention == Contention(
        0.58, 0.98, 140.0, 0.0, 3.1
    )
    damaged = Contention.from_json({"waiting": "x", "pressure": -1, "load": float("nan")})
    assert damaged == Contention() and damaged.reasons() == []


def test_worst_keeps_the_most_contended_value_of_each_signal() -> None:
    merged = worst([QUIET, BUSY, Contention(pressure=None, steal=0.2)])
    assert (merged.waiting, merged.pressure, merged.steal) == (0.58, 0.98, 0.2)
    assert "hypervisor steal 20%" in merged.reasons()


def paired(contention: Contention, ratio: float) -> PairedTiming:
    return PairedTiming((ratio * 1e-3,) * 20, (1e-3,) * 20, 1, contention)


def test_the_figures_come_from_the_quiet_passes_where_there_are_some() -> None:
    case = BenchmarkCase("case_0", BenchmarkSpec(), TimingSettings(), threads=1)
    case.passes = [paired(BUSY, 4.0), paired(QUIET, 3.0), paired(QUIET, 3.0)]
    assert case.timed_passes() == case.passes[1:]
    made = case.record()
    assert made.metrics["speedup"].median == pytest.approx(3.0)
    assert made.contention == worst([QUIET, QUIET])
    assert "timing: 1 of 3 passes left out (CPU contention)" in made.notes
    case.passes = [paired(BUSY, 4.0)]
    assert case.record().contention == BUSY  # all contended: all kept, and the gate told


@contextmanager
def spinners(count: int) -> Iterator[None]:
    """`count` processes spinning on the CPU for the duration of the block."""
    processes = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]
    try:
        time.sleep(0.3)
        yield
    finally:
        for process in processes:
            process.kill()
            process.wait()


def test_the_probe_sees_spinning_neighbours() -> None:
    with spinners(2 * (os.cpu_count() or 1)), Probe() as probe:
        ends = time.perf_counter() + 0.5
        while time.perf_counter() < ends:
            sum(range(1000))
    assert probe.result.reasons(), probe.result
    assert probe.result.calibration_s is not None and probe.result.calibration_s > 0


def test_a_model_that_sleeps_is_not_waiting_for_a_cpu() -> None:
    """Sleeping (I/O, a GPU synchronise) is not contention: only run-queue delay is."""
    with Probe() as probe:
        time.sleep(0.5)
    assert probe.result.waiting is not None and probe.result.waiting < 0.1, probe.result


def test_contention_can_be_ignored_on_a_machine_the_user_trusts() -> None:
    baseline = Baseline(replace(record(3.0), contention=QUIET), True, "machine.json")
    settings = GateSettings(ignore_contention=True)
    rows = rows_by_metric(
        Gate(settings, lambda case: baseline).judge("c", replace(record(1.2), contention=BUSY))
    )
    assert rows["speedup"].verdict is Verdict.FAIL


SLOW_TEST = """
import os, subprocess, sys, pytest, torch

def chain(x):
    y = x * 1.5 + 0.5
    if os.environ.get("SLOW") and torch.compiler.is_compiling():
        for _ in range(6):
            y = torch.sin(y) * 0.5 + 0.5
    return torch.relu(y)

@pytest.mark.compile_benchmark(backend="eager")
def test_chain(compile_benchmark):
    # a spinning neighbour per CPU while the case is compiled and timed
    spin = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
            for _ in range(int(os.environ.get("SPIN", "0")))]
    try:
        compile_benchmark(chain, torch.randn(4096))
    finally:
        for process in spin:
            process.kill()
            process.wait()
"""


def test_a_planted_slowdown_beside_spinning_neighbours_is_never_a_pass_nor_a_fail(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makeini("[pytest]\ntorchcompile_perf_max_time = 0.2\n")
    pytester.makepyfile(test_slow=SLOW_TEST)
    pytester.runpytest("--torchcompile-perf-update-baseline").assert_outcomes(passed=1)
    (baseline,) = (pytester.path / "perf-baselines").glob("*.json")
    stored = json.loads(baseline.read_text())["cases"]["test_slow.py::test_chain::case_0"]
    assert set(stored["contention"]) >= {"calibration_s", "waiting", "preemptions_per_s"}
    monkeypatch.setenv("SLOW", "1")
    monkeypatch.setenv("SPIN", str(os.cpu_count() or 1))
    result = pytester.runpytest(
        "--torchcompile-perf-gate", "--torchcompile-perf-report=report.json"
    )
    report = json.loads((pytester.path / "report.json").read_text())
    (speedup,) = [row for row in report["rows"] if row["metric"] == "speedup"]
    assert speedup["change"] < -0.5, speedup  # the slowdown was measured
    assert speedup["verdict"] == "INCONCLUSIVE" and speedup["note"].startswith("CPU contention: ")
    # the remedy is measuring again, never recording these numbers as the baseline
    result.stdout.fnmatch_lines(
        [
            "INCONCLUSIVE under CPU contention, not a measured change: run the gate again when the machine is "
            "quiet: pytest --torchcompile-perf-gate test_slow.py::test_chain (do not update the baseline from "
            "these numbers)"
        ]
    )
    assert "update the baseline:" not in result.stdout.str()
