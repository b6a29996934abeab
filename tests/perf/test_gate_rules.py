"""The gate's rules on synthetic numbers: no pytest run, no torch, no files."""

from __future__ import annotations

import math
import random
from collections import Counter

import pytest

from pytest_torchcompile.perf.gate import Baseline, Gate, GateSettings, Verdict, decide, run_fails
from pytest_torchcompile.perf.record import CaseRecord
from pytest_torchcompile.perf.spec import BenchmarkSpec
from pytest_torchcompile.perf.stats import (
    Summary,
    batch_spread,
    median_ci,
    pass_noise,
    summarize,
    widen,
)
from pytest_torchcompile.snapshot.spec import SpecError

COUNTERS = {"graph_count": 1, "graph_break_count": 0, "recompile_count": 0, "kernel_count": 1}


def metric(median: float, spread: float = 0.02, n: int = 100) -> Summary:
    """A summary whose interval is +-`spread` (relative) around `median`."""
    return Summary(
        median,
        median * 0.9,
        median * 0.97,
        median * 1.03,
        median * (1 - spread),
        median * (1 + spread),
        n,
    )


def record(
    speedup: float = 3.0,
    spread: float = 0.02,
    counters: dict[str, int] | None = None,
    **extra: Summary,
) -> CaseRecord:
    metrics = {
        "speedup": metric(speedup, spread),
        "eager_s": metric(3e-4),
        "compiled_s": metric(1e-4),
        "compile_s": Summary.exact(2.0),
    }
    metrics.update(extra)
    return CaseRecord(metrics, counters or dict(COUNTERS))


def gate(base: CaseRecord | None, same_machine: bool = True, **settings: object) -> Gate:
    baseline = None if base is None else Baseline(base, same_machine, "other-machine.json")
    return Gate(GateSettings(**settings), lambda case: baseline)


def rows_by_metric(verdict) -> dict[str, object]:
    return {row.metric.split(" ")[0]: row for row in verdict.rows}


@pytest.mark.parametrize(
    "ci, higher, expected",
    [
        ((-0.03, 0.03), True, Verdict.PASS),
        ((-0.09, -0.01), True, Verdict.PASS),  # the whole interval better than a 10% regression
        ((-0.15, -0.01), True, Verdict.INCONCLUSIVE),  # within 10%, but 15% is not ruled out
        ((-0.25, -0.11), True, Verdict.FAIL),  # the whole interval past the threshold
        ((-0.25, -0.05), True, Verdict.INCONCLUSIVE),  # past it, but 5% is not ruled out
        ((-0.45, 0.10), True, Verdict.INCONCLUSIVE),  # too noisy to tell
        ((0.40, 0.60), True, Verdict.PASS),  # faster is never a regression
        ((0.15, 0.25), False, Verdict.FAIL),  # a time 15-25% longer
        ((0.05, 0.19), False, Verdict.INCONCLUSIVE),  # a time 5-19% longer
        ((-0.25, -0.15), False, Verdict.PASS),  # a time 20% shorter
    ],
)
def test_decide(ci: tuple[float, float], higher: bool, expected: Verdict) -> None:
    assert decide(ci, higher, threshold=0.10) is expected


def test_an_interval_reaching_past_the_threshold_is_never_a_pass() -> None:
    # a vision team's compiled-only slowdown, timed directly at about -17% in speedup:
    # the gate measured 0.626x -> 0.536x, -14.4% [-22.8%, -5.1%], and called it PASS
    base, now = record(0.626, spread=0.073), record(0.536, spread=0.073)
    row = rows_by_metric(gate(base, threshold=0.15).judge("t", now))["speedup"]
    assert row.change == pytest.approx(-0.144, abs=0.001)
    assert row.ci == pytest.approx((-0.228, -0.050), abs=0.001)
    assert row.verdict is Verdict.INCONCLUSIVE
    assert row.note == "possibly slower: -14%, interval -23% to -5%: re-run or record more rounds"
    assert not run_fails([gate(base).judge("t", now)], GateSettings())  # it asks, it does not fail
    assert run_fails([gate(base).judge("t", now)], GateSettings(strict=True))


