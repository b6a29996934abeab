"""The perf gate: this run's records against the baseline, PASS, FAIL or INCONCLUSIVE.

Pure functions over plain data (`CaseRecord`, `GateSettings`): no pytest,
torch or files, so every verdict rule is unit-tested with synthetic numbers.

- counters and exact metrics (peak GPU bytes, on the baseline's machine)
  must equal the baseline's;
- a statistical metric compares medians: the change now/baseline - 1 with an
  interval combined in log space PASSes only when the interval excludes a
  regression past the threshold, FAILs when it lies wholly past it, and is
  INCONCLUSIVE between ("possibly slower: ..."): an interval that reaches
  past the threshold is no evidence that nothing regressed;
- ratios (measured interleaved) are gated on any machine, absolute times
  only on the baseline's machine (its device, CPU model and threads; torch,
  triton and CUDA may differ: an upgrade is what is judged), CPU wall times
  when asked too;
- GPU kernel times only against a baseline measured by the same method, and
  per-call times not when launch-bound or under Inductor's own CUDA graphs;
- a CPU-timed metric (`CPU_TIMES`) gated while this run or the baseline was
  timed under CPU contention is INCONCLUSIVE, with the reason ("CPU
  contention: ..."), whether it would FAIL or PASS: contention alone never
  fails a run, nor passes a slowdown it hid;
- a case with no baseline is INCONCLUSIVE; the run fails on any FAIL, and
  with `strict` on any INCONCLUSIVE;
- with `compile_time=True`: the compile facts of each side (cache outcomes,
  the warm contract, counts) and the cache keys are exact, on the baseline's
  machine (keys with the baseline's software too); compile CPU time is
  statistical, on that machine, with `compile_threshold`, and contention
  while either side compiled makes a FAIL INCONCLUSIVE like a timing's.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass, replace
from typing import Any

from .._torch.compile_cost import OUTER_PHASES
from ..common.counters import COUNTER_LABELS
from ..common.options import check_number
from .contention import Contended, MachineSpeed, contended, machine_changed
from .facts.block import CompileBlock, fact_rows, grown_phase
from .record import (
    COMPILE_TIMES,
    COUNTERS,
    CPU_TIMES,
    EVENTS,
    GPU_TIMES,
    METRICS,
    TIMING_LABELS,
    CaseRecord,
    Kind,
    MetricInfo,
)
from .stats import Summary, log_se, round_sig, z_value

COUNTER_METRIC = "counters"
ALL_METRICS = "(case)"
#: how the note of a row whose interval straddles the threshold ends (`straddling`).
RERUN = "re-run or record more rounds"
COMPILE_FACTS = "compile facts"
RECORD_BASELINE = "record one with pytest --torchcompile-perf-update-baseline"


class Verdict(str, enum.Enum):
    PASS = "PASS"
    FAIL = "FAIL"
    INCONCLUSIVE = "INCONCLUSIVE"
    NOT_GATED = "not gated"


@dataclass(frozen=True)
class GateSettings:
    """What counts as a regression: an effect size and a confidence.

    `threshold` is the smallest relative change that fails (0.15: a speedup
    15% lower, or a time 15% longer). Not lower by default: unchanged code
    measured in two processes on one CPU machine differed by up to 11%, a
    shift no interval measured inside one process covers. `confidence` is
    that of the intervals.
    `strict` also fails on INCONCLUSIVE (a missing baseline included).
    `gate_cpu_times` gates CPU wall times per call on the same machine too.
    `ignore_contention` judges as if the machine had been quiet (for a
    dedicated machine whose own signals the user distrusts).
    `compile_threshold` is the smallest growth of compile CPU time that
    fails (`compile_time=True`): 50% by default, because the same compile
    measured hours apart on the shared development machine moved from -9%
    to +58% (20 gated runs of unchanged code), far more than between the
    fresh processes of one run (5-16%); a compile that costs twice as much
    is +100%.
    """

    threshold: float = 0.15
    confidence: float = 0.95
    strict: bool = False
    gate_cpu_times: bool = False
    ignore_contention: bool = False
    compile_threshold: float = 0.5

    def __post_init__(self) -> None:
        check_number("threshold", self.threshold, 0.0, 1.0, "a fraction, e.g. 0.1 for 10%")
        check_number("confidence", self.confidence, 0.5, 1.0, "e.g. 0.95")
        check_number(
            "compile_threshold", self.compile_threshold, 0.0, 10.0, "a fraction, e.g. 0.25 for 25%"
        )


@dataclass(frozen=True)
class Baseline:
    """A case's baseline record, and whether it was measured on this machine.

    `same_machine` is the hardware (device, CPU model, threads): a baseline
    recorded here with another torch is this machine's, and `software` says
    what moved (`torch 2.13.0+cpu -> 2.15.0+cpu`): a torch upgrade is what
    the gate judges, not a reason to stop judging. `source` is its file's name.
    """

    record: CaseRecord
    same_machine: bool
    source: str
    software: str = ""


@dataclass(frozen=True)
class Row:
    """One line of the gate table; numbers stay numbers until formatting."""

    case: str
    metric: str
    unit: str
    baseline: float | str | None
    now: float | str | None
    change: float | None
    ci: tuple[float, float] | None
    verdict: Verdict
    note: str = ""

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["verdict"] = self.verdict.value
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Row:
        fields = dict(data)
        fields["verdict"] = Verdict(fields["verdict"])
        fields["ci"] = tuple(fields["ci"]) if fields.get("ci") is not None else None
        return cls(**fields)


@dataclass(frozen=True)
class CaseVerdict:
    """All rows of one case, whether it was re-measured before they stood, and the threshold it was judged by.

    `contention` is what was contended when the verdict was taken (empty
    when the gate was told to ignore it), `software` the baseline's software
    against this run's where they differ on this machine (`Baseline.software`).
    """

    case: str
    rows: tuple[Row, ...]
    remeasured: bool = False
    threshold: float | None = None
    contention: Contended = Contended()
    software: str = ""

    @property
    def undecided_for_contention(self) -> bool:
        """INCONCLUSIVE only in rows whose reason is CPU contention: a measurement on a quiet
        machine decides it, and these numbers must not become the baseline."""
        undecided = [row for row in self.rows if row.verdict is Verdict.INCONCLUSIVE]
        reason = self.contention.describe()
        return (
            self.verdict is Verdict.INCONCLUSIVE
            and bool(reason)
            and all(row.note == reason for row in undecided)
        )

    @property
    def verdict(self) -> Verdict:
        return worst(row.verdict for row in self.rows)

    @property
    def needs_remeasure(self) -> bool:
        """A statistical metric that did not PASS may be noise: measure again.
        (Counters and exact metrics are deterministic: measuring again cannot change them.)"""
        return bool(self.to_remeasure)

    @property
    def to_remeasure(self) -> frozenset[str]:
        """The statistical metrics that did not PASS against a baseline (not for too few runs)."""
        return frozenset(
            row.metric
            for row in self.rows
            if row.metric in METRICS
            and METRICS[row.metric].kind is not Kind.EXACT
            and row.verdict in (Verdict.FAIL, Verdict.INCONCLUSIVE)
            and row.baseline is not None
            and row.note != TOO_FEW_RUNS
        )


def worst(verdicts: Iterable[Verdict]) -> Verdict:
    """FAIL over INCONCLUSIVE over PASS; a case with nothing gated PASSes."""
    found = set(verdicts)
    for verdict in (Verdict.FAIL, Verdict.INCONCLUSIVE):
        if verdict in found:
            return verdict
    return Verdict.PASS


def run_fails(verdicts: Iterable[CaseVerdict], settings: GateSettings) -> bool:
    """The run fails on any FAIL; with `strict`, on any INCONCLUSIVE too."""
    failing = {Verdict.FAIL, Verdict.INCONCLUSIVE} if settings.strict else {Verdict.FAIL}
    return any(v.verdict in failing for v in verdicts)


@dataclass(frozen=True)
class Gate:
    """Settings plus a way to find a case's baseline; judges one case at a time."""

    settings: GateSettings
    lookup: Callable[[str], Baseline | None]

    def judge(self, case: str, record: CaseRecord, remeasured: bool = False) -> CaseVerdict:
        baseline = self.lookup(case)
        if baseline is None:
            missing = Row(
                case,
                ALL_METRICS,
                "",
                None,
                "measured",
                None,
                None,
                Verdict.INCONCLUSIVE,
                "no baseline: record one with pytest --torchcompile-perf-update-baseline",
            )
            return CaseVerdict(case, (missing,), remeasured, self.settings.threshold)
        rows = [counter_row(case, record.counters, baseline.record.counters)]
        rows += compile_rows(case, record.compile, baseline)
        for name in record.metrics:
            rows.append(metric_row(case, name, record, baseline, self.settings))
        found = contended(record.contention, baseline.record.contention, baseline.same_machine)
        if record.compile is not None and baseline.record.compile is not None:
            found = found.merged(
                contended(
                    record.compile.contention,
                    baseline.record.compile.contention,
                    baseline.same_machine,
                )
            )
        machine = None
        if record.compile is not None and baseline.record.compile is not None:
            machine = machine_changed(
                record.compile.contention,
                baseline.record.compile.contention,
                baseline.same_machine,
            )
        if self.settings.ignore_contention:
            found, machine = Contended(), None
        if found:
            rows = [under_contention(row, found.describe()) for row in rows]
        if machine is not None:
            judged = [at_machine_speed(row, machine) for row in rows]
            if judged != rows:
                found = found.merged(Contended((machine.describe(),)))
            rows = judged
        return CaseVerdict(
            case, tuple(rows), remeasured, self.settings.threshold, found, baseline.software
        )


