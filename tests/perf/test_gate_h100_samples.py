"""The gate's GPU rules on the numbers recorded on an H100 (torch 2.11, triton 3.6), on CPU.

`tests/data/h100_gate_samples.json` is built from ../shared/samples/h100-torch2.11
by `tests/data/build_h100_gate_samples.py` (see there). It holds the baseline
run's records of three cases (a bandwidth-bound chain, a bf16 MLP, a
launch-bound stack of Linears under mode="reduce-overhead"), the gate table
of an unchanged run that FAILED on the launch-bound case (aa2), and the
timing probe (5 processes, per-call events vs CUDA-graph replay).

The aa2 run's records were not kept, only its table, so its "now" records
are rebuilt from the table: each median as printed, each interval the one
that, combined with the baseline's as the gate combines them, gives the
printed interval (checked below against the table).
"""

from __future__ import annotations

import json
import math
import statistics
from typing import Any

import pytest

from pytest_torchcompile.perf.gate import (
    Baseline,
    CaseVerdict,
    Gate,
    GateSettings,
    Verdict,
    run_fails,
)
from pytest_torchcompile.perf.gpu import GpuMeasurement, GpuPass, inductor_cudagraphs, launch_ratio
from pytest_torchcompile.perf.record import COUNTERS, EVENTS, GPU_TIMES, CaseRecord
from pytest_torchcompile.perf.stats import Summary, log_se, z_value
from tests.conftest import DATA

DATA = json.loads((DATA / "h100_gate_samples.json").read_text())
CONFIDENCE = 0.95
CHAIN, LAUNCH, MLP = (
    f"cases_bench.py::test_{name}_cuda::case_0" for name in ("chain", "launch_bound", "mlp_bf16")
)
EXACT_METRICS = ("gpu_peak_eager_bytes", "gpu_peak_compiled_bytes")


def baseline(case: str) -> CaseRecord:
    return CaseRecord.from_json(DATA["baseline"][case])


def rebuilt_summary(row: dict[str, Any], base: Summary) -> Summary:
    """The aa2 measurement of one metric: the printed median, and the interval
    whose log half-width w satisfies hypot(w, baseline's) = the printed one's."""
    now = row["now"]
    low, high = row["ci"]
    if not (math.isfinite(low) and math.isfinite(high)) or now <= 0:
        return Summary.exact(now)
    z = z_value(CONFIDENCE)
    combined = (math.log1p(high) - math.log1p(low)) / (2 * z)
    own = math.sqrt(max(combined**2 - log_se(base, CONFIDENCE) ** 2, 0.0))
    return Summary(now, now, now, now, now * math.exp(-z * own), now * math.exp(z * own), 1000)


def aa2_record(case: str, settings: dict[str, Any] | None = None) -> CaseRecord:
    """The aa2 run's record of `case` rebuilt from its table row by row."""
    rows, base = DATA["aa2_false_fail"][case], baseline(case)
    metrics: dict[str, Summary] = {}
    for name, row in rows.items():
        if name == "counters":
            continue
        if name in EXACT_METRICS:
            metrics[name] = Summary.exact(int(row["now"]))
        else:
            metrics[name] = rebuilt_summary(row, base.metrics[name])
    counters = dict(zip(COUNTERS, map(int, rows["counters"]["now"].split("/"))))
    return CaseRecord(metrics, counters, {**base.settings, **(settings or {})})


def judge(case: str, now: CaseRecord, **settings: Any) -> CaseVerdict:
    found = Baseline(baseline(case), True, "nvidia-h100-80gb-hbm3-1t-0b125691.json")
    return Gate(GateSettings(**settings), lambda _: found).judge(case, now, remeasured=True)


def rows(verdict: CaseVerdict) -> dict[str, Any]:
    return {row.metric.split(" ")[0]: row for row in verdict.rows}


def probe_median(model: str, variant: str, method: str) -> float:
    return statistics.median(DATA["probe"][model][variant][method])