def simulated(ratio: float, rng: random.Random, rounds: int = 60, noise: float = 0.08) -> Summary:
    """A speedup measured in `rounds` rounds of lognormal noise around `ratio`, summarised as
    the plugin summarises one (median, order-statistic and batch-means interval)."""
    return summarize([ratio * math.exp(rng.gauss(0.0, noise)) for _ in range(rounds)], 0.95)


def test_a_slowdown_past_the_threshold_almost_never_passes_and_unchanged_code_never_fails() -> None:
    """Many simulated gates: a true -17% slowdown (threshold 15%) PASSes only when the
    interval misses the truth (at most the interval's 2.5% tail), unchanged code never FAILs."""
    rng = random.Random(17)
    base = record(2.0)
    verdicts = {"slow": [], "same": []}
    for _ in range(400):
        base_speedup = simulated(2.0, rng)
        baseline = CaseRecord({**base.metrics, "speedup": base_speedup}, dict(COUNTERS))
        for kind, ratio in (("slow", 2.0 * 0.83), ("same", 2.0)):
            now = CaseRecord({**base.metrics, "speedup": simulated(ratio, rng)}, dict(COUNTERS))
            verdicts[kind].append(gate(baseline).judge("t", now).verdict)
    slow, same = (Counter(v) for v in verdicts.values())
    assert slow[Verdict.PASS] <= 0.025 * 400, slow
    assert slow[Verdict.FAIL] > 0 and slow[Verdict.INCONCLUSIVE] > 0, slow
    assert same[Verdict.FAIL] == 0, same
    assert same[Verdict.PASS] >= 0.9 * 400, same


def test_unchanged_passes_and_needs_no_remeasure() -> None:
    verdict = gate(record()).judge("t::case_0", record(speedup=2.97))
    assert verdict.verdict is Verdict.PASS
    assert not verdict.needs_remeasure
    rows = rows_by_metric(verdict)
    assert rows["speedup"].verdict is Verdict.PASS
    assert rows["counters"].verdict is Verdict.PASS
    assert rows["compile_s"].verdict is Verdict.NOT_GATED and rows["compile_s"].note == "reported"


def test_regression_beyond_threshold_fails_and_asks_for_a_remeasure() -> None:
    verdict = gate(record(3.0)).judge("t::case_0", record(2.1))
    row = rows_by_metric(verdict)["speedup"]
    assert row.verdict is Verdict.FAIL
    assert math.isclose(row.change, -0.3)
    assert row.ci[0] < row.change < row.ci[1] < 0
    assert verdict.needs_remeasure


def test_threshold_is_the_effect_size() -> None:
    # -20% [-22%, -18%]: past 15% wholly, within 25% wholly, across 20%
    assert gate(record(3.0)).judge("t", record(2.4)).verdict is Verdict.FAIL
    assert gate(record(3.0), threshold=0.25).judge("t", record(2.4)).verdict is Verdict.PASS
    assert gate(record(3.0), threshold=0.2).judge("t", record(2.4)).verdict is Verdict.INCONCLUSIVE


def test_noisy_measurement_is_inconclusive_not_fail() -> None:
    verdict = gate(record(3.0, spread=0.02)).judge("t", record(2.55, spread=0.30))
    assert verdict.verdict is Verdict.INCONCLUSIVE
    assert verdict.needs_remeasure


def test_counters_are_exact_and_name_what_moved() -> None:
    now = record(
        counters={"graph_count": 2, "graph_break_count": 1, "recompile_count": 0, "kernel_count": 2}
    )
    verdict = gate(record()).judge("t", now)
    row = rows_by_metric(verdict)["counters"]
    assert row.verdict is Verdict.FAIL
    assert row.baseline == "1/0/0/1" and row.now == "2/1/0/2"
    assert row.note == "graphs +1, graph breaks +1, kernels +1"
    assert not verdict.needs_remeasure  # deterministic: measuring again cannot change it


def test_missing_baseline_is_inconclusive_and_fails_only_when_strict() -> None:
    verdict = gate(None).judge("t", record())
    assert verdict.verdict is Verdict.INCONCLUSIVE
    assert "pytest --torchcompile-perf-update-baseline" in verdict.rows[0].note
    assert not verdict.needs_remeasure
    assert not run_fails([verdict], GateSettings())
    assert run_fails([verdict], GateSettings(strict=True))


