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

`--gpu` gates the three cases of the H100 samples instead (needs CUDA; says
so and runs nothing otherwise), 10 unchanged runs and 5 with a planted graph
break by default:

- `chain`: 8 x sin/cos on 2^24 floats (bandwidth-bound; the break after the
  4th step, outside the loops: a break inside a loop makes Dynamo run the
  whole frame eagerly instead);
- `mlp`: bf16 Linear(2048, 4096), GELU, Linear(4096, 2048) on a batch of 512
  (the break between the layers);
- `launch`: 6 x Linear(64, 64) on a 4x64 input, `mode="reduce-overhead"`
  (launch-bound; the break after the 3rd layer).

    python benchmarks/gate_quality.py --gpu                 # 10 identical, 5 break
    python benchmarks/gate_quality.py --gpu --keep out/     # keep every run's reports

It reports, per case, the gate's verdict, which rows failed, how the GPU
kernel times were measured (`gpu_timing`), whether the case was found
launch-bound, and the changes of `gpu_speedup` and `speedup`.
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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]

SUITE = """
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
"""

VARIANTS = {
    "identical": {"planted": ""},
    "break": {"planted": "    torch._dynamo.graph_break()\n"},
    # two more divisions fused into the same kernel, in the compiled graph only
    # (eager never takes the branch): same graphs, breaks and kernel count.
    "subtle": {
        "planted": "    if torch.compiler.is_compiling():\n        y = y / (y * y + 1.0)\n        y = y / (y * y + 1.0)\n"
    },
}
CASES = ("chain", "matmul")
PB_REGRESSED = re.compile(r"test_pb\[(\w+)\].*Field 'mean' has failed")

GPU_SUITE = """
import pytest, torch


def plant():
    {planted}


def steps(x, n):
    for _ in range(n):
        x = torch.sin(x) * 1.01 + torch.cos(x)
    return x


def chain(x):
    x = steps(x, 4)
    plant()  # outside the loops: a break inside one makes Dynamo run the whole frame eagerly
    return steps(x, 4)


class MLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.up, self.down = torch.nn.Linear(2048, 4096), torch.nn.Linear(4096, 2048)

    def forward(self, x):
        h = torch.nn.functional.gelu(self.up(x))
        plant()
        return self.down(h)


class Stack(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = torch.nn.ModuleList(torch.nn.Linear(64, 64) for _ in range(6))

    def forward(self, x):
        for layer in self.layers[:3]:
            x = layer(x)
        plant()
        for layer in self.layers[3:]:
            x = layer(x)
        return x


@pytest.mark.compile_benchmark
def test_chain(compile_benchmark):
    torch.manual_seed(0)
    with torch.no_grad():
        compile_benchmark(chain, torch.randn(1 << 24, device="cuda"))


@pytest.mark.compile_benchmark
def test_mlp(compile_benchmark):
    torch.manual_seed(0)
    model = MLP().to("cuda", torch.bfloat16).eval()
    with torch.no_grad():
        compile_benchmark(model, torch.randn(512, 2048, device="cuda", dtype=torch.bfloat16))


@pytest.mark.compile_benchmark(mode="reduce-overhead")
def test_launch(compile_benchmark):
    torch.manual_seed(0)
    model = Stack().cuda().eval()
    with torch.no_grad():
        compile_benchmark(model, torch.randn(4, 64, device="cuda"))
"""
GPU_VARIANTS = {
    "identical": {"planted": "pass"},
    "break": {"planted": "torch._dynamo.graph_break()"},
}


@dataclass(frozen=True)
class Suite:
    """What one mode writes, records and gates."""

    source: str
    variants: dict[str, dict[str, str]]
    cases: tuple[str, ...]
    case_suffix: str  # the case's key ends with this, `{case}` filled in
    pytest_benchmark: bool
    gpu: bool = False

    def key_matches(self, key: str, case: str) -> bool:
        return key.endswith(self.case_suffix.format(case=case))


CPU = Suite(SUITE, VARIANTS, CASES, "[{case}]::case_0", pytest_benchmark=True)
GPU = Suite(
    GPU_SUITE,
    GPU_VARIANTS,
    ("chain", "mlp", "launch"),
    "::test_{case}::case_0",
    pytest_benchmark=False,
    gpu=True,
)


def run_pytest(project: Path, args: list[str]) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(REPO), PYTHONDONTWRITEBYTECODE="1")
    command = [
        sys.executable,
        "-m",
        "pytest",
        "-p",
        "no:cacheprovider",
        "-q",
        "-W",
        "ignore::DeprecationWarning",
        *args,
    ]
    return subprocess.run(command, cwd=project, env=env, capture_output=True, text=True)


