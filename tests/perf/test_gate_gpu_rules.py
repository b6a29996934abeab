"""The gate's GPU rules and the GPU figures' arithmetic, on synthetic numbers (CPU only, no torch).

Which method timed the kernels (CUDA-graph replay or per-call events), a
launch-bound case, Inductor's own CUDA graphs (reduce-overhead), passes
pooled with their noise. The same rules on the recorded H100 numbers are in
tests/perf/test_gate_h100_samples.py; the GPU paths themselves in tests/perf/test_gpu_figures.py.
"""

from __future__ import annotations

import math

import pytest

from pytest_torchcompile.perf.gate import Baseline, Gate, GateSettings, Verdict
from pytest_torchcompile.perf.gpu import (
    LAUNCH_BOUND_RATIO,
    GpuMeasurement,
    GpuPass,
    inductor_cudagraphs,
    launch_ratio,
)
from pytest_torchcompile.perf.record import EVENTS, GPU_TIMES, REPLAY, CaseRecord
from pytest_torchcompile.perf.stats import Summary

COUNTERS = {"graphs": 1, "graph_breaks": 0, "recompiles": 0, "kernels": 1}


def metric(median: float, spread: float = 0.01) -> Summary:
    return Summary(
        median,
        median * 0.95,
        median * 0.99,
        median * 1.01,
        median * (1 - spread),
        median * (1 + spread),
        50,
    )


def gpu_record(
    eager: float = 100e-6,
    compiled: float = 50e-6,
    speedup: float | None = None,
    cpu_speedup: float = 2.0,
    timing: str | None = REPLAY,
    launch_bound: bool | None = False,
    cudagraphs: bool = False,
    counters: dict[str, int] | None = None,
) -> CaseRecord:
    metrics = {
        "speedup": metric(cpu_speedup, 0.02),
        "gpu_eager_s": metric(eager),
        "gpu_compiled_s": metric(compiled),
        "gpu_speedup": metric(speedup if speedup is not None else eager / compiled),
        "gpu_peak_eager_bytes": Summary.exact(4096),
        "gpu_peak_compiled_bytes": Summary.exact(0),
        "gpu_eager_call_s": metric(eager * 3, 0.5),
    }
    settings = {"gpu_launch_bound": launch_bound, "gpu_inductor_cudagraphs": cudagraphs}
    if timing is not None:
        settings["gpu_timing"] = timing
    return CaseRecord(metrics, counters or dict(COUNTERS), settings)


def judge(base: CaseRecord, now: CaseRecord, same_machine: bool = True, **settings: object):
    baseline = Baseline(base, same_machine, "h100.json")
    verdict = Gate(GateSettings(**settings), lambda case: baseline).judge("t::case_0", now)
    return verdict, {row.metric.split(" ")[0]: row for row in verdict.rows}


def test_replay_times_are_gated_and_say_how_they_were_measured() -> None:
    verdict, rows = judge(gpu_record(), gpu_record(compiled=51e-6))
    assert verdict.verdict is Verdict.PASS
    for name in GPU_TIMES:
        assert rows[name].verdict is Verdict.PASS and rows[name].note == "CUDA-graph replay"
    assert rows["gpu_eager_call_s"].verdict is Verdict.NOT_GATED  # per-call events: reported


def test_replay_regression_fails() -> None:
    verdict, rows = judge(gpu_record(), gpu_record(compiled=70e-6))
    assert rows["gpu_compiled_s"].verdict is Verdict.FAIL
    assert rows["gpu_speedup"].verdict is Verdict.FAIL
    assert verdict.verdict is Verdict.FAIL and verdict.needs_remeasure


@pytest.mark.parametrize(
    "base_timing, now_timing", [(EVENTS, REPLAY), (REPLAY, EVENTS), (None, REPLAY)]
)
def test_a_baseline_timed_by_the_other_method_is_reported_not_compared(
    base_timing, now_timing
) -> None:
    # the event-timed launch-bound figure is 3x the replay one: comparing them would be a false FAIL
    verdict, rows = judge(
        gpu_record(eager=300e-6, compiled=150e-6, timing=base_timing), gpu_record(timing=now_timing)
    )
    for name in GPU_TIMES:
        assert rows[name].verdict is Verdict.NOT_GATED
        assert "re-record the baseline" in rows[name].note
    assert rows["gpu_eager_s"].note.startswith(
        "baseline by per-call events, now by CUDA-graph replay"
    ) == (now_timing == REPLAY)
    assert rows["speedup"].verdict is Verdict.PASS  # the CPU ratio is gated whatever the GPU method
    assert rows["gpu_peak_compiled_bytes"].verdict is Verdict.PASS  # so are exact metrics
    assert verdict.verdict is Verdict.PASS


def test_a_record_without_a_method_was_timed_by_events() -> None:
    old = gpu_record(timing=None)
    assert old.gpu_timing() == EVENTS
    assert CaseRecord({"speedup": metric(2.0)}, dict(COUNTERS)).gpu_timing() is None  # a CPU case
    _, rows = judge(old, gpu_record(timing=EVENTS, compiled=70e-6))
    assert (
        rows["gpu_compiled_s"].verdict is Verdict.FAIL
        and rows["gpu_compiled_s"].note == "per-call events"
    )


