"""How good is the perf gate? False alarms and detections, measured on this machine.

A small suite (a fused pointwise chain, where compiled is several times
faster than eager, and a matmul-bound model, where it is about 1x) is
recorded as the baseline, then gated many times:

- `identical`: unchanged code (every FAIL is a false alarm);
- `break`: a graph break splits the fused chain (compiled much slower);
- `subtle`: two more divisions fused into the chain's kernel, in the compiled
  graph only (compiled ~20% slower, same graphs, breaks and kernels).

The matmul case never changes, so every run is also a false-alarm trial for
it. The same runs use pytest-benchmark on the compiled chain and matmul
with `--benchmark-compare-fail=mean:5%` (its baseline saved in the same
recording run), so both gates see the same machine state.

    python benchmarks/gate_quality.py                       # 20 identical, 10 break, 10 subtle
    python benchmarks/gate_quality.py --identical 4 --break 2 --subtle 2   # a quick look
    python benchmarks/gate_quality.py --keep out/           # keep every run's reports

Variants are interleaved (identical, break, subtle, identical, ...) so
slow phases of a shared machine hit all of them alike. Needs
pytest-benchmark (the `dev` extra).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]

SUITE = '''
import pytest, torch

SIZE = 1 << 16


def half(x):
    x = x * 1.5 + 0.5
    x = torch.relu(x) - 0.25
    return x * x + 0.1


def chain(x):
    y = half(x)
{planted}    return half(y)


torch.manual_seed(0)
LINEAR = torch.nn.Linear(512, 512)


def matmul(x):
    return torch.relu(LINEAR(x))


def inputs(name):
    return torch.randn(SIZE) if name == "chain" else torch.randn(128, 512)


@pytest.mark.parametrize("name", ["chain", "matmul"])
def test_gate(compile_benchmark, name):
    with torch.no_grad():
        compile_benchmark(globals()[name], inputs(name))


@pytest.mark.parametrize("name", ["chain", "matmul"])
def test_pb(benchmark, name):
    torch._dynamo.reset()
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # as the gate pins it: the same work on both sides
    try:
        fn, x = torch.compile(globals()[name]), inputs(name)
        with torch.no_grad():
            fn(x)
            benchmark(fn, x)
    finally:
        torch.set_num_threads(threads)
'''

VARIANTS = {
    "identical": {"planted": ""},
    "break": {"planted": "    torch._dynamo.graph_break()\n"},
    # two more divisions fused into the same kernel, in the compiled graph only
    # (eager never takes the branch): same graphs, breaks and kernel count.
    "subtle": {"planted": "    if torch.compiler.is_compiling():\n        y = y / (y * y + 1.0)\n        y = y / (y * y + 1.0)\n"},
}
CASES = ("chain", "matmul")
PB_REGRESSED = re.compile(r"test_pb\[(\w+)\].*Field 'mean' has failed")


def run_pytest(project: Path, args: list[str]) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(REPO), PYTHONDONTWRITEBYTECODE="1")
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-W", "ignore::DeprecationWarning", *args]
    return subprocess.run(command, cwd=project, env=env, capture_output=True, text=True)


def write_suite(project: Path, variant: str) -> None:
    (project / "test_suite.py").write_text(SUITE.format(**VARIANTS[variant]))


def record(project: Path) -> None:
    write_suite(project, "identical")
    done = run_pytest(project, ["--perf-update-baseline", "--benchmark-save=base", "--benchmark-disable-gc"])
    if done.returncode != 0:
        sys.exit(f"recording the baseline failed:\n{done.stdout}\n{done.stderr}")


def gate_once(project: Path, variant: str, index: int, keep: Path | None) -> dict[str, Any]:
    """One gated run: our verdicts (all metrics and speedup alone) and pytest-benchmark's."""
    write_suite(project, variant)
    report = project / "report.json"
    report.unlink(missing_ok=True)
    started = time.perf_counter()
    done = run_pytest(project, [
        "--perf-gate", "--perf-report=report.json",
        "--benchmark-compare=0001", "--benchmark-compare-fail=mean:5%", "--benchmark-disable-gc",
    ])
    seconds = time.perf_counter() - started
    if not report.exists():
        sys.exit(f"run {variant} #{index} wrote no report:\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}")
    data = json.loads(report.read_text())
    if keep is not None:
        shutil.copy(report, keep / f"{index:03d}-{variant}.json")
        (keep / f"{index:03d}-{variant}.log").write_text(done.stdout)
    outcome: dict[str, Any] = {"variant": variant, "seconds": seconds, "gate": {}, "speedup": {}, "pb": {}, "ratio": {}}
    for case in CASES:
        rows = [r for r in data["rows"] if r["case"].endswith(f"[{case}]::case_0")]
        outcome["gate"][case] = _worst([r["verdict"] for r in rows])
        speedup = next(r for r in rows if r["metric"] in ("speedup", "(case)"))
        outcome["speedup"][case] = speedup["verdict"]
        outcome["ratio"][case] = (speedup["baseline"], speedup["now"], speedup["change"])
        outcome.setdefault("remeasured", {})[case] = any(v["remeasured"] for k, v in data["verdicts"].items() if k.endswith(f"[{case}]::case_0"))
    regressed = set(PB_REGRESSED.findall(done.stdout + done.stderr))
    outcome["pb"] = {case: "FAIL" if case in regressed else "PASS" for case in CASES}
    return outcome