def write_suite(project: Path, suite: Suite, variant: str) -> None:
    (project / "test_suite.py").write_text(suite.source.format(**suite.variants[variant]))


def record(project: Path, suite: Suite) -> None:
    write_suite(project, suite, "identical")
    extra = ["--benchmark-save=base", "--benchmark-disable-gc"] if suite.pytest_benchmark else []
    done = run_pytest(project, ["--perf-update-baseline", *extra])
    if done.returncode != 0:
        sys.exit(f"recording the baseline failed:\n{done.stdout}\n{done.stderr}")


def gate_once(
    project: Path, variant: str, index: int, keep: Path | None, suite: Suite = CPU
) -> dict[str, Any]:
    """One gated run: our verdicts (all metrics and speedup alone) and pytest-benchmark's."""
    write_suite(project, suite, variant)
    report = project / "report.json"
    report.unlink(missing_ok=True)
    started = time.perf_counter()
    extra = (
        ["--benchmark-compare=0001", "--benchmark-compare-fail=mean:5%", "--benchmark-disable-gc"]
        if suite.pytest_benchmark
        else []
    )
    done = run_pytest(project, ["--perf-gate", "--perf-report=report.json", *extra])
    seconds = time.perf_counter() - started
    if not report.exists():
        sys.exit(
            f"run {variant} #{index} wrote no report:\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}"
        )
    data = json.loads(report.read_text())
    if keep is not None:
        shutil.copy(report, keep / f"{index:03d}-{variant}.json")
        (keep / f"{index:03d}-{variant}.log").write_text(done.stdout)
    outcome: dict[str, Any] = {
        "variant": variant,
        "seconds": seconds,
        "gate": {},
        "speedup": {},
        "pb": {},
        "ratio": {},
    }
    for case in suite.cases:
        rows = [r for r in data["rows"] if suite.key_matches(r["case"], case)]
        outcome["gate"][case] = _worst([r["verdict"] for r in rows])
        speedup = next(r for r in rows if r["metric"] in ("speedup", "(case)"))
        outcome["speedup"][case] = speedup["verdict"]
        outcome["ratio"][case] = (speedup["baseline"], speedup["now"], speedup["change"])
        outcome.setdefault("remeasured", {})[case] = any(
            v["remeasured"] for k, v in data["verdicts"].items() if suite.key_matches(k, case)
        )
        outcome.setdefault("failed_rows", {})[case] = sorted(
            r["metric"].split(" ")[0] for r in rows if r["verdict"] == "FAIL"
        )
        if suite.gpu:
            outcome.setdefault("gpu", {})[case] = gpu_outcome(rows, data["cases"], suite, case)
    regressed = set(PB_REGRESSED.findall(done.stdout + done.stderr))
    outcome["pb"] = {case: "FAIL" if case in regressed else "PASS" for case in suite.cases}
    return outcome


def gpu_outcome(
    rows: list[dict[str, Any]], cases: dict[str, Any], suite: Suite, case: str
) -> dict[str, Any]:
    """How the GPU side of one case was measured and judged in one run."""
    record = next((r for key, r in cases.items() if suite.key_matches(key, case)), {})
    settings = record.get("settings", {})
    speedup = next((r for r in rows if r["metric"] == "gpu_speedup"), None)
    return {
        "timing": settings.get("gpu_timing"),
        "launch_bound": settings.get("gpu_launch_bound"),
        "verdict": speedup["verdict"] if speedup else "-",
        "change": speedup["change"] if speedup else None,
        "notes": record.get("notes", []),
    }


def _worst(verdicts: list[str]) -> str:
    for verdict in ("FAIL", "INCONCLUSIVE"):
        if verdict in verdicts:
            return verdict
    return "PASS"


def schedule(counts: dict[str, int]) -> list[str]:
    """Variants interleaved round-robin until each has its count."""
    left, order = dict(counts), []
    while any(left.values()):
        for variant in counts:
            if left[variant]:
                order.append(variant)
                left[variant] -= 1
    return order


def summarize(outcomes: list[dict[str, Any]]) -> list[str]:
    lines = [
        "| variant | case | runs | gate FAIL / INCONCL. / PASS | speedup-only FAIL / INCONCL. / PASS | pytest-benchmark mean:5% FAIL | median change of speedup |",
        "|---|---|---|---|---|---|---|",
    ]
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