def new_settings(case: str) -> dict[str, Any]:
    """What the GPU measurement now records for the aa2 run, from the recorded figures:
    the launch ratio from the per-call time against a replay time of the same side
    (the compiled replay the plugin measured as `cudagraph_s`; for the
    reduce-overhead case, whose compiled call cannot be captured, the eager
    replay of the same model in the probe)."""
    rows_ = DATA["aa2_false_fail"][case]
    mode = DATA["baseline"][case]["settings"]["mode"]
    if "cudagraph_s" in rows_:
        one = GpuPass(
            (rows_["gpu_eager_s"]["now"],),
            (rows_["gpu_compiled_s"]["now"],),
            (),
            (rows_["cudagraph_s"]["now"],),
        )
    else:
        eager_replay = probe_median("launch_bound", "eager", "do_bench_cudagraph")
        one = GpuPass(
            (rows_["gpu_eager_s"]["now"],), (rows_["gpu_compiled_s"]["now"],), (eager_replay,), ()
        )
    measurement = GpuMeasurement(
        inductor_cudagraphs=inductor_cudagraphs(mode, None), passes=[one], method=EVENTS
    )
    return measurement.settings()


def test_rebuilt_records_reproduce_the_printed_table() -> None:
    for case in (CHAIN, LAUNCH, MLP):
        verdict = rows(judge(case, aa2_record(case)))
        for name, printed in DATA["aa2_false_fail"][case].items():
            if (
                printed["ci"] is None
                or name in EXACT_METRICS
                or not all(map(math.isfinite, printed["ci"]))
            ):
                continue
            row = verdict[name]
            assert row.change == pytest.approx(printed["change"], abs=0.0015), (case, name)
            assert row.ci[0] == pytest.approx(printed["ci"][0], abs=0.0015, rel=0.01), (case, name)
            assert row.ci[1] == pytest.approx(printed["ci"][1], abs=0.0015, rel=0.01), (case, name)


def test_without_knowing_how_they_were_timed_the_launch_bound_figures_do_not_pass() -> None:
    # the false FAIL of gate-aa2-false-fail.txt, reproduced: events, no launch-bound flag. The
    # times still FAIL; gpu_speedup's -20% [-26%, -14%] reaches inside the 15% threshold, so
    # today's rule calls it INCONCLUSIVE (then: FAIL, beyond the threshold and excluding 0)
    verdict = rows(judge(LAUNCH, aa2_record(LAUNCH)))
    for name in GPU_TIMES:
        assert DATA["aa2_false_fail"][LAUNCH][name]["verdict"] == "FAIL (re-measured)"
    assert verdict["gpu_eager_s"].verdict is Verdict.FAIL
    assert verdict["gpu_compiled_s"].verdict is Verdict.FAIL
    assert verdict["gpu_speedup"].verdict is Verdict.INCONCLUSIVE


def test_the_aa2_false_fail_is_not_gated_now() -> None:
    settings = new_settings(LAUNCH)
    assert settings == {
        "gpu_timing": EVENTS,
        "gpu_launch_bound": True,
        "gpu_inductor_cudagraphs": True,
    }
    verdict = judge(LAUNCH, aa2_record(LAUNCH, settings))
    by_metric = rows(verdict)
    for name in GPU_TIMES:
        assert by_metric[name].verdict is Verdict.NOT_GATED, name
        assert "reduce-overhead" in by_metric[name].note
    assert (
        by_metric["speedup"].verdict is Verdict.PASS
    )  # -4.5%: what reduce-overhead buys, judged per call
    assert by_metric["gpu_peak_compiled_bytes"].verdict is Verdict.PASS  # 0 == 0
    assert by_metric["gpu_peak_eager_bytes"].verdict is Verdict.PASS
    assert verdict.verdict is Verdict.PASS


def test_launch_bound_alone_also_takes_the_per_call_times_out_of_the_gate() -> None:
    # the same numbers with default-mode compile: launch-bound, so reported
    settings = {**new_settings(LAUNCH), "gpu_inductor_cudagraphs": False}
    by_metric = rows(judge(LAUNCH, aa2_record(LAUNCH, settings)))
    for name in GPU_TIMES:
        assert by_metric[name].verdict is Verdict.NOT_GATED and by_metric[name].note.startswith(
            "launch-bound"
        ), name


def test_the_whole_unchanged_run_fails_nothing_and_passes_what_it_measured_tightly() -> None:
    verdicts = [
        judge(case, aa2_record(case, new_settings(case)), strict=True)
        for case in (CHAIN, LAUNCH, MLP)
    ]
    assert [v.verdict for v in verdicts] == [Verdict.INCONCLUSIVE, Verdict.PASS, Verdict.PASS]
    assert not run_fails(verdicts, GateSettings())
    # the chain's wall-clock speedup, +7% [-16%, +37%] (the CPU's launches, not its kernels, in
    # the interval), cannot rule out a 15% slowdown; every GPU figure of it PASSes
    chain = rows(verdicts[0])
    assert chain["speedup"].verdict is Verdict.INCONCLUSIVE
    assert chain["speedup"].note.startswith("too noisy to rule out a slowdown: +7%, interval -16%")
    assert all(chain[name].verdict is Verdict.PASS for name in GPU_TIMES)
    assert (
        new_settings(CHAIN)["gpu_launch_bound"] is False
        and new_settings(MLP)["gpu_launch_bound"] is False
    )