def under_contention(
    row: Row, reason: str, metrics: tuple[str, ...] = CPU_TIMES + COMPILE_TIMES
) -> Row:
    """A CPU-timed figure measured under contention is INCONCLUSIVE, with the reason: the
    neighbours may have moved it either way, faking a regression or hiding one (a planted
    17% slowdown measured +1% [-14%, +19%] beside a machine waiting for a CPU 92% of the
    time, a PASS). The reason replaces "possibly slower" (the remedy is a quiet re-run);
    a figure not gated, counters and GPU figures are left as they are. Compile CPU time
    is CPU-timed too; `metrics` narrows the rows (a machine that compiles at another speed
    touches its compile times alone)."""
    if row.metric not in metrics or row.verdict is Verdict.NOT_GATED:
        return row
    if row.verdict in (Verdict.FAIL, Verdict.PASS):
        return replace(row, verdict=Verdict.INCONCLUSIVE, note=reason)
    if not row.note or row.note.endswith(RERUN):
        return replace(row, note=reason)
    return row


def at_machine_speed(row: Row, speed: MachineSpeed) -> Row:
    """A compile CPU time measured while the machine compiles at another speed than for the
    baseline: undecided only where that speed could have made the verdict. A slower machine
    inflates every compile, so a PASS stands and a FAIL or a "possibly slower" is INCONCLUSIVE
    (a quiet morning measured an unchanged compile +7.5% with the reference 1.27x slower: a
    PASS); a faster one deflates them, so a FAIL stands and a PASS is INCONCLUSIVE."""
    if row.metric not in COMPILE_TIMES or row.verdict is Verdict.NOT_GATED:
        return row
    if row.verdict is (Verdict.PASS if speed.slower else Verdict.FAIL):
        return row
    return under_contention(row, speed.describe(), COMPILE_TIMES)