@pytest.mark.parametrize("base_bound, now_bound", [(False, True), (True, False), (True, True)])
def test_launch_bound_per_call_times_are_reported_not_gated(
    base_bound: bool, now_bound: bool
) -> None:
    # per-call times of a launch-bound case moved 2-4x between processes on an H100
    base = gpu_record(eager=46e-6, compiled=43e-6, timing=EVENTS, launch_bound=base_bound)
    now = gpu_record(eager=128e-6, compiled=151e-6, timing=EVENTS, launch_bound=now_bound)
    verdict, rows = judge(base, now)
    for name in GPU_TIMES:
        assert rows[name].verdict is Verdict.NOT_GATED
        assert rows[name].note.startswith("launch-bound")
    assert verdict.verdict is Verdict.PASS


def test_launch_bound_replay_times_are_still_gated() -> None:
    # replay does not wait on the CPU: stable (12.6-13.0 us) and gated
    base = gpu_record(eager=12.8e-6, compiled=12.9e-6, launch_bound=True)
    _, rows = judge(base, gpu_record(eager=12.8e-6, compiled=19e-6, launch_bound=True))
    assert rows["gpu_compiled_s"].verdict is Verdict.FAIL


def test_reduce_overhead_is_judged_by_the_interleaved_wall_time_ratio() -> None:
    base = gpu_record(
        eager=46e-6,
        compiled=43e-6,
        timing=EVENTS,
        launch_bound=None,
        cudagraphs=True,
        cpu_speedup=1.03,
    )
    unchanged = gpu_record(
        eager=128e-6,
        compiled=151e-6,
        timing=EVENTS,
        launch_bound=None,
        cudagraphs=True,
        cpu_speedup=1.0,
    )
    verdict, rows = judge(base, unchanged)
    for name in GPU_TIMES:
        assert rows[name].verdict is Verdict.NOT_GATED and "reduce-overhead" in rows[name].note
    assert rows["speedup"].verdict is Verdict.PASS
    assert verdict.verdict is Verdict.PASS
    slower = gpu_record(
        eager=46e-6,
        compiled=90e-6,
        timing=EVENTS,
        launch_bound=None,
        cudagraphs=True,
        cpu_speedup=0.5,
    )
    verdict, rows = judge(base, slower)
    assert (
        rows["speedup"].verdict is Verdict.FAIL
        and rows["gpu_compiled_s"].verdict is Verdict.NOT_GATED
    )
    assert verdict.verdict is Verdict.FAIL


def test_gpu_times_on_another_machine_are_reported() -> None:
    _, rows = judge(gpu_record(), gpu_record(compiled=70e-6), same_machine=False)
    assert rows["gpu_compiled_s"].verdict is Verdict.NOT_GATED and rows[
        "gpu_compiled_s"
    ].note.startswith("other machine")
    assert rows["gpu_speedup"].verdict is Verdict.FAIL  # a ratio: gated on any machine


# -- the GPU figures' arithmetic ---------------------------------------------------------


def gpu_pass(
    eager_call: float,
    compiled_call: float,
    eager_replay: float | None,
    compiled_replay: float | None,
    n: int = 10,
) -> GpuPass:
    """A pass whose samples sit +-1% around the given medians."""

    def samples(value: float | None) -> tuple[float, ...]:
        return () if value is None else tuple(value * (1 + 0.01 * math.sin(i)) for i in range(n))

    return GpuPass(
        samples(eager_call), samples(compiled_call), samples(eager_replay), samples(compiled_replay)
    )


def measured(*passes: GpuPass, cudagraphs: bool = False) -> GpuMeasurement:
    m = GpuMeasurement(inductor_cudagraphs=cudagraphs)
    for p in passes:
        m.method = m.method or (REPLAY if p.eager_replay and p.compiled_replay else EVENTS)
        m.passes.append(p)
    return m


def test_replay_method_gates_replay_and_reports_per_call_times() -> None:
    m = measured(gpu_pass(100e-6, 80e-6, 13e-6, 12.5e-6))
    timings = m.timings(0.95, {})
    assert list(timings.metrics) == [
        "gpu_eager_s",
        "gpu_compiled_s",
        "gpu_speedup",
        "gpu_eager_call_s",
        "gpu_compiled_call_s",
    ]
    assert timings.metrics["gpu_eager_s"].median == pytest.approx(13e-6, rel=0.02)
    assert timings.metrics["gpu_speedup"].median == pytest.approx(13 / 12.5, rel=0.02)
    assert timings.metrics["gpu_eager_call_s"].median == pytest.approx(100e-6, rel=0.02)
    assert m.settings() == {
        "gpu_timing": REPLAY,
        "gpu_launch_bound": True,
        "gpu_inductor_cudagraphs": False,
    }
    assert any(
        "launch-bound: per-call event time 7.7x the CUDA-graph replay time (eager)" in n
        for n in timings.notes
    )


