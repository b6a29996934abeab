"""Build `h100_gate_samples.json` from the recorded H100 samples (not hand-tuned).

    python tests/data/build_h100_gate_samples.py [SAMPLES_DIR]

SAMPLES_DIR defaults to `../shared/samples/h100-torch2.11` beside the repo
(NVIDIA H100 80GB HBM3, torch 2.11.0+cu130, triton 3.6.0, the plugin at
commit fedd1f2). It reads three files and keeps only the numbers the gate
tests need, converted to seconds and bytes, nothing chosen by hand:

- `timing-probe.txt`: per process, model and variant, the per-call event time
  after an L2 flush (what the plugin timed) and the CUDA-graph replay time
  (`do_bench_cudagraph`), in seconds;
- `gate-baseline-report.json.gz`: the baseline run's records of the three
  cases, as a baseline file holds them (raw rounds left out);
- `gate-aa2-false-fail.txt`: the gate table of the unchanged run that failed,
  every row of the three cases as numbers (baseline, now, change, interval,
  verdict as printed).
"""

from __future__ import annotations

import gzip
import json
import re
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
DEFAULT_SAMPLES = HERE.parents[1].parent / "shared" / "samples" / "h100-torch2.11"
OUT = HERE / "h100_gate_samples.json"

PROBE_LINE = re.compile(r"^PROBE (\d+) (\w+) (\w+) (.*)$")
UNITS = {
    "x": 1.0,
    "s": 1.0,
    "ms": 1e-3,
    "us": 1e-6,
    "ns": 1e-9,
    "B": 1.0,
    "KiB": 2.0**10,
    "MiB": 2.0**20,
    "GiB": 2.0**30,
}


def probe(text: str) -> dict[str, Any]:
    """{model: {variant: {"flushed_events": [s per process], "do_bench_cudagraph": [...]}}}; NaN (not measured) as None."""
    found: dict[str, Any] = {}
    for line in text.splitlines():
        match = PROBE_LINE.match(line)
        if not match:
            continue
        _, model, variant, fields = match.groups()
        values = dict(field.split("=") for field in fields.split())
        slot = found.setdefault(model, {}).setdefault(variant, {})
        for method in ("flushed_events", "do_bench_cudagraph"):
            number = float(values[method].removesuffix("us"))
            slot.setdefault(method, []).append(None if number != number else tidy(number * 1e-6))
    return found


#: CUDA's caching allocator hands out blocks in multiples of 512 bytes, so a
#: peak printed to 4 digits ('0.001953 MiB') is the multiple of 512 nearest it.
ALLOCATOR_BLOCK = 512


def quantity(cell: str) -> float | int | str:
    """'46.43 us' -> 4.643e-05, '1.05x' -> 1.05, '0.001953 MiB' -> 2048 (bytes); text as is."""
    match = re.fullmatch(r"([-+]?[0-9.]+(?:e[-+]?[0-9]+)?) ?(x|s|ms|us|ns|B|KiB|MiB|GiB)", cell)
    if not match:
        return cell
    value = float(match.group(1)) * UNITS[match.group(2)]
    if match.group(2).endswith("B"):
        return round(value / ALLOCATOR_BLOCK) * ALLOCATOR_BLOCK
    return tidy(value)


def tidy(value: float) -> float:
    """Six significant digits: what was printed, without binary noise (0.00022409999999999997)."""
    return float(f"{value:.6g}")


def percent(cell: str) -> float | None:
    if cell in ("", "exact"):
        return None
    return (
        {"+inf": float("inf"), "-inf": float("-inf")}.get(cell, None)
        if "inf" in cell
        else tidy(float(cell.rstrip("%")) / 100)
    )


def gate_table(text: str) -> dict[str, dict[str, dict[str, Any]]]:
    """The perf-gate table's rows: {case: {metric: {baseline, now, change, ci, verdict}}}."""
    lines = text.splitlines()
    header = next(
        i
        for i, line in enumerate(lines)
        if line.startswith("case ") and "verdict" in line and "metric" in line
    )
    rows: dict[str, dict[str, dict[str, Any]]] = {}
    for line in lines[header + 1 :]:
        if not line.startswith("cases_bench.py"):
            break
        # columns are two or more spaces apart; an exact row has no change cell
        cells = re.split(r" {2,}", line.strip())
        if len(cells) == 6:
            cells.insert(4, "")
        case, metric, baseline, now, change, confidence, verdict = cells
        metric = metric.split(" ")[0]
        ci = re.fullmatch(r"\[(\S+), (\S+)\]", confidence)
        rows.setdefault(case, {})[metric] = {
            "baseline": quantity(baseline),
            "now": quantity(now),
            "change": percent(change) if "%" in change or "inf" in change else change or None,
            "ci": [percent(ci.group(1)), percent(ci.group(2))] if ci else None,
            "verdict": verdict,
        }
    return rows


def baseline_records(report: dict[str, Any]) -> dict[str, Any]:
    """The report's case records as a baseline file holds them (no raw rounds, no node id)."""
    return {
        case: {k: v for k, v in data.items() if k not in ("samples", "nodeid")}
        for case, data in report["cases"].items()
    }


def build(samples: Path) -> dict[str, Any]:
    report = json.loads(gzip.decompress((samples / "gate-baseline-report.json.gz").read_bytes()))
    return {
        "source": f"{samples.name}: timing-probe.txt, gate-baseline-report.json.gz, gate-aa2-false-fail.txt "
        "(built by tests/data/build_h100_gate_samples.py)",
        "machine": report["machine"],
        "probe": probe((samples / "timing-probe.txt").read_text()),
        "baseline": baseline_records(report),
        "aa2_false_fail": gate_table((samples / "gate-aa2-false-fail.txt").read_text()),
    }


def main() -> None:
    samples = Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_SAMPLES
    data = build(samples)
    OUT.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    print(f"wrote {OUT} ({OUT.stat().st_size} bytes) from {samples}")


if __name__ == "__main__":
    main()
