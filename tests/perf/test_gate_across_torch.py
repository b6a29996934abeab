"""The perf gate across a torch upgrade on one machine, a baseline recorded under contention,
the remedies it names, and benchmarks left out of a snapshot job's run.

A torch upgrade is what the gate judges: a baseline file of this machine
(device, CPU model, threads) written by another torch is this machine's,
absolute times included, and the run says which software it was judged
across. The older torch's file is a real one: recorded by this torch, its
fingerprint then rewritten as the older torch's run would have written it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from pytest_torchcompile.perf.baseline import BaselineStore, Machine
from pytest_torchcompile.perf.case import BenchmarkCase
from pytest_torchcompile.perf.gate import Baseline, CaseVerdict, Gate, GateSettings, Verdict
from pytest_torchcompile.perf.record import CaseRecord, MeasuredCase
from pytest_torchcompile.perf.report.table import (
    doubtful_baseline_lines,
    next_step,
    next_steps,
    summary_lines,
)
from pytest_torchcompile.perf.spec import BenchmarkSpec
from pytest_torchcompile.perf.timing import PairedTiming, TimingSettings
from tests.perf.test_gate_rules import record
from tests.perf.test_gate_under_contention import BUSY, QUIET, SLOW_TEST, paired
from tests.perf.test_timing_baselines_reports import GPU_BOX, HERE, LAPTOP
from tests.perf.test_timing_baselines_reports import record as stored

BENCHMARKS = """
import pytest, torch

@pytest.mark.compile_benchmark(backend="eager")
def test_a(compile_benchmark):
    compile_benchmark(torch.sin, torch.randn(64))

def test_b(compile_benchmark):  # the fixture without the marker
    compile_benchmark(torch.cos, torch.randn(64))
"""
SNAPSHOT_AND_PLAIN = """
import pytest, torch

@pytest.mark.compile_snapshot(backend="aot_eager", artifacts=["summary"])
def test_snapshot(compile_model):
    compile_model(torch.nn.Linear(4, 2), torch.randn(3, 4))

def test_plain():
    assert True
