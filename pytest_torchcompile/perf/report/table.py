"""Benchmark and gate output: terminal tables, Markdown for CI, JSON files.

One set of cells per table, rendered three ways: aligned text for the
terminal, a Markdown table for `$GITHUB_STEP_SUMMARY`, and JSON (this
plugin's report, and pytest-benchmark's schema so `pytest-benchmark compare`
reads the same results). Pure functions over plain data.
"""

from __future__ import annotations

import datetime
import math
import os
import platform
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..gate import CaseVerdict, Row, Verdict
from ..record import CaseRecord
from ..stats import quantile

GATE_HEADER = ("case", "metric", "baseline", "now", "change", "confidence", "verdict")
RESULT_HEADER = ("case", "eager", "compiled", "speedup", "95% CI", "compile s", "first call s")


@dataclass(frozen=True)
class MeasuredCase:
    """A case as the session collected it: where it ran and what it measured."""

    key: str
    nodeid: str
    record: CaseRecord


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


def gate_cells(row: Row) -> tuple[str, ...]:
    """A row's cells; why a metric is not gated goes in the verdict column,
    what moved of the counters in the change column."""
    counters_moved = row.change is None and row.verdict is Verdict.FAIL
    change = (
        fmt_percent(row.change) if row.change is not None else row.note if counters_moved else ""
    )
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
    parts = []
    for row in shown:
        cells = gate_cells(row)
        detail = ", ".join(part for part in (cells[4], cells[5]) if part)
        moved = f"{cells[2]} -> {cells[3]}" if row.baseline is not None else f"now {cells[3]}"
        parts.append(
            f"{row.metric} {moved}" + (f" ({detail})" if detail else "") + f" {row.verdict.value}"
        )
    again = " (re-measured)" if verdict.remeasured else ""
    said = "; ".join(parts) if parts else "no metric was gated"
    return f"perf gate {verdict.verdict.value}{again} for {verdict.case}: {said}"


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


def result_rows(cases: Sequence[MeasuredCase]) -> list[tuple[str, ...]]:
    """What each case measured, gate or no gate."""
    rows: list[tuple[str, ...]] = []
    for case in sorted(cases, key=lambda c: c.key):
        m = case.record.metrics
        speedup = m["speedup"]
        rows.append(
            (
                case.key,
                fmt_seconds(m["eager_s"].median),
                fmt_seconds(m["compiled_s"].median),
                fmt_value(speedup.median, "x"),
                f"{speedup.ci_low:.3g}-{speedup.ci_high:.3g}",
                f"{m['compile_s'].median:.2f}",
                f"{m['first_call_s'].median:.2f}",
            )
        )
    return rows


def markdown(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"

    return [line(header), line(["---"] * len(header)), *(line(r) for r in rows)]


def benchmark_json(cases: Sequence[MeasuredCase], machine: Mapping[str, Any]) -> dict[str, Any]:
    """pytest-benchmark's JSON layout: one benchmark per side (eager, compiled) per case.

    Each round's seconds per call is one datum, so `stats` are computed as
    pytest-benchmark computes them and `pytest-benchmark compare` reads them.
    """
    benchmarks = []
    for case in sorted(cases, key=lambda c: c.key):
        for side in ("eager", "compiled"):
            data = case.record.samples.get(f"{side}_s")
            if not data:
                continue
            benchmarks.append(
                {
                    "group": case.key,
                    "name": f"{case.key.rsplit('::', 2)[-2]}[{case.key.rsplit('::', 1)[-1]}-{side}]",
                    "fullname": f"{case.key}[{side}]",
                    "params": {"side": side},
                    "param": side,
                    "extra_info": {
                        "speedup": case.record.metrics["speedup"].median,
                        **case.record.settings,
                    },
                    "options": {
                        "timer": "perf_counter",
                        "disable_gc": True,
                        "warmup": True,
                        "min_rounds": len(data),
                    },
                    "stats": benchmark_stats(data),
                }
            )
    return {
        # pytest-benchmark writes `cpu` as py-cpuinfo's dict; the fingerprint's fields sit beside it
        "machine_info": {
            **{k: v for k, v in machine.items() if k != "cpu"},
            "node": machine.get("device", ""),
            "machine": platform.machine(),
            "cpu": {
                "brand_raw": machine.get("cpu", ""),
                "arch_string_raw": platform.machine(),
                "count": os.cpu_count(),
            },
        },
        "commit_info": {},
        "benchmarks": benchmarks,
        "datetime": datetime.datetime.now(datetime.timezone.utc).isoformat(),
        "version": "5.1.0",
    }


def benchmark_stats(data: Sequence[float]) -> dict[str, Any]:
    """pytest-benchmark's `stats` block (Tukey fences at 1.5 IQR, stddev outliers)."""
    ordered = sorted(data)
    mean = statistics.fmean(ordered)
    stddev = statistics.stdev(ordered) if len(ordered) > 1 else 0.0
    q1, q3 = quantile(ordered, 0.25), quantile(ordered, 0.75)
    iqr = q3 - q1
    inside = [x for x in ordered if q1 - 1.5 * iqr <= x <= q3 + 1.5 * iqr] or ordered
    iqr_outliers = len(ordered) - len(inside)
    stddev_outliers = sum(1 for x in ordered if abs(x - mean) > stddev)
    return {
        "min": ordered[0],
        "max": ordered[-1],
        "mean": mean,
        "stddev": stddev,
        "rounds": len(ordered),
        "median": statistics.median(ordered),
        "iqr": iqr,
        "q1": q1,
        "q3": q3,
        "iqr_outliers": iqr_outliers,
        "stddev_outliers": stddev_outliers,
        "outliers": f"{stddev_outliers};{iqr_outliers}",
        "ld15iqr": inside[0],
        "hd15iqr": inside[-1],
        "ops": 1.0 / mean if mean else 0.0,
        "total": sum(ordered),
        "iterations": 1,
        "data": list(data),
    }


def json_report(
    verdict: str | None,
    verdicts: Sequence[CaseVerdict],
    cases: Sequence[MeasuredCase],
    machine: Mapping[str, Any],
    notes: Sequence[str],
) -> dict[str, Any]:
    """This plugin's report: the run's verdict, every gate row and every case's record."""
    return {
        "format": 1,
        "verdict": verdict,
        "machine": dict(machine),
        "rows": [row.to_json() for v in verdicts for row in v.rows],
        "verdicts": {
            v.case: {"verdict": v.verdict.value, "remeasured": v.remeasured} for v in verdicts
        },
        "cases": {c.key: {"nodeid": c.nodeid, **c.record.to_json()} for c in cases},
        "notes": list(notes),
    }
