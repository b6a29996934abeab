"""The perf wing's tables: one set of cells per table, as aligned text or Markdown.

The terminal shows aligned text, `$GITHUB_STEP_SUMMARY` gets Markdown, and a
gated case's own test shows its verdict line. Pure functions over plain data.
"""

from __future__ import annotations

import math
import shlex
from collections.abc import Sequence

from ...common.terminal import align
from ..facts.block import FACT_METRICS
from ..gate import TOO_FEW_RUNS, CaseVerdict, GateSettings, Row, Verdict, run_fails, worst
from ..record import MeasuredCase, passes_left_out

UPDATE_FLAG = "--torchcompile-perf-update-baseline"
GATE_FLAG = "--torchcompile-perf-gate"
GATE_HEADER = ("case", "metric", "baseline", "now", "change", "confidence", "verdict")
RESULT_HEADER = ("case", "eager", "compiled", "speedup", "95% CI", "compile s", "first call s")
#: the result table's columns for cases compiled in fresh processes (median CPU seconds a compile)
COMPILE_HEADER = ("cold CPU s", "warm CPU s")
#: longest sentence a table cell shows (the failure message has it whole)
CELL = 100
#: how a broken warm contract's sentence opens: a failure's first line leads with it
WARM_START = "warm start "


def fmt_value(value: float | str | None, unit: str) -> str:
    """A number in its unit: 3.02x, 1.25 ms, 12 MiB; text as is; None as '-'."""
    if value is None:
        return "-"
    if isinstance(value, str):
        return value
    if unit == "x":
        return f"{value:.3g}x"
    if unit == "bytes":
        return fmt_bytes(value)
    if unit == "s":
        return fmt_seconds(value)
    return f"{value:.4g}"


def fmt_seconds(value: float) -> str:
    for scale, suffix in ((1.0, "s"), (1e-3, "ms"), (1e-6, "us")):
        if abs(value) >= scale:
            return f"{value / scale:.4g} {suffix}"
    return f"{value / 1e-9:.4g} ns"


def fmt_bytes(value: float) -> str:
    """Bytes with a binary prefix: 0 B, 2 KiB, 64 MiB (what `torch.cuda` reports in)."""
    for power, suffix in ((3, "GiB"), (2, "MiB"), (1, "KiB")):
        if abs(value) >= 1024**power:
            return f"{value / 1024**power:.4g} {suffix}"
    return f"{value:.4g} B"


def fmt_percent(value: float) -> str:
    return f"{value * 100:+.1f}%" if math.isfinite(value) else ("+inf" if value > 0 else "-inf")


def first_sentence(note: str) -> str:
    """A fact row's note up to its first `; `: what moved, most decisive first."""
    return note.split("; ", 1)[0]


def gate_cells(row: Row) -> tuple[str, ...]:
    """A row's cells; why a metric is not gated goes in the verdict column,
    what moved of the counters (or a fact row's first finding) in the change column."""
    counters_moved = row.change is None and row.verdict is Verdict.FAIL
    moved = row.note
    if row.metric in FACT_METRICS and len(moved := first_sentence(row.note)) > CELL:
        moved = moved[: CELL - 3] + "..."
    change = fmt_percent(row.change) if row.change is not None else moved if counters_moved else ""
    ci = f"[{fmt_percent(row.ci[0])}, {fmt_percent(row.ci[1])}]" if row.ci else ""
    if row.verdict is Verdict.NOT_GATED:
        return (
            row.case,
            row.metric,
            fmt_value(row.baseline, row.unit),
            fmt_value(row.now, row.unit),
            change,
            ci,
            f"not gated: {row.note}",
        )
    confidence = " ".join(part for part in (ci, "" if counters_moved else row.note) if part)
    return (
        row.case,
        row.metric,
        fmt_value(row.baseline, row.unit),
        fmt_value(row.now, row.unit),
        change,
        confidence,
        row.verdict.value,
    )