def test_absolute_times_gated_only_on_the_baselines_machine() -> None:
    base = record(gpu_compiled_s=metric(1e-3))
    slower = record(gpu_compiled_s=metric(2e-3))
    here = rows_by_metric(gate(base, same_machine=True).judge("t", slower))
    there = rows_by_metric(gate(base, same_machine=False).judge("t", slower))
    assert here["gpu_compiled_s"].verdict is Verdict.FAIL
    assert there["gpu_compiled_s"].verdict is Verdict.NOT_GATED
    assert there["gpu_compiled_s"].note == "other machine (other-machine.json)"
    assert there["speedup"].verdict is Verdict.PASS  # ratios are gated whatever the machine


def test_cpu_wall_times_gated_only_when_asked() -> None:
    slower = record(compiled_s=metric(2e-4))
    assert (
        rows_by_metric(gate(record()).judge("t", slower))["compiled_s"].verdict is Verdict.NOT_GATED
    )
    assert (
        rows_by_metric(gate(record(), gate_cpu_times=True).judge("t", slower))["compiled_s"].verdict
        is Verdict.FAIL
    )
    assert (
        rows_by_metric(gate(record(), False, gate_cpu_times=True).judge("t", slower))[
            "compiled_s"
        ].verdict
        is Verdict.NOT_GATED
    )


def test_run_fails_on_any_fail() -> None:
    passing = gate(record()).judge("a", record())
    failing = gate(record()).judge("b", record(1.0))
    assert not run_fails([passing], GateSettings())
    assert run_fails([passing, failing], GateSettings())


@pytest.mark.parametrize(
    "settings, message",
    [
        ({"threshold": 10}, "threshold=10 must be a number above 0 and below 1"),
        ({"threshold": 0}, "threshold=0 must be"),
        ({"confidence": 1.0}, "confidence=1.0 must be a number above 0.5 and below 1"),
        ({"threshold": True}, "threshold=True must be"),
    ],
)
def test_gate_settings_name_the_bad_value(settings: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        GateSettings(**settings)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (
            {"treshold": 0.1},
            "compile_benchmark got unknown keyword 'treshold'; allowed keywords: backend, mode, dynamic, fullgraph, options, threshold",
        ),
        ({"threshold": 10}, "compile_benchmark: threshold=10 must be a number above 0 and below 1"),
        ({"max_time": -1}, "compile_benchmark: max_time=-1 must be a number above 0"),
        ({"mode": "fastest"}, "compile_benchmark(mode='fastest') is not allowed"),
        ({"fullgraph": "yes"}, "compile_benchmark(fullgraph='yes') is not allowed"),
    ],
)
def test_benchmark_marker_errors_name_the_keyword(kwargs: dict, message: str) -> None:
    with pytest.raises(SpecError) as info:
        BenchmarkSpec.from_marker((), kwargs)
    assert message in str(info.value)


def test_median_interval_covers_the_median_as_often_as_it_says() -> None:
    rng = random.Random(1)
    covered = 0
    for _ in range(400):
        low, high = median_ci(sorted(rng.gauss(0.0, 1.0) for _ in range(50)), 0.95)
        covered += low <= 0.0 <= high
    assert 0.92 <= covered / 400 <= 0.99


def test_batch_means_widen_the_interval_when_rounds_are_correlated() -> None:
    rng = random.Random(2)
    independent = [math.exp(rng.gauss(0.0, 0.05)) for _ in range(400)]
    # a slow drift: each stretch of 40 rounds shares one random offset
    drifting = [
        math.exp(rng.gauss(0.0, 0.05) + offset)
        for offset in (rng.gauss(0.0, 0.05) for _ in range(10))
        for _ in range(40)
    ]
    assert batch_spread(drifting, 0.95) > 2 * batch_spread(independent, 0.95)
    wide, narrow = summarize(drifting, 0.95), summarize(independent, 0.95)
    assert wide.ci_high / wide.ci_low > narrow.ci_high / narrow.ci_low
    assert batch_spread([1.0] * 10, 0.95) is None  # too few rounds for batches


def test_summary_fields_and_rounding() -> None:
    s = summarize([5.0, 1.0, 3.0, 2.0, 4.0], 0.95)
    assert (s.median, s.min, s.q1, s.q3, s.n) == (3.0, 1.0, 2.0, 4.0, 5)
    assert s.iqr == 2.0
    assert Summary.from_json(metric(1.234567891).to_json()).median == 1.2346