def _worst(verdicts: list[str]) -> str:
    for verdict in ("FAIL", "INCONCLUSIVE"):
        if verdict in verdicts:
            return verdict
    return "PASS"


def schedule(counts: dict[str, int]) -> list[str]:
    """Variants interleaved round-robin until each has its count."""
    left, order = dict(counts), []
    while any(left.values()):
        for variant in VARIANTS:
            if left[variant]:
                order.append(variant)
                left[variant] -= 1
    return order


def summarize(outcomes: list[dict[str, Any]]) -> list[str]:
    lines = ["| variant | case | runs | gate FAIL / INCONCL. / PASS | speedup-only FAIL / INCONCL. / PASS | pytest-benchmark mean:5% FAIL | median change of speedup |",
             "|---|---|---|---|---|---|---|"]
    by_variant: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for o in outcomes:
        by_variant[o["variant"]].append(o)
    for variant, runs in by_variant.items():
        for case in CASES:
            gate = Counter(r["gate"][case] for r in runs)
            speedup = Counter(r["speedup"][case] for r in runs)
            pb = sum(r["pb"][case] == "FAIL" for r in runs)
            changes = [r["ratio"][case][2] for r in runs if r["ratio"][case][2] is not None]
            change = f"{100 * statistics.median(changes):+.1f}%" if changes else "-"
            lines.append(
                f"| {variant} | {case} | {len(runs)} | {gate['FAIL']} / {gate['INCONCLUSIVE']} / {gate['PASS']} | "
                f"{speedup['FAIL']} / {speedup['INCONCLUSIVE']} / {speedup['PASS']} | {pb} | {change} |"
            )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--identical", type=int, default=20)
    parser.add_argument("--break", dest="broken", type=int, default=10)
    parser.add_argument("--subtle", type=int, default=10)
    parser.add_argument("--keep", type=Path, default=None, help="folder to keep every run's JSON report and log in")
    args = parser.parse_args()
    if args.keep:
        args.keep.mkdir(parents=True, exist_ok=True)
    project = Path(tempfile.mkdtemp(prefix="gate_quality_"))
    print(f"project: {project}", flush=True)
    record(project)
    baseline = next((project / "perf-baselines").glob("*.json"))
    print(f"baseline recorded: {baseline.name}", flush=True)
    if args.keep:
        shutil.copy(baseline, args.keep / "baseline.json")
    outcomes = []
    order = schedule({"identical": args.identical, "break": args.broken, "subtle": args.subtle})
    for index, variant in enumerate(order):
        outcome = gate_once(project, variant, index, args.keep)
        outcomes.append(outcome)
        ratios = ", ".join(f"{c} {b:.3g}x->{n:.3g}x ({100 * ch:+.1f}%)" for c, (b, n, ch) in outcome["ratio"].items() if ch is not None)
        print(f"[{index + 1}/{len(order)}] {variant:9s} gate {outcome['gate']} speedup {outcome['speedup']} "
              f"pytest-benchmark {outcome['pb']} | {ratios} | {outcome['seconds']:.0f}s", flush=True)
    print()
    print("\n".join(summarize(outcomes)))
    if args.keep:
        (args.keep / "outcomes.json").write_text(json.dumps(outcomes, indent=2))


if __name__ == "__main__":
    main()