def verdict_line(verdict: CaseVerdict) -> str:
    """One line for a case's own test: `perf gate FAIL for CASE: speedup 2.36x -> 1.47x (-37.5%, [...]); ...`.

    It names every gated metric that did not pass (all of them when none
    failed singly: a case without a baseline), so the test's failure message
    and junit say what moved without the end-of-run table.
    """
    shown = [r for r in verdict.rows if r.verdict in (Verdict.FAIL, Verdict.INCONCLUSIVE)]
    shown.sort(key=lambda r: not r.note.startswith(WARM_START))  # a broken warm start first
    parts = []
    for row in shown:
        if row.metric in FACT_METRICS and row.verdict is Verdict.FAIL:
            parts.append(f"{first_sentence(row.note)} {row.verdict.value}")
            continue
        cells = gate_cells(row)
        detail = ", ".join(part for part in (cells[4], cells[5]) if part)
        moved = f"{cells[2]} -> {cells[3]}" if row.baseline is not None else f"now {cells[3]}"
        parts.append(
            f"{row.metric} {moved}" + (f" ({detail})" if detail else "") + f" {row.verdict.value}"
        )
    again = " (re-measured)" if verdict.remeasured else ""
    said = "; ".join(parts) if parts else "no metric was gated"
    return f"perf gate {verdict.verdict.value}{again} for {verdict.case}: {said}"


def verdict_details(verdict: CaseVerdict) -> list[str]:
    """The lines after a failing case's verdict line: each failing fact row's findings whole."""
    return [
        f"  {row.metric}: {row.note}"
        for row in verdict.rows
        if row.metric in FACT_METRICS and row.verdict is Verdict.FAIL
    ]


def gate_rows(verdicts: Sequence[CaseVerdict]) -> list[tuple[str, ...]]:
    """Table cells, one row per metric; a re-measured case says so in its verdict."""
    rows = []
    for verdict in sorted(verdicts, key=lambda v: v.case):
        for row in verdict.rows:
            cells = gate_cells(row)
            if (
                verdict.remeasured
                and row.verdict is not Verdict.NOT_GATED
                and row.change is not None
            ):
                cells = (*cells[:-1], f"{cells[-1]} (re-measured)")
            rows.append(cells)
    return rows


def result_header(cases: Sequence[MeasuredCase]) -> tuple[str, ...]:
    """The result table's header: with the compile columns when a case has fresh-process compiles."""
    if any(c.record.compile is not None for c in cases):
        return RESULT_HEADER + COMPILE_HEADER
    return RESULT_HEADER


def result_rows(cases: Sequence[MeasuredCase]) -> list[tuple[str, ...]]:
    """What each case measured, gate or no gate."""
    rows: list[tuple[str, ...]] = []
    compile_columns = len(result_header(cases)) > len(RESULT_HEADER)
    for case in sorted(cases, key=lambda c: c.key):
        m = case.record.metrics
        speedup = m["speedup"]
        row = (
            case.key,
            fmt_seconds(m["eager_s"].median),
            fmt_seconds(m["compiled_s"].median),
            fmt_value(speedup.median, "x"),
            f"{speedup.ci_low:.3g}-{speedup.ci_high:.3g}",
            f"{m['compile_s'].median:.2f}",
            f"{m['first_call_s'].median:.2f}",
        )
        if compile_columns:
            row += tuple(
                f"{m[name].median:.2f}" if name in m else "-"
                for name in ("cold_cpu_s", "warm_cpu_s")
            )
        rows.append(row)
    return rows