"""
FAST = "[pytest]\ntorchcompile_perf_max_time = 0.05\ntorchcompile_perf_threshold = 0.9\n"
OLDER_TORCH = "2.11.0+cpu"


@pytest.fixture(autouse=True)
def no_step_summary(monkeypatch: pytest.MonkeyPatch) -> None:
    """Inner runs must not append to a real CI job's summary."""
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Both benchmarks' baseline, recorded once for the module by this torch."""
    project = tmp_path_factory.mktemp("recorded")
    (project / "pytest.ini").write_text(FAST)
    (project / "test_p.py").write_text(BENCHMARKS)
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider"]
    done = subprocess.run(
        [*command, "--torchcompile-perf-update-baseline"],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    (path,) = (project / "perf-baselines").glob("*.json")
    return path


def as_if_written_by(path: Path, folder: Path, **fingerprint: str) -> Path:
    """`path`'s baseline as another torch (or machine) would have written it: its fingerprint
    and its file name, which the fingerprint's hash is part of."""
    data = json.loads(path.read_text())
    data["machine"].update(fingerprint)
    target = folder / Machine.from_json(data["machine"]).filename()
    folder.mkdir(exist_ok=True)
    target.write_text(json.dumps(data))
    return target


def gated(pytester: pytest.Pytester, *args: str) -> tuple[pytest.RunResult, dict[str, dict]]:
    result = pytester.runpytest(
        "--torchcompile-perf-gate", "--torchcompile-perf-report=r.json", *args
    )
    report = json.loads((pytester.path / "r.json").read_text())
    rows = {
        (row["case"].split("::")[1], row["metric"].split(" ")[0]): row for row in report["rows"]
    }
    return result, {"rows": rows, "verdicts": report["verdicts"], "machine": report["machine"]}


def test_a_torch_upgrade_on_this_machine_is_judged_not_waved_through(
    pytester: pytest.Pytester, recorded: Path
) -> None:
    pytester.makeini(FAST)
    pytester.makepyfile(test_p=BENCHMARKS)
    older = as_if_written_by(recorded, pytester.path / "perf-baselines", torch=OLDER_TORCH)
    result, report = gated(pytester, "--torchcompile-perf-gate-cpu-times")
    now = report["machine"]["torch"]
    assert now != OLDER_TORCH
    result.stdout.fnmatch_lines(
        [
            f"judged against this machine's baseline of other software: torch {OLDER_TORCH} -> {now} (2 cases); "
            "once the upgrade is accepted, record this software's baseline (a file of its own; the other stays): "
            "pytest --torchcompile-perf-update-baseline"
        ]
    )
    assert "other machine" not in result.stdout.str()
    # the CPU wall times are gated as on the machine that recorded them (asked for here)
    for test in ("test_a", "test_b"):
        assert report["rows"][(test, "eager_s")]["verdict"] != "not gated"
        assert report["rows"][(test, "speedup")]["verdict"] != "not gated"
        assert report["verdicts"][f"test_p.py::{test}::case_0"]["software"] == (
            f"torch {OLDER_TORCH} -> {now}"
        )

    # the new torch's update writes its own file; the older torch's stays for its CI leg
    before = older.read_bytes()
    pytester.runpytest("--torchcompile-perf-update-baseline").assert_outcomes(passed=2)
    assert older.read_bytes() == before
    assert len(list(older.parent.glob("*.json"))) == 2


def test_another_machine_is_still_another_machine(
    pytester: pytest.Pytester, recorded: Path
) -> None:
    pytester.makeini(FAST)
    pytester.makepyfile(test_p=BENCHMARKS)
    as_if_written_by(recorded, pytester.path / "perf-baselines", cpu="Another CPU model")
    result, report = gated(pytester, "--torchcompile-perf-gate-cpu-times")
    assert report["rows"][("test_a", "eager_s")]["note"].startswith(
        "other machine (another-cpu-model-"
    )
    assert report["rows"][("test_a", "speedup")]["verdict"] != "not gated"  # a ratio: any machine
    assert "judged against this machine's baseline of other software" not in result.stdout.str()


def test_lookup_takes_this_torch_then_the_torch_before_then_another_machine(
    tmp_path: Path,
) -> None:
    def here(torch: str) -> Machine:
        return replace(HERE, torch=torch)

    for machine, speedup in ((LAPTOP, 1.0), (here("2.11.0+cpu"), 2.11), (here("2.15.0+cpu"), 2.15)):
        BaselineStore(tmp_path, machine).write({"t::a": stored(speedup)})
    BaselineStore(tmp_path, here("2.12.1")).write({"t::a": stored(2.12), "t::b": stored(2.12)})
    BaselineStore(tmp_path, GPU_BOX).write({"t::c": stored(9.0)})

    upgraded = BaselineStore(tmp_path, here("2.13.0+cpu"))
    found = upgraded.lookup("t::a")
    assert found is not None and found.same_machine
    assert found.record.metrics["speedup"].median == 2.12  # the newest older torch
    assert found.software == "torch 2.12.1 -> 2.13.0+cpu"
    oldest = BaselineStore(tmp_path, here("2.10.0")).lookup("t::a")
    assert oldest is not None and oldest.record.metrics["speedup"].median == 2.11
    assert oldest.software == "torch 2.11.0+cpu -> 2.10.0"  # a downgrade: the nearest newer one
    exact = BaselineStore(tmp_path, here("2.15.0+cpu")).lookup("t::a")
    assert exact is not None and exact.same_machine and exact.software == ""
    foreign = upgraded.lookup("t::c")
    assert foreign is not None and not foreign.same_machine and foreign.software == ""


def test_a_baseline_file_written_before_the_upgrade_rule_reads_as_this_machines(
    tmp_path: Path,
) -> None:
    """The file format did not change: a file as the plugin wrote it before is read whole."""
    old_file = {
        "cases": {
            "t::a": {
                "counters": {"graph_breaks": 0, "graphs": 1, "kernels": 1, "recompiles": 0},
                "metrics": {
                    "speedup": {
                        "ci_high": 2.4,
                        "ci_low": 2.3,
                        "median": 2.36,
                        "min": 0.4,
                        "n": 99,
                        "q1": 2.0,
                        "q3": 2.9,
                    }
                },
                "settings": {"backend": "inductor", "iterations": 1, "threads": 1},
            }
        },
        "format": 1,
        "machine": {
            "cpu": "Some CPU",
            "cuda": None,
            "device": "cpu",
            "threads": 1,
            "torch": "2.11.0",
            "triton": None,
        },
    }
    (tmp_path / "some-cpu-1t-0a1b2c3d.json").write_text(json.dumps(old_file))
    found = BaselineStore(tmp_path, HERE).lookup("t::a")
    assert (
        found is not None and found.same_machine and found.software == "torch 2.11.0 -> 2.13.0+cpu"
    )
    assert found.record.metrics["speedup"].median == 2.36


def judge(now: CaseRecord, base: CaseRecord) -> CaseVerdict:
    baseline = Baseline(base, True, "machine.json")
    return Gate(GateSettings(), lambda case: baseline).judge("t.py::t::case_0", now)


def test_each_kind_of_not_passing_names_its_own_remedy() -> None:
    slow_now = judge(replace(record(1.2), contention=BUSY), replace(record(3.0), contention=QUIET))
    slow_base = judge(replace(record(1.2), contention=QUIET), replace(record(3.0), contention=BUSY))
    failed = judge(replace(record(1.2), contention=QUIET), replace(record(3.0), contention=QUIET))
    assert (slow_now.verdict, slow_base.verdict, failed.verdict) == (
        Verdict.INCONCLUSIVE,
        Verdict.INCONCLUSIVE,
        Verdict.FAIL,
    )
    assert slow_now.undecided_for_contention and slow_base.undecided_for_contention
    assert next_steps([slow_now]) == [
        "INCONCLUSIVE under CPU contention, not a measured change: run the gate again when the machine "
        "is quiet: pytest --torchcompile-perf-gate t.py::t (do not update the baseline from these numbers)"
    ]
    assert next_steps([slow_base]) == [
        "the baseline was recorded under CPU contention: record it again on a quiet machine: "
        "pytest --torchcompile-perf-update-baseline t.py::t"
    ]
    assert next_steps([failed]) == [
        "if the new numbers are intended, update the baseline: pytest --torchcompile-perf-update-baseline t.py::t"
    ]
    assert next_step(slow_now, "t.py::t").startswith("measured under CPU contention: run it again")
    assert "update" not in next_step(slow_now, "t.py::t").split(";")[0]
    # a case also missing a counter is a change to decide on, contention or not
    moved = judge(
        replace(record(1.2, counters={"graph_count": 2}), contention=BUSY),
        replace(record(3.0), contention=QUIET),
    )
    assert moved.verdict is Verdict.FAIL and not moved.undecided_for_contention
    lines = summary_lines([], [slow_now, failed], GateSettings(), markdown_tables=False)
    assert lines[-2].startswith("if the new numbers are intended") and lines[-1].startswith(
        "INCONCLUSIVE under CPU contention"
    )


def test_a_baseline_recorded_under_contention_says_so(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a threshold of 0.1% makes any interval measured here wide against it: that is said too
    pytester.makeini(
        "[pytest]\ntorchcompile_perf_max_time = 0.1\ntorchcompile_perf_threshold = 0.001\n"
    )
    pytester.makepyfile(test_slow=SLOW_TEST)
    monkeypatch.setenv("SPIN", str(2 * (os.cpu_count() or 1)))
    result = pytester.runpytest("--torchcompile-perf-update-baseline")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            "baseline written: perf-baselines/*.json (1 cases)",
            "warning: 1 of 1 case(s) recorded under CPU contention (test_slow.py::test_chain::case_0: *): "
            "against such a baseline the gate calls a slowdown INCONCLUSIVE, never FAIL; record them again "
            "on a quiet machine: pytest --torchcompile-perf-update-baseline test_slow.py::test_chain",
            "warning: 1 of 1 case(s) recorded with passes left out or a wide interval (test_slow.py::test_chain::case_0: "
            "speedup *wide against its 0.1% threshold): * record them again on a quiet machine: "
            "pytest --torchcompile-perf-update-baseline test_slow.py::test_chain",
        ]
    )