def test_events_method_when_a_side_cannot_be_captured() -> None:
    m = measured(
        gpu_pass(1.7e-3, 0.23e-3, 1.67e-3, None)
    )  # bandwidth-bound, compiled not capturable
    timings = m.timings(0.95, {})
    assert set(timings.metrics) == {"gpu_eager_s", "gpu_compiled_s", "gpu_speedup"}
    assert timings.metrics["gpu_compiled_s"].median == pytest.approx(0.23e-3, rel=0.02)
    assert m.settings()["gpu_timing"] == EVENTS and m.settings()["gpu_launch_bound"] is False
    assert not any("launch-bound" in n for n in timings.notes)


def test_launch_bound_unknown_when_nothing_could_be_captured() -> None:
    m = measured(gpu_pass(50e-6, 60e-6, None, None), cudagraphs=True)
    assert m.settings() == {
        "gpu_timing": EVENTS,
        "gpu_launch_bound": None,
        "gpu_inductor_cudagraphs": True,
    }
    assert any("unknown" in n for n in m.all_notes())


def test_launch_ratio_takes_the_larger_side_and_the_threshold() -> None:
    found = launch_ratio([gpu_pass(20e-6, 40e-6, 12e-6, 12.5e-6)])
    assert (
        found is not None
        and found.side == "compiled"
        and found.ratio == pytest.approx(3.2, rel=0.02)
    )
    assert found.launch_bound
    just_below = launch_ratio([gpu_pass(LAUNCH_BOUND_RATIO * 0.99e-3, 1e-3, 1e-3, 1e-3)])
    assert just_below is not None and not just_below.launch_bound
    assert launch_ratio([gpu_pass(1e-3, 1e-3, None, None)]) is None


def test_passes_pool_and_their_spread_is_kept_as_noise() -> None:
    # five passes whose replay medians move +-5%: the noise widens the pooled interval
    passes = [
        gpu_pass(100e-6, 80e-6, 13e-6 * f, 12.5e-6 * f) for f in (0.95, 1.0, 1.05, 0.97, 1.03)
    ]
    m = measured(*passes)
    noise = m.noise()
    assert set(noise) == {
        "gpu_eager_s",
        "gpu_compiled_s",
        "gpu_speedup",
        "gpu_eager_call_s",
        "gpu_compiled_call_s",
    }
    assert noise["gpu_eager_s"] == pytest.approx(0.04, rel=0.25)
    assert noise["gpu_speedup"] < 0.01  # both sides moved together: the ratio did not
    narrow, wide = m.timings(0.95, {}), m.timings(0.95, noise)
    assert narrow.metrics["gpu_eager_s"].n == 50
    low, high = wide.metrics["gpu_eager_s"].ci_low, wide.metrics["gpu_eager_s"].ci_high
    assert math.log(high / low) / 2 == pytest.approx(
        1.96 * noise["gpu_eager_s"] / math.sqrt(5), rel=0.05
    )
    assert high - low > narrow.metrics["gpu_eager_s"].ci_high - narrow.metrics["gpu_eager_s"].ci_low
    assert measured(*passes[:2]).noise() == {}  # fewer than 3 passes: no estimate


def test_a_pass_that_lost_its_replay_pools_only_what_it_has() -> None:
    m = measured(gpu_pass(100e-6, 80e-6, 13e-6, 12.5e-6), gpu_pass(100e-6, 80e-6, None, None))
    timings = m.timings(0.95, {})
    assert timings.metrics["gpu_eager_s"].n == 10 and timings.metrics["gpu_eager_call_s"].n == 20


def test_peak_bytes_are_exact_and_whole() -> None:
    m = measured(gpu_pass(1e-3, 1e-3, None, None))
    m.peaks = {"gpu_peak_eager_bytes": 2048, "gpu_peak_compiled_bytes": 0}
    timings = m.timings(0.95, {})
    assert timings.metrics["gpu_peak_compiled_bytes"] == Summary.exact(0)
    assert timings.metrics["gpu_peak_eager_bytes"].to_json()["median"] == 2048


@pytest.mark.parametrize(
    "mode, options, expected",
    [
        ("reduce-overhead", None, True),
        ("max-autotune", None, True),
        ("max-autotune-no-cudagraphs", None, False),
        ("default", None, False),
        ("reduce-overhead", {"triton.cudagraphs": False}, False),
        ("default", {"triton.cudagraphs": True}, True),
    ],
)
def test_inductor_cudagraphs_from_mode_and_options(
    mode: str, options: dict | None, expected: bool
) -> None:
    assert inductor_cudagraphs(mode, options) is expected


def test_a_gpu_pass_that_cannot_run_leaves_a_note_not_an_exception() -> None:
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("checks the failure path: needs a machine where CUDA calls fail")
    m = GpuMeasurement()
    m.add_pass(lambda: None, lambda: None, "", 0.95)
    m.add_pass(lambda: None, lambda: None, "", 0.95)  # stopped: no second note
    assert m.broken and m.passes == []
    assert len(m.notes) == 1 and m.notes[0].startswith("gpu: measuring stopped after 0 pass(es): ")
    assert m.timings(0.95, {}).metrics == {}