def counter_row(case: str, now: Mapping[str, int], base: Mapping[str, int]) -> Row:
    """Counters must match exactly; the change names each one that moved."""
    names = [name for name in COUNTERS if name in now or name in base]
    moved = [
        f"{COUNTER_LABELS[name]} {now.get(name, 0) - base.get(name, 0):+d}"
        for name in names
        if now.get(name) != base.get(name)
    ]
    shown = (
        "/".join(str(now.get(name, "-")) for name in names),
        "/".join(str(base.get(name, "-")) for name in names),
    )
    verdict = Verdict.FAIL if moved else Verdict.PASS
    note = ", ".join(moved)
    return Row(
        case,
        f"{COUNTER_METRIC} ({'/'.join(COUNTER_LABELS[name] for name in names)})",
        "",
        shown[1],
        shown[0],
        None,
        None,
        verdict,
        note or "exact",
    )


def metric_row(
    case: str, name: str, record: CaseRecord, baseline: Baseline, settings: GateSettings
) -> Row:
    """Compare one metric of `record`, or say why it is only reported."""
    info = METRICS.get(name, MetricInfo(Kind.INFO, ""))
    now, base = record.metrics[name], baseline.record.metrics.get(name)
    if base is None:
        verdict = Verdict.INCONCLUSIVE if info.kind is Kind.RATIO else Verdict.NOT_GATED
        return Row(
            case, name, info.unit, None, now.median, None, None, verdict, "not in the baseline"
        )
    if info.kind is Kind.EXACT:
        return exact_row(case, name, info.unit, now.median, base.median, baseline)
    change, ci = relative_change(now, base, settings.confidence)
    reason = gpu_time_reason(record, baseline.record) if name in GPU_TIMES else ""
    reason = reason or _not_gated_reason(info.kind, baseline, settings)
    if reason:
        return Row(
            case, name, info.unit, base.median, now.median, change, ci, Verdict.NOT_GATED, reason
        )
    if info.kind is Kind.COMPILE:
        return compile_time_row(case, name, record, baseline, settings, change, ci)
    verdict = decide(ci, info.higher_is_better, settings.threshold)
    # a gated GPU time says how it was measured (in the confidence column)
    note = TIMING_LABELS.get(record.gpu_timing() or "", "") if name in GPU_TIMES else ""
    if verdict is Verdict.INCONCLUSIVE:
        note = "; ".join(p for p in (straddling(change, ci, info.higher_is_better), note) if p)
    return Row(case, name, info.unit, base.median, now.median, change, ci, verdict, note)