def markdown(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"

    return [line(header), line(["---"] * len(header)), *(line(r) for r in rows)]


def run_verdict(verdicts: Sequence[CaseVerdict], gate: GateSettings | None) -> Verdict | None:
    """The worst case verdict; None without the gate or without cases."""
    if gate is None or not verdicts:
        return None
    return worst(v.verdict for v in verdicts)


def _command(flag: str, verdicts: Sequence[CaseVerdict]) -> str:
    nodeids = sorted({c.case.rsplit("::", 1)[0] for c in verdicts})
    return " ".join([f"pytest {flag}", *map(shlex.quote, nodeids)])


def next_steps(verdicts: Sequence[CaseVerdict]) -> list[str]:
    """What to do about the cases that did not pass, one line per remedy.

    A FAIL (or an INCONCLUSIVE that is not about contention) may be intended:
    the baseline is updated. One that is INCONCLUSIVE for CPU contention now
    is measured again on a quiet machine: an update would make the contended
    figures the baseline. One INCONCLUSIVE because the baseline was contended
    needs the baseline recorded again, on a quiet machine.
    """
    waiting = [v for v in verdicts if v.verdict is not Verdict.PASS]
    few = [v for v in waiting if _only_too_few_runs(v)]
    waiting = [v for v in waiting if v not in few]
    contended = [v for v in waiting if v.undecided_for_contention]
    rerun = [v for v in contended if v.contention.now]
    rerecord = [v for v in contended if not v.contention.now]
    update = [v for v in waiting if not v.undecided_for_contention]
    lines = []
    if few:
        lines.append(FEW_RUNS_STEP)
    if update:
        lines.append(
            f"if the new numbers are intended, update the baseline: {_command(UPDATE_FLAG, update)}"
        )
    if rerun:
        lines.append(
            "INCONCLUSIVE under CPU contention, not a measured change: run the gate again when the machine is "
            f"quiet: {_command(GATE_FLAG, rerun)} (do not update the baseline from these numbers)"
        )
    if rerecord:
        lines.append(
            "the baseline was recorded under CPU contention: record it again on a quiet machine: "
            f"{_command(UPDATE_FLAG, rerecord)}"
        )
    return lines


FEW_RUNS_STEP = (
    "compile CPU time had too few fresh-process runs to judge: set torchcompile_perf_compile_runs "
    "to 5 or more (ini or --torchcompile-perf-compile-runs)"
)


def _only_too_few_runs(verdict: CaseVerdict) -> bool:
    """INCONCLUSIVE only because a side of compile CPU time had one run."""
    undecided = [r for r in verdict.rows if r.verdict is Verdict.INCONCLUSIVE]
    return verdict.verdict is Verdict.INCONCLUSIVE and all(
        r.note == TOO_FEW_RUNS for r in undecided
    )


def next_step(verdict: CaseVerdict, nodeid: str) -> str:
    """The one line a case's own failing test ends with (its remedy, as `next_steps`)."""
    if _only_too_few_runs(verdict):
        return FEW_RUNS_STEP
    if not verdict.undecided_for_contention:
        return f"if the new numbers are intended: pytest {UPDATE_FLAG} {nodeid}"
    if verdict.contention.now:
        return (
            f"measured under CPU contention: run it again when the machine is quiet (pytest {GATE_FLAG} "
            f"{nodeid}); do not update the baseline from these numbers"
        )
    return f"the baseline was recorded under CPU contention: record it again on a quiet machine: pytest {UPDATE_FLAG} {nodeid}"


def contended_baseline_lines(cases: Sequence[MeasuredCase]) -> list[str]:
    """What a baseline update says about cases it recorded under CPU contention (every pass
    contended: a quiet pass would have been kept alone), or nothing when all were quiet.

    Such a baseline holds: the gate never FAILs a slowdown against it, it
    calls it INCONCLUSIVE; so the run says so, and how to record it again.
    """
    reasons = {
        c.key: c.record.contention.reasons() if c.record.contention is not None else []
        for c in cases
    }
    return _baseline_warning(
        cases,
        reasons,
        "under CPU contention",
        "against such a baseline the gate calls a slowdown INCONCLUSIVE, never FAIL",
    )


def doubtful_baseline_lines(cases: Sequence[MeasuredCase]) -> list[str]:
    """What a baseline update says about cases whose speedup it recorded from fewer passes than
    it timed (contended ones left out) or with an interval wide against the threshold, or nothing.

    Either can bias the baseline or leave later gates undecided, silently
    otherwise: against a speedup recorded 2 of 5 passes short, unchanged code
    read +1% to +33%. So the run says which, and how to record them again.
    """
    return _baseline_warning(
        cases,
        {c.key: _doubts(c) for c in cases},
        "with passes left out or a wide interval",
        "a gate against such a baseline may misjudge unchanged code",
    )


def _baseline_warning(
    cases: Sequence[MeasuredCase], reasons: dict[str, list[str]], how: str, so: str
) -> list[str]:
    """One warning line naming each case with reasons, what follows, and the re-record command."""
    named = sorted((c for c in cases if reasons[c.key]), key=lambda c: c.key)
    if not named:
        return []
    shown = "; ".join(f"{c.key}: {', '.join(reasons[c.key])}" for c in named)
    nodeids = sorted({c.nodeid for c in named})
    return [
        f"warning: {len(named)} of {len(cases)} case(s) recorded {how} ({shown}): {so}; record them "
        f"again on a quiet machine: {' '.join([f'pytest {UPDATE_FLAG}', *map(shlex.quote, nodeids)])}"
    ]


def _doubts(case: MeasuredCase) -> list[str]:
    """Why `case`'s recorded speedup is doubtful: passes left out, an interval wider than half
    its threshold on either side (an unchanged run measured as well then fails to PASS often)."""
    doubts = []
    left_out = passes_left_out(case.record)
    if left_out:
        doubts.append(f"{left_out[0]} of {left_out[1]} passes left out (CPU contention)")
    speedup = case.record.metrics.get("speedup")
    if speedup is not None and case.threshold and speedup.ci_low > 0 and speedup.median > 0:
        half = math.log(speedup.ci_high / speedup.ci_low) / 2
        if half > case.threshold / 2:
            low, high = (bound / speedup.median - 1 for bound in (speedup.ci_low, speedup.ci_high))
            doubts.append(
                f"speedup {fmt_value(speedup.median, 'x')} [{fmt_value(speedup.ci_low, 'x')}, "
                f"{fmt_value(speedup.ci_high, 'x')}] ({low * 100:+.0f}% to {high * 100:+.0f}%), "
                f"wide against its {case.threshold * 100:g}% threshold"
            )
    return doubts


def software_lines(verdicts: Sequence[CaseVerdict]) -> list[str]:
    """A line per software change the gate judged on this machine (a torch upgrade)."""
    changes: dict[str, int] = {}
    for verdict in verdicts:
        if verdict.software:
            changes[verdict.software] = changes.get(verdict.software, 0) + 1
    return [
        f"judged against this machine's baseline of other software: {change} ({count} case{'s' if count > 1 else ''}); "
        f"once the upgrade is accepted, record this software's baseline (a file of its own; the other stays): pytest {UPDATE_FLAG}"
        for change, count in sorted(changes.items())
    ]


def summary_lines(
    cases: Sequence[MeasuredCase],
    verdicts: Sequence[CaseVerdict],
    gate: GateSettings | None,
    markdown_tables: bool,
) -> list[str]:
    """The gate's verdict, its table (or the results table) and what to do next."""
    render = markdown if markdown_tables else align
    verdict = run_verdict(verdicts, gate)
    if gate is None:
        title, table = "torch.compile benchmarks", render(result_header(cases), result_rows(cases))
    else:
        title = f"perf gate: {verdict.value if verdict else 'nothing to gate'}"
        if verdict is Verdict.INCONCLUSIVE:
            title += (
                ": the run fails (--torchcompile-perf-gate=strict)"
                if run_fails(verdicts, gate)
                else ": the run does not fail (it would under --torchcompile-perf-gate=strict)"
            )
        table = render(GATE_HEADER, gate_rows(verdicts))
    lines = [f"### {title}", "", *table, ""] if markdown_tables else [title, *table]
    if gate is not None:
        lines += software_lines(verdicts)
    if verdict not in (None, Verdict.PASS):
        lines += next_steps(verdicts)
    return lines