def test_zero_peak_is_a_pass_not_inconclusive() -> None:
    assert (
        DATA["aa2_false_fail"][LAUNCH]["gpu_peak_compiled_bytes"]["verdict"]
        == "INCONCLUSIVE (re-measured)"
    )
    row = rows(judge(LAUNCH, aa2_record(LAUNCH)))["gpu_peak_compiled_bytes"]
    assert (row.baseline, row.now, row.verdict) == (0.0, 0, Verdict.PASS)


def test_baseline_bytes_rounded_to_5_digits_still_match_the_exact_peak() -> None:
    # the baseline file kept 67109000.0 for 64 MiB; the run measured 67108864
    assert DATA["baseline"][CHAIN]["metrics"]["gpu_peak_compiled_bytes"]["median"] == 67109000.0
    by_metric = rows(judge(CHAIN, aa2_record(CHAIN)))
    assert by_metric["gpu_peak_compiled_bytes"].now == 67108864
    assert by_metric["gpu_peak_compiled_bytes"].verdict is Verdict.PASS


def planted_break(record: CaseRecord, gpu_speedup_change: float = -0.869) -> CaseRecord:
    """The chain with a graph break, as measured on the H100: gpu_speedup -86.9%
    (the compiled side 1/(1 - 0.869) times slower), graphs +1, graph breaks +1, kernels +1."""
    factor = 1 + gpu_speedup_change
    metrics = dict(record.metrics)
    for name, scale in (("gpu_speedup", factor), ("gpu_compiled_s", 1 / factor)):
        s = metrics[name]
        metrics[name] = Summary(
            *(v * scale for v in (s.median, s.min, s.q1, s.q3, s.ci_low, s.ci_high)), s.n
        )
    counters = {**record.counters, "graph_count": 2, "graph_break_count": 1, "kernel_count": 2}
    return CaseRecord(metrics, counters, record.settings)


def test_a_planted_graph_break_still_fails() -> None:
    verdict = judge(CHAIN, planted_break(aa2_record(CHAIN, new_settings(CHAIN))))
    by_metric = rows(verdict)
    assert verdict.verdict is Verdict.FAIL
    assert (
        by_metric["counters"].verdict is Verdict.FAIL
        and by_metric["counters"].note == "graphs +1, graph breaks +1, kernels +1"
    )
    assert by_metric["gpu_speedup"].verdict is Verdict.FAIL and by_metric[
        "gpu_speedup"
    ].change == pytest.approx(-0.869, abs=0.005)
    assert by_metric["gpu_compiled_s"].verdict is Verdict.FAIL


def test_probe_launch_ratios_sit_on_either_side_of_the_threshold() -> None:
    """In every one of the 5 processes: the launch-bound model's sides are
    launch-bound, the bandwidth-bound model's are not (LAUNCH_BOUND_RATIO)."""
    for model, expected in (("launch_bound", True), ("bandwidth_bound", False)):
        for side in ("eager", "compiled"):
            figures = DATA["probe"][model][side]
            for call, replay in zip(figures["flushed_events"], figures["do_bench_cudagraph"]):
                found = launch_ratio([GpuPass((call,), (call,), (replay,), ())])
                assert found is not None and found.launch_bound is expected, (
                    model,
                    side,
                    call,
                    replay,
                )


def test_probe_replay_is_stable_where_per_call_times_are_not() -> None:
    """Why the gate prefers replay: between processes per-call times of the
    launch-bound model spread over 2x, replay under 3%."""

    def spread(values: list[float]) -> float:
        return max(values) / min(values)

    for side in ("eager", "compiled"):
        figures = DATA["probe"]["launch_bound"][side]
        assert spread(figures["flushed_events"]) > 2.0
        assert spread(figures["do_bench_cudagraph"]) < 1.03
    assert spread(DATA["probe"]["launch_bound"]["reduce_overhead"]["flushed_events"]) > 2.0