def measured(passes: list[PairedTiming], threshold: float = 0.15) -> MeasuredCase:
    case = BenchmarkCase("case_0", BenchmarkSpec(), TimingSettings(), threads=1)
    case.passes = passes
    return MeasuredCase("t.py::t::case_0", "t.py::t", case.record(), threshold)


def test_a_baseline_with_passes_left_out_or_a_wide_interval_says_so() -> None:
    quiet = [paired(QUIET, 3.0) for _ in range(5)]
    assert doubtful_baseline_lines([measured(quiet)]) == []
    # one contended pass left out: the four quiet ones are the baseline, and the run says so
    (line,) = doubtful_baseline_lines([measured([paired(BUSY, 4.0), *quiet[1:]])])
    assert line == (
        "warning: 1 of 1 case(s) recorded with passes left out or a wide interval (t.py::t::case_0: "
        "1 of 5 passes left out (CPU contention)): a gate against such a baseline may misjudge "
        "unchanged code; record them again on a quiet machine: pytest --torchcompile-perf-update-baseline t.py::t"
    )
    # five quiet passes whose medians spread 0.48x to 0.62x: wide against 15%, not against 40%
    spread = [paired(QUIET, ratio) for ratio in (0.48, 0.53, 0.56, 0.60, 0.62)]
    (line,) = doubtful_baseline_lines([measured(spread)])
    assert "(t.py::t::case_0: speedup 0.56x [" in line
    assert "wide against its 15% threshold)" in line
    assert doubtful_baseline_lines([measured(spread, threshold=0.4)]) == []


