"""Timing loop, baseline files and report formats, without a pytest run or torch."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_torchcompile.perf.baseline import BaselineStore, Machine, dumps
from pytest_torchcompile.perf.gpu import kernel_sources
from pytest_torchcompile.perf.record import CaseRecord
from pytest_torchcompile.perf.report.outputs import benchmark_stats
from pytest_torchcompile.perf.report.table import markdown
from pytest_torchcompile.perf.stats import Summary
from pytest_torchcompile.perf.timing import (
    PairedTiming,
    TimingSettings,
    choose_iterations,
    interleave,
)

HERE = Machine("cpu", "Some CPU", "2.13.0+cpu", None, None, 1)
LAPTOP = Machine("cpu", "Other CPU", "2.13.0+cpu", None, None, 1)
GPU_BOX = Machine("NVIDIA H100", "Other CPU", "2.13.0", "3.5.0", "12.8", 1)


class SteppedClock:
    """A clock that advances only by the work the timed functions declare.

    The timing loop's arithmetic (blocks, per-call times, ratios, intervals)
    is checked exactly, whatever else the machine is doing; how well it
    measures real time is for benchmarks/gate_quality.py, not a test.
    """

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def work(self, seconds: float):
        def run() -> None:
            self.now += seconds

        return run


def test_interleave_measures_a_known_speedup() -> None:
    clock = SteppedClock()
    settings = TimingSettings(max_time=0.3, min_rounds=10, block_time=0.001, warmup=1)
    timing = interleave(clock.work(200e-6), clock.work(100e-6), settings, clock=clock)
    summaries = timing.summaries(0.95)
    eager, compiled, speedup = summaries["eager_s"], summaries["compiled_s"], summaries["speedup"]
    assert timing.rounds >= 10
    assert timing.iterations == 16  # 1 ms / 100 us = 10 calls, rounded up to a power of two
    assert speedup.median == pytest.approx(2.0)
    assert eager.median == pytest.approx(200e-6) and compiled.median == pytest.approx(100e-6)
    assert speedup.ci_low <= speedup.median <= speedup.ci_high


def test_interleave_alternates_which_side_goes_first() -> None:
    calls: list[str] = []
    timing = interleave(
        lambda: calls.append("e"),
        lambda: calls.append("c"),
        TimingSettings(max_time=0.01, min_rounds=4, warmup=0),
    )
    k = timing.iterations
    timed = "".join(calls[10 : 10 + 8 * k])  # after the 5+5 calls that estimate the block length
    assert timed == ("e" * k + "c" * k + "c" * k + "e" * k) * 2


def test_every_timed_block_ends_with_a_sync() -> None:
    """On GPU `sync` is torch.cuda.synchronize: each block's clock must stop after
    the queued kernels ran, not when the CPU returned (the reduce-overhead gate
    rests on this per-call wall-time ratio)."""
    clock, events = SteppedClock(), []

    def side(name: str, seconds: float):
        work = clock.work(seconds)

        def run() -> None:
            events.append(name)
            work()

        return run

    def sync() -> None:
        events.append("|")
        clock.now += 50e-6  # the GPU's queued work: counted only because the block waits for it

    settings = TimingSettings(
        max_time=0.01, min_rounds=4, max_rounds=4, block_time=0.0002, warmup=0
    )
    timing = interleave(side("e", 100e-6), side("c", 50e-6), settings, sync=sync, clock=clock)
    k = timing.iterations
    timed = "".join(events[-4 * (k + 1) :])
    assert timed == "e" * k + "|" + "c" * k + "|" + "c" * k + "|" + "e" * k + "|"
    assert (
        "".join(events).count("|") == 1 + 10 + 2 * timing.rounds
    )  # warm-up, 5+5 estimates, every block
    assert timing.compiled[0] == pytest.approx(50e-6 + 50e-6 / k)


def test_iterations_hint_is_kept_when_sensible() -> None:
    assert choose_iterations(100e-6, 0.0005) == 8
    assert choose_iterations(100e-6, 0.0005, hint=4) == 4  # 0.4 ms block: close enough to 0.5 ms
    assert choose_iterations(100e-6, 0.0005, hint=1000) == 8  # a 100 ms block: recalibrate
    assert choose_iterations(1.0, 0.0005) == 1


def test_pooled_timings_keep_pairs() -> None:
    a = PairedTiming((2.0, 2.0), (1.0, 1.0), 4)
    b = PairedTiming((3.0,), (1.0,), 4)
    assert a.merged(b).ratios() == (2.0, 2.0, 3.0)


def record(speedup: float) -> CaseRecord:
    return CaseRecord(
        {"speedup": Summary.exact(speedup)},
        {"graph_count": 1},
        {"iterations": 8},
        samples={"eager_s": (1.0,)},
    )


def test_baseline_write_keeps_other_cases_and_other_machines(tmp_path: Path) -> None:
    BaselineStore(tmp_path, LAPTOP).write({"t::case_0": record(3.0)})
    here = BaselineStore(tmp_path, HERE)
    here.write({"t::case_0": record(2.0), "t::case_1": record(1.5)})
    BaselineStore(tmp_path, HERE).write({"t::case_1": record(1.6)})
    files = sorted(p.name for p in tmp_path.iterdir())
    assert files == sorted([HERE.filename(), LAPTOP.filename()])
    data = json.loads((tmp_path / HERE.filename()).read_text())
    assert data["machine"] == HERE.to_json()
    assert sorted(data["cases"]) == ["t::case_0", "t::case_1"]
    assert data["cases"]["t::case_1"]["metrics"]["speedup"]["median"] == 1.6
    assert "samples" not in data["cases"]["t::case_0"]  # raw rounds go to reports, not baselines


def test_baseline_file_is_sorted_one_line_per_metric(tmp_path: Path) -> None:
    path = BaselineStore(tmp_path, HERE).write({"t::case_0": record(3.0)})
    text = path.read_text()
    assert text.endswith("}\n")
    assert (
        '      "metrics": {\n        "speedup": {"ci_high": 3.0, "ci_low": 3.0, "median": 3.0, "min": 3.0, "n": 1, "q1": 3.0, "q3": 3.0}\n'
        in text
    )
    keys = [line.split('"')[1] for line in text.splitlines() if line.startswith('  "')]
    assert keys == sorted(keys) == ["cases", "format", "machine"]
    assert json.loads(dumps(json.loads(text))) == json.loads(text)


def test_lookup_prefers_this_machine_then_the_closest(tmp_path: Path) -> None:
    BaselineStore(tmp_path, GPU_BOX).write({"t::a": record(9.0), "t::b": record(9.0)})
    BaselineStore(tmp_path, LAPTOP).write({"t::a": record(5.0)})
    BaselineStore(tmp_path, HERE).write({"t::c": record(1.0)})
    store = BaselineStore(tmp_path, HERE)
    own = store.lookup("t::c")
    assert own is not None and own.same_machine and own.source == HERE.filename()
    closest = store.lookup("t::a")
    assert closest is not None and not closest.same_machine
    assert closest.record.metrics["speedup"].median == 5.0  # LAPTOP shares more of the fingerprint
    assert store.lookup("t::missing") is None


def test_damaged_baseline_file_is_skipped_with_a_message(tmp_path: Path) -> None:
    (tmp_path / "broken.json").write_text("{ not json")
    (tmp_path / "old.json").write_text(json.dumps({"format": 0, "machine": {}, "cases": {}}))
    BaselineStore(tmp_path, HERE).write({"t::a": record(2.0)})
    store = BaselineStore(tmp_path, HERE)
    assert store.lookup("t::a") is not None
    assert len(store.problems) == 2
    assert any("broken.json: not JSON: Expecting property name" in p for p in store.problems)
    assert any("old.json: ValueError: format 0, expected 1" in p for p in store.problems)


def test_a_baseline_recorded_with_the_old_counter_names_still_reads(tmp_path: Path) -> None:
    """Baselines written before the counters had one spelling (`graph_breaks`) gate the same."""
    counters = {"graphs": 1, "graph_breaks": 0, "recompiles": 0, "kernels": 1}
    data = {"cases": {"t::a": {"metrics": {}, "counters": counters}}, "format": 1}
    (tmp_path / HERE.filename()).write_text(json.dumps({**data, "machine": HERE.to_json()}))
    found = BaselineStore(tmp_path, HERE).lookup("t::a")
    assert found is not None and found.same_machine
    assert found.record.counters == {
        "graph_count": 1,
        "graph_break_count": 0,
        "recompile_count": 0,
        "kernel_count": 1,
    }


def test_machine_filename_is_readable_and_unique() -> None:
    assert HERE.filename().startswith("some-cpu-1t-") and HERE.filename().endswith(".json")
    assert GPU_BOX.filename().startswith("nvidia-h100-1t-")
    assert HERE.filename() != Machine("cpu", "Some CPU", "2.14.0", None, None, 1).filename()


def test_benchmark_stats_match_pytest_benchmark() -> None:
    stats_module = pytest.importorskip("pytest_benchmark.stats")
    data = [3.0, 1.0, 2.0, 10.0, 2.5, 2.2, 1.9, 2.1]
    theirs = stats_module.Stats()
    for value in data:
        theirs.update(value)
    ours = benchmark_stats(data)
    for name in ("min", "max", "mean", "stddev", "rounds", "median", "total"):
        assert ours[name] == pytest.approx(getattr(theirs, name)), name
    assert ours["data"] == data


def test_markdown_escapes_pipes() -> None:
    assert markdown(("a", "b"), [("x|y", "1")]) == ["| a | b |", "| --- | --- |", "| x\\|y | 1 |"]


OUTPUT_CODE = """
triton_poi_fused_add_0 = async_compile.triton('triton_poi_fused_add_0', '''
import triton

@triton.jit
def triton_poi_fused_add_0(in_ptr0, out_ptr0, xnumel, XBLOCK: tl.constexpr):
    pass

def get_args():
    return 1,

def call(args):
    pass
''', device_str='cuda')

triton_per_fused_sum_1 = async_compile.triton('triton_per_fused_sum_1', '''
import triton
''', device_str='cuda')
"""


def test_kernel_sources_found_in_output_code() -> None:
    kernels = kernel_sources(OUTPUT_CODE)
    assert [name for name, _ in kernels] == ["triton_poi_fused_add_0", "triton_per_fused_sum_1"]
    assert "def get_args():" in kernels[0][1] and "def call(args):" in kernels[0][1]
    assert "'''" not in kernels[0][1]