#: a compile CPU row with fewer than 2 runs on a side: no interval to judge with
TOO_FEW_RUNS = "too few runs for an interval (torchcompile_perf_compile_runs: 5 or more)"


def compile_time_row(
    case: str,
    name: str,
    record: CaseRecord,
    baseline: Baseline,
    settings: GateSettings,
    change: float,
    ci: tuple[float, float],
) -> Row:
    """Compile CPU time against the baseline's, by `compile_threshold`; a FAIL names the phase that grew most."""
    now, base = record.metrics[name], baseline.record.metrics[name]
    if min(now.n, base.n) < 2:
        verdict, note = Verdict.INCONCLUSIVE, TOO_FEW_RUNS
    else:
        verdict, note = decide(ci, False, settings.compile_threshold), ""
    if verdict is Verdict.INCONCLUSIVE and note != TOO_FEW_RUNS:  # why, and what to do
        what = "possibly slower" if change > 0 else "too noisy to rule out a slowdown"
        note = (
            f"{what}: {_percent(change)}, interval {_percent(ci[0])} to {_percent(ci[1])}: {RERUN}"
        )
    if verdict is Verdict.FAIL and record.compile and baseline.record.compile:
        side = name.split("_", 1)[0]
        grown = grown_phase(
            baseline.record.compile.side(side), record.compile.side(side), OUTER_PHASES
        )
        note = f"grew most: {grown}" if grown else ""
    return Row(case, name, "s", base.median, now.median, change, ci, verdict, note)


def compile_rows(case: str, now: CompileBlock | None, baseline: Baseline) -> list[Row]:
    """The exact rows of the fresh-process compiles (`facts.block.fact_rows`); none when this
    case did not compile in fresh processes, one INCONCLUSIVE when its baseline did not."""
    base = baseline.record.compile
    if now is None:
        return []
    if base is None:
        missing = f"not in the baseline: {RECORD_BASELINE}"
        return [
            Row(
                case, COMPILE_FACTS, "", None, "measured", None, None, Verdict.INCONCLUSIVE, missing
            )
        ]
    rows = []
    for found in fact_rows(base, now, baseline.same_machine, baseline.software, baseline.source):
        verdict = (
            Verdict.NOT_GATED if found.not_gated else Verdict.FAIL if found.moved else Verdict.PASS
        )
        note = found.not_gated or "; ".join(found.moved) or "exact"
        rows.append(
            Row(case, found.metric, "", found.baseline, found.now, None, None, verdict, note)
        )
    return rows


def gpu_time_reason(now: CaseRecord, base: CaseRecord) -> str:
    """Why a GPU kernel-time figure is not gated ('' when it is).

    A replay time and a per-call time measure different things, so a baseline
    made with one method is never compared with the other. Per-call event
    times of a launch-bound case (either record says so) or of Inductor's own
    CUDA graphs measure the CPU's launches, which move 2-4x between
    processes on an H100 (docs/gpu.md; the figures are in tests/data/h100_gate_samples.json).
    """
    now_method, base_method = now.gpu_timing(), base.gpu_timing()
    if now_method != base_method:
        shown = [TIMING_LABELS.get(m or "", str(m)) for m in (base_method, now_method)]
        return f"baseline by {shown[0]}, now by {shown[1]}: re-record the baseline"
    if now_method != EVENTS:
        return ""
    if now.settings.get("gpu_inductor_cudagraphs") or base.settings.get("gpu_inductor_cudagraphs"):
        return "Inductor's CUDA graphs (reduce-overhead): per-call GPU time; speedup is gated"
    if now.settings.get("gpu_launch_bound") or base.settings.get("gpu_launch_bound"):
        return "launch-bound: per-call GPU time measures the CPU's launches"
    return ""