def test_benchmarks_stay_out_of_a_snapshot_jobs_run(pytester: pytest.Pytester) -> None:
    """`-m "not compile_benchmark"` leaves every benchmark out, the marker's and the fixture's users."""
    pytester.makeini(FAST)
    pytester.makepyfile(test_p=BENCHMARKS, test_s=SNAPSHOT_AND_PLAIN)
    result = pytester.runpytest("-m", "not compile_benchmark", "--update-snapshots")
    result.assert_outcomes(passed=2, deselected=2)
    assert "torch.compile benchmarks" not in result.stdout.str()
    result = pytester.runpytest("-m", "compile_benchmark", "--co", "-q")
    result.stdout.fnmatch_lines(
        ["test_p.py::test_a", "test_p.py::test_b", "*2/4 tests collected (2 deselected)*"]
    )


def test_addopts_keeps_benchmarks_out_and_the_benchmark_jobs_own_m_wins(
    pytester: pytest.Pytester,
) -> None:
    """`addopts = -m "not compile_benchmark"` keeps plain `pytest` fast; the benchmark job's `-m` wins."""
    pytester.makeini(FAST + 'addopts = -m "not compile_benchmark"\n')
    pytester.makepyfile(test_p=BENCHMARKS, test_s=SNAPSHOT_AND_PLAIN)
    pytester.runpytest("--co", "-q").stdout.fnmatch_lines(["*2/4 tests collected (2 deselected)*"])
    result = pytester.runpytest("-m", "compile_benchmark", "--co", "-q")
    result.stdout.fnmatch_lines(["*2/4 tests collected (2 deselected)*"])
    assert "test_p.py::test_a" in result.stdout.str()