def summarize_gpu(outcomes: list[dict[str, Any]]) -> list[str]:
    """The GPU mode's table: the gate per case, what failed, and how the GPU side was judged."""
    lines = [
        "| variant | case | runs | gate FAIL / INCONCL. / PASS | rows that failed (runs) | gpu_timing | launch-bound | "
        "gpu_speedup verdicts | gpu_speedup change: median (range) | speedup change: median (range) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    by_variant: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for o in outcomes:
        by_variant[o["variant"]].append(o)
    for variant, runs in by_variant.items():
        for case in GPU.cases:
            gate = Counter(r["gate"][case] for r in runs)
            failed = Counter(name for r in runs for name in r["failed_rows"][case])
            gpu = [r["gpu"][case] for r in runs]
            lines.append(
                f"| {variant} | {case} | {len(runs)} | {gate['FAIL']} / {gate['INCONCLUSIVE']} / {gate['PASS']} | "
                f"{', '.join(f'{name} ({n})' for name, n in sorted(failed.items())) or '-'} | "
                f"{'/'.join(sorted({str(g['timing']) for g in gpu}))} | {'/'.join(sorted({str(g['launch_bound']) for g in gpu}))} | "
                f"{_counts(g['verdict'] for g in gpu)} | {_changes([g['change'] for g in gpu])} | "
                f"{_changes([r['ratio'][case][2] for r in runs])} |"
            )
    return lines


def _counts(verdicts: Any) -> str:
    return ", ".join(f"{verdict} {n}" for verdict, n in sorted(Counter(verdicts).items()))


def _changes(changes: list[float | None]) -> str:
    found = [c for c in changes if c is not None]
    if not found:
        return "-"
    return f"{100 * statistics.median(found):+.1f}% ({100 * min(found):+.1f}% .. {100 * max(found):+.1f}%)"


def cuda_available() -> bool:
    """Asked of a fresh interpreter, as the pytest runs will see it."""
    done = subprocess.run(
        [sys.executable, "-c", "import torch; print(torch.cuda.is_available())"],
        capture_output=True,
        text=True,
    )
    return done.stdout.strip() == "True"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--gpu",
        action="store_true",
        help="gate the three GPU cases of the H100 samples (needs CUDA)",
    )
    parser.add_argument(
        "--identical", type=int, default=None, help="unchanged runs (20; --gpu: 10)"
    )
    parser.add_argument(
        "--break",
        dest="broken",
        type=int,
        default=None,
        help="runs with a planted graph break (10; --gpu: 5)",
    )
    parser.add_argument(
        "--subtle",
        type=int,
        default=None,
        help="runs with a subtle planted regression (10; not in --gpu)",
    )
    parser.add_argument(
        "--keep", type=Path, default=None, help="folder to keep every run's JSON report and log in"
    )
    args = parser.parse_args()
    if args.gpu and not cuda_available():
        sys.exit(
            "gate_quality.py --gpu needs CUDA: torch.cuda.is_available() is False here, so nothing was run "
            "(run it on a machine with an NVIDIA GPU; without --gpu it measures the CPU gate)"
        )
    if args.gpu and args.subtle:
        sys.exit("--subtle is a CPU-mode plant; --gpu has identical and break runs")
    suite = GPU if args.gpu else CPU
    defaults = (
        {"identical": 10, "break": 5} if args.gpu else {"identical": 20, "break": 10, "subtle": 10}
    )
    given = {"identical": args.identical, "break": args.broken, "subtle": args.subtle}
    counts = {
        variant: default if given[variant] is None else given[variant]
        for variant, default in defaults.items()
    }
    if args.keep:
        args.keep.mkdir(parents=True, exist_ok=True)
    project = Path(tempfile.mkdtemp(prefix="gate_quality_"))
    print(f"project: {project}", flush=True)
    record(project, suite)
    baseline = next((project / "perf-baselines").glob("*.json"))
    print(f"baseline recorded: {baseline.name}", flush=True)
    if args.keep:
        shutil.copy(baseline, args.keep / "baseline.json")
    outcomes = []
    order = schedule(counts)
    for index, variant in enumerate(order):
        outcome = gate_once(project, variant, index, args.keep, suite)
        outcomes.append(outcome)
        ratios = ", ".join(
            f"{c} {b:.3g}x->{n:.3g}x ({100 * ch:+.1f}%)"
            for c, (b, n, ch) in outcome["ratio"].items()
            if ch is not None
        )
        judged = (
            f"failed rows {outcome['failed_rows']}"
            if args.gpu
            else f"pytest-benchmark {outcome['pb']}"
        )
        print(
            f"[{index + 1}/{len(order)}] {variant:9s} gate {outcome['gate']} speedup {outcome['speedup']} "
            f"{judged} | {ratios} | {outcome['seconds']:.0f}s",
            flush=True,
        )
    print()
    print("\n".join(summarize_gpu(outcomes) if args.gpu else summarize(outcomes)))
    if args.keep:
        (args.keep / "outcomes.json").write_text(json.dumps(outcomes, indent=2))


if __name__ == "__main__":
    main()