def exact_row(case: str, name: str, unit: str, now: float, base: float, baseline: Baseline) -> Row:
    """An exact metric is equal or not, like a counter: the difference shows in the change column."""
    if not baseline.same_machine:
        return Row(
            case,
            name,
            unit,
            base,
            now,
            None,
            None,
            Verdict.NOT_GATED,
            f"other machine ({baseline.source})",
        )
    if same_exact(now, base):
        return Row(case, name, unit, base, now, None, None, Verdict.PASS, "exact")
    difference = now - base
    shown = f"{difference:+,.0f}" if float(difference).is_integer() else f"{difference:+g}"
    return Row(case, name, unit, base, now, None, None, Verdict.FAIL, f"{shown} {unit}".rstrip())


def same_exact(now: float, base: float) -> bool:
    """Equal; or, against a baseline written when exact figures were rounded to
    5 significant digits like timings (stored as a float: 67109000.0 for
    64 MiB), equal at that precision. New baselines store them whole (an int)."""
    return now == base or (isinstance(base, float) and round_sig(float(now)) == base)


def _not_gated_reason(kind: Kind, baseline: Baseline, settings: GateSettings) -> str:
    if kind is Kind.INFO:
        return "reported"
    if kind is Kind.RATIO:
        return ""
    if not baseline.same_machine:
        return f"other machine ({baseline.source})"
    if kind is Kind.WALL and not settings.gate_cpu_times:
        return "CPU wall time"
    return ""


def relative_change(
    now: Summary, base: Summary, confidence: float
) -> tuple[float, tuple[float, float]]:
    """now/base - 1 and its interval, both measurements' uncertainty combined."""
    if now.median <= 0 or base.median <= 0:
        return (math.inf if now.median > base.median else 0.0), (-math.inf, math.inf)
    log_ratio = math.log(now.median / base.median)
    spread = z_value(confidence) * math.hypot(log_se(now, confidence), log_se(base, confidence))
    return math.expm1(log_ratio), (math.expm1(log_ratio - spread), math.expm1(log_ratio + spread))


def decide(ci: tuple[float, float], higher_is_better: bool, threshold: float) -> Verdict:
    """The verdict on one metric from its change's interval against the threshold.

    PASS: the whole interval is better than a regression of `threshold` (the
    measurement excludes one). FAIL: the whole interval is worse than it.
    INCONCLUSIVE: the interval straddles it, whatever the estimate: a -14%
    measured as [-23%, -5%] under a 15% threshold may be a 17% regression.
    """
    worse_end, better_end = _gain_ends(ci, higher_is_better)
    if worse_end > -threshold:
        return Verdict.PASS
    if better_end < -threshold:
        return Verdict.FAIL
    return Verdict.INCONCLUSIVE


def _gain_ends(ci: tuple[float, float], higher_is_better: bool) -> tuple[float, float]:
    """The interval's ends as gains (positive = better): the worse end first."""
    return (ci[0], ci[1]) if higher_is_better else (-ci[1], -ci[0])


def straddling(change: float, ci: tuple[float, float], higher_is_better: bool) -> str:
    """Why an interval that reaches past the threshold is INCONCLUSIVE, and what to do:
    `possibly slower: -14%, interval -23% to -5%: re-run or record more rounds`."""
    worse_end, better_end = _gain_ends(ci, higher_is_better)
    gain = change if higher_is_better else -change
    what = "possibly slower" if gain < 0 else "too noisy to rule out a slowdown"
    return (
        f"{what}: {_percent(gain)}, interval {_percent(worse_end)} to {_percent(better_end)}: "
        f"{RERUN}"
    )


def _percent(value: float) -> str:
    # rounded first: a change that rounds to nothing reads +0%, never -0%
    return (
        f"{round(value * 100):+d}%" if math.isfinite(value) else ("+inf" if value > 0 else "-inf")
    )