def test_noise_between_passes_sets_the_least_width_of_an_interval() -> None:
    assert pass_noise([[1.0, 1.1], [1.0]]) is None  # fewer than 3 passes
    noise = pass_noise([[1.0, 1.0], [1.1, 1.1], [0.9, 0.9]])
    assert noise == pytest.approx(0.1, rel=0.1)
    narrow = Summary(2.0, 1.0, 1.9, 2.1, 1.99, 2.01, 100)
    wide = widen(narrow, noise, 0.95)
    assert wide.ci_low == pytest.approx(2.0 * math.exp(-1.96 * noise), rel=1e-3)
    assert wide.median == narrow.median and widen(wide, 0.001, 0.95) == wide  # never narrows


def exact(value: float) -> Summary:
    return Summary.exact(value)


@pytest.mark.parametrize(
    "base, now, verdict, note",
    [
        (0, 0, Verdict.PASS, "exact"),  # a zero peak: no [-inf, +inf], no INCONCLUSIVE
        (2048, 2048, Verdict.PASS, "exact"),
        (67108864, 67108864, Verdict.PASS, "exact"),
        (67108864, 67110912, Verdict.FAIL, "+2,048 bytes"),  # 0.003% more: exact means exact
        (2048, 0, Verdict.FAIL, "-2,048 bytes"),  # less is a change too, like a counter
        (0, 512, Verdict.FAIL, "+512 bytes"),
        (67109000.0, 67108864, Verdict.PASS, "exact"),  # a baseline that kept 5 significant digits
        (67109000.0, 67110912, Verdict.FAIL, "+1,912 bytes"),
    ],
)
def test_exact_metrics_compare_exactly(
    base: float, now: float, verdict: Verdict, note: str
) -> None:
    case = gate(record(gpu_peak_compiled_bytes=exact(base))).judge(
        "t", record(gpu_peak_compiled_bytes=exact(now))
    )
    row = rows_by_metric(case)["gpu_peak_compiled_bytes"]
    assert (row.verdict, row.note) == (verdict, note)
    assert row.change is None and row.ci is None
    assert not case.needs_remeasure  # deterministic: measuring again cannot change it


def test_exact_metrics_pass_under_strict_and_are_not_gated_on_another_machine() -> None:
    zero = record(gpu_peak_compiled_bytes=exact(0))
    here = gate(zero, strict=True).judge("t", zero)
    assert here.verdict is Verdict.PASS and not run_fails([here], GateSettings(strict=True))
    row = rows_by_metric(
        gate(zero, same_machine=False).judge("t", record(gpu_peak_compiled_bytes=exact(4096)))
    )["gpu_peak_compiled_bytes"]
    assert row.verdict is Verdict.NOT_GATED and row.note.startswith("other machine")


def test_exact_rows_show_bytes_and_the_difference() -> None:
    from pytest_torchcompile.perf.report.table import gate_cells

    failing = rows_by_metric(
        gate(record(gpu_peak_eager_bytes=exact(2048))).judge(
            "t", record(gpu_peak_eager_bytes=exact(4096))
        )
    )
    cells = gate_cells(failing["gpu_peak_eager_bytes"])
    assert cells[2:] == ("2 KiB", "4 KiB", "+2,048 bytes", "", "FAIL")
    passing = rows_by_metric(
        gate(record(gpu_peak_eager_bytes=exact(0))).judge(
            "t", record(gpu_peak_eager_bytes=exact(0))
        )
    )
    assert gate_cells(passing["gpu_peak_eager_bytes"])[2:] == ("0 B", "0 B", "", "exact", "PASS")


def test_exact_bytes_stay_whole_in_baseline_files() -> None:
    data = record(gpu_peak_eager_bytes=exact(67108864)).to_json()
    assert data["metrics"]["gpu_peak_eager_bytes"]["median"] == 67108864
    assert isinstance(CaseRecord.from_json(data).metrics["gpu_peak_eager_bytes"].median, int)


def test_a_baseline_recorded_with_the_old_counter_names_still_reads() -> None:
    """Baselines written before the counters had one spelling (`graph_breaks`) gate the same."""
    old = CaseRecord.from_json(
        {"metrics": {}, "counters": {"graphs": 1, "graph_breaks": 0, "recompiles": 0, "kernels": 1}}
    )
    assert old.counters == COUNTERS
