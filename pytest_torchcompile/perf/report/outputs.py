"""The perf wing's files: this plugin's JSON report, pytest-benchmark's JSON, the CI summary.

`json_report` holds the run's verdict, every gate row and every case's
record (raw rounds included, and the fresh-process compiles' facts and
runs); `benchmark_json` writes pytest-benchmark's schema, so
`pytest-benchmark compare` reads the same results (a case compiled in fresh
processes adds a benchmark per side, `cold-compile` and `warm-compile`, whose
data are the runs' CPU seconds);
`append_step_summary` adds the gate's Markdown to `$GITHUB_STEP_SUMMARY`.
Each file is written whole (atomically) or not at all.
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import statistics
from collections.abc import Mapping, Sequence
from pathlib import Path

from ...common.files import atomic_write_text
from ..gate import CaseVerdict
from ..record import MeasuredCase
from ..stats import quantile


def write_json(path: Path, data: Mapping[str, object], sort_keys: bool = True) -> None:
    """A JSON file, indented, replaced atomically."""
    atomic_write_text(path, json.dumps(data, indent=2, sort_keys=sort_keys) + "\n")


def append_step_summary(lines: Sequence[str]) -> None:
    """GitHub Actions' job summary (`$GITHUB_STEP_SUMMARY`), when the run has one."""
    target = os.environ.get("GITHUB_STEP_SUMMARY")
    if not target:
        return
    with open(target, "a", encoding="utf-8") as handle:
        handle.write("\n".join(lines) + "\n")


def benchmark_json(
    cases: Sequence[MeasuredCase], machine: Mapping[str, object]
) -> dict[str, object]:
    """pytest-benchmark's JSON layout: one benchmark per side (eager, compiled) per case.

    Each round's seconds per call is one datum, so `stats` are computed as
    pytest-benchmark computes them and `pytest-benchmark compare` reads them.
    """
    benchmarks = []
    for case in sorted(cases, key=lambda c: c.key):
        for side in ("eager", "compiled"):
            data = case.record.samples.get(f"{side}_s")
            if data:
                extra = {"speedup": case.record.metrics["speedup"].median, **case.record.settings}
                benchmarks.append(_benchmark(case.key, side, data, extra, "perf_counter"))
        benchmarks += _compile_benchmarks(case)
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


def _benchmark(
    key: str, side: str, data: Sequence[float], extra: Mapping[str, object], timer: str
) -> dict[str, object]:
    """One pytest-benchmark entry: a side of a case, each datum a round (or a fresh-process run)."""
    return {
        "group": key,
        "name": f"{key.rsplit('::', 2)[-2]}[{key.rsplit('::', 1)[-1]}-{side}]",
        "fullname": f"{key}[{side}]",
        "params": {"side": side},
        "param": side,
        "extra_info": dict(extra),
        "options": {"timer": timer, "disable_gc": True, "warmup": True, "min_rounds": len(data)},
        "stats": benchmark_stats(data),
    }


def _compile_benchmarks(case: MeasuredCase) -> list[dict[str, object]]:
    """`cold-compile` and `warm-compile`: CPU seconds of each fresh-process compile, with the
    medians of their wall and Dynamo seconds and the side's cache outcomes in `extra_info`."""
    block, metrics = case.record.compile, case.record.metrics
    if block is None:
        return []
    entries = []
    for side in ("cold", "warm"):
        data = case.record.samples.get(f"{side}_cpu_s")
        if not data:
            continue
        extra = {
            "wall_s": metrics[f"{side}_wall_s"].median,
            "frame_compile_s": metrics[f"{side}_frame_compile_s"].median,
            "caches": block.side(side).summary(),
            "runs": block.runs,
        }
        entries.append(_benchmark(case.key, f"{side}-compile", data, extra, "process CPU time"))
    return entries


def benchmark_stats(data: Sequence[float]) -> dict[str, object]:
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
    machine: Mapping[str, object],
    notes: Sequence[str],
) -> dict[str, object]:
    """This plugin's report: the run's verdict, every gate row and every case's record."""
    return {
        "format": 1,
        "verdict": verdict,
        "machine": dict(machine),
        "rows": [row.to_json() for v in verdicts for row in v.rows],
        "verdicts": {
            v.case: {
                "verdict": v.verdict.value,
                "remeasured": v.remeasured,
                **({"software": v.software} if v.software else {}),
            }
            for v in verdicts
        },
        "cases": {c.key: {"nodeid": c.nodeid, **c.record.to_json()} for c in cases},
        "notes": list(notes),
    }
