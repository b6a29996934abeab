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

`--noisy` measures the gate beside noisy neighbours (`neighbours.py`): the
baseline is recorded quiet (after waiting for CPU pressure to drop), then
the chain and matmul cases are gated unchanged and with a planted slowdown
(`slow`: two more sins in the chain's compiled kernel only, ~2.5-2.9x slower
compiled) on a quiet machine, beside the synthetic neighbour (per CPU a
spinner, a torch matmul loop on all CPUs and a cold Inductor compile loop)
and beside the replayed one (the zoo suite running again and again). Every
run records the load average and CPU pressure around it and the contention
the gate measured.

    python benchmarks/gate_quality.py --noisy                  # 5+5 quiet, 20+5 per neighbour
    python benchmarks/gate_quality.py --noisy --identical 4 --slow 2 --quiet 2   # a quick look

`--slowdown FRACTION` asks whether a slowdown just past the threshold is ever
a PASS: a compiled-only plant in the chain's kernel is calibrated to cost
about FRACTION of the speedup, timed directly (`planted_slowdown.py`), then
the chain and matmul cases are gated unchanged and with the plant,
interleaved (20 and 10 runs by default; `--identical`, `--planted`). The
report gives each variant's verdicts, the plant's cost timed directly before
and after the gates, and the gated speedup changes.

    python benchmarks/gate_quality.py --slowdown 0.17     # 20 unchanged, 10 with a -17% plant
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from neighbours import KINDS, machine_load, running, wait_for_quiet

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
#: two more sins in the fused chain, in the compiled graph only: ~2.5-2.9x slower compiled
SLOW = {
    "planted": "    if torch.compiler.is_compiling():\n"
    + "        y = torch.sin(y) * 0.5 + 0.5\n" * 2
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
#: the noisy-neighbour mode gates only the plugin's cases (`-k test_gate`)
NOISY = Suite(SUITE, {"identical": {"planted": ""}, "slow": SLOW}, CASES, "[{case}]::case_0", False)
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
    selection = [] if suite.pytest_benchmark or suite.gpu else ["-k", "test_gate"]
    done = run_pytest(project, ["--torchcompile-perf-update-baseline", *extra, *selection])
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
    load_before = machine_load()
    selection = [] if suite.pytest_benchmark or suite.gpu else ["-k", "test_gate"]
    done = run_pytest(
        project,
        ["--torchcompile-perf-gate", "--torchcompile-perf-report=report.json", *extra, *selection],
    )
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
        "load": {"before": load_before, "after": machine_load()},
        "contention": {},
        "notes": {},
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
        record = next((r for k, r in data["cases"].items() if suite.key_matches(k, case)), {})
        outcome["contention"][case] = record.get("contention", {})
        outcome["notes"][case] = speedup.get("note", "")
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


def by_variant(outcomes: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """The runs of each variant, in the order they ran."""
    found: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for o in outcomes:
        found[o["variant"]].append(o)
    return found


def summarize(outcomes: list[dict[str, Any]]) -> list[str]:
    lines = [
        "| variant | case | runs | gate FAIL / INCONCL. / PASS | speedup-only FAIL / INCONCL. / PASS | pytest-benchmark mean:5% FAIL | median change of speedup |",
        "|---|---|---|---|---|---|---|",
    ]
    for variant, runs in by_variant(outcomes).items():
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
    for variant, runs in by_variant(outcomes).items():
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


def noisy_runs(args: argparse.Namespace, project: Path) -> list[dict[str, Any]]:
    """The quiet phase, then one phase per neighbour: unchanged and slow runs interleaved."""
    outcomes: list[dict[str, Any]] = []
    phases: list[tuple[str, dict[str, int]]] = [
        ("quiet", {"identical": args.quiet, "slow": args.quiet})
    ]
    counts = {"identical": args.identical or 20, "slow": args.slow}
    phases += [(kind, counts) for kind in args.neighbours]
    for phase, phase_counts in phases:
        with running(phase) if phase != "quiet" else contextlib.nullcontext():
            for variant in schedule(phase_counts):
                waited = wait_for_quiet(args.quiet_wait) if phase == "quiet" else 0.0
                outcome = gate_once(project, variant, len(outcomes), args.keep, NOISY)
                outcome.update(phase=phase, waited=waited)
                outcomes.append(outcome)
                print(f"[{len(outcomes)}] {phase:9s} {describe_run(outcome)}", flush=True)
    return outcomes


def describe_run(outcome: dict[str, Any]) -> str:
    """One progress line: verdicts, ratios, the machine's load and the contention measured."""
    ratios = ", ".join(
        f"{c} {b:.3g}x->{n:.3g}x ({100 * ch:+.1f}%)"
        for c, (b, n, ch) in outcome["ratio"].items()
        if ch is not None
    )
    load = outcome["load"]["before"]
    chain = outcome["contention"].get("chain", {})
    return (
        f"{outcome['variant']:9s} gate {outcome['gate']} | {ratios} | load {load['load']:.1f} "
        f"PSI {load['pressure']} | measured {chain} | {outcome['notes'].get('chain', '')} | "
        f"{outcome['seconds']:.0f}s"
    )


def summarize_noisy(outcomes: list[dict[str, Any]]) -> list[str]:
    """Per phase, variant and case: verdicts, how many INCONCLUSIVE came from contention, load."""
    lines = [
        "| phase | variant | case | runs | FAIL / INCONCL. / PASS | of which INCONCL. for contention | "
        "speedup change: median (range) | load avg before: median (range) | CPU pressure before, % | "
        "waited for a CPU: median (max) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    groups: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for o in outcomes:
        groups[(o["phase"], o["variant"])].append(o)
    for (phase, variant), runs in groups.items():
        loads = [r["load"]["before"]["load"] for r in runs]
        pressures = [
            r["load"]["before"]["pressure"]
            for r in runs
            if r["load"]["before"]["pressure"] is not None
        ]
        for case in CASES:
            gate = Counter(r["gate"][case] for r in runs)
            contended = sum(r["notes"][case].startswith("CPU contention") for r in runs)
            shares = [r["contention"][case].get("waiting") for r in runs]
            shares = [s for s in shares if s is not None]
            lines.append(
                f"| {phase} | {variant} | {case} | {len(runs)} | {gate['FAIL']} / {gate['INCONCLUSIVE']} / {gate['PASS']} | "
                f"{contended} | {_changes([r['ratio'][case][2] for r in runs])} | {_spread(loads, '.1f')} | "
                f"{_spread(pressures, '.0f')} | "
                f"{f'{statistics.median(shares):.0%} ({max(shares):.0%})' if shares else '-'} |"
            )
    return lines


def _spread(values: list[float], spec: str) -> str:
    if not values:
        return "-"
    return f"{statistics.median(values):{spec}} ({min(values):{spec}} .. {max(values):{spec}})"


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
    parser.add_argument(
        "--noisy", action="store_true", help="gate beside noisy neighbours (see the module's doc)"
    )
    parser.add_argument(
        "--slow", type=int, default=5, help="--noisy: runs with the planted slowdown per phase (5)"
    )
    parser.add_argument(
        "--quiet",
        type=int,
        default=5,
        help="--noisy: unchanged and slow runs on a quiet machine (5 each)",
    )
    parser.add_argument(
        "--neighbours",
        type=lambda text: [kind for kind in text.split(",") if kind],
        default=list(KINDS),
        help=f"--noisy: the neighbours, comma-separated (default {','.join(KINDS)})",
    )
    parser.add_argument(
        "--quiet-wait",
        type=float,
        default=120.0,
        help="--noisy: seconds to wait for CPU pressure below 20%% before a quiet run (120)",
    )
    parser.add_argument(
        "--slowdown",
        type=float,
        default=None,
        help="gate unchanged code and a compiled-only plant costing about this fraction of the speedup",
    )
    parser.add_argument(
        "--planted", type=int, default=10, help="--slowdown: runs with the plant (10)"
    )
    parser.add_argument(
        "--plant",
        type=lambda text: tuple(int(n) for n in text.split(",")),
        default=None,
        help="--slowdown: the plant as DIVISIONS,MULTIPLY_ADDS, calibrated before (skips the first timing)",
    )
    args = parser.parse_args()
    if args.noisy:
        noisy_main(args)
        return
    if args.slowdown is not None:
        slowdown_main(args)
        return
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


def slowdown_main(args: argparse.Namespace) -> None:
    """Unchanged and planted runs interleaved, the plant's cost timed directly around them."""
    from planted_slowdown import chain_source, costs, pick, planted

    source = chain_source(SUITE)
    if args.plant:  # calibrated before: (divisions, multiply-adds)
        chosen = args.plant
        before = {}
    else:
        before = costs(source)
        chosen = pick(before, args.slowdown)
        shown = ", ".join(f"{d}d+{f}m {-100 * c:+.1f}%" for (d, f), c in before.items())
        print(f"candidates timed directly: {shown}; planted: {chosen}", flush=True)
    suite = Suite(
        SUITE,
        {"identical": {"planted": ""}, "planted": {"planted": planted(*chosen)}},
        CASES,
        "[{case}]::case_0",
        pytest_benchmark=False,
    )
    project = Path(tempfile.mkdtemp(prefix="gate_quality_"))
    record(project, suite)
    if args.keep:
        args.keep.mkdir(parents=True, exist_ok=True)
    outcomes = []
    order = schedule({"identical": args.identical or 20, "planted": args.planted})
    for index, variant in enumerate(order):
        outcome = gate_once(project, variant, index, args.keep, suite)
        outcomes.append(outcome)
        print(f"[{index + 1}/{len(order)}] {describe_run(outcome)}", flush=True)
    after = costs(source)
    print()
    timed = f"{-100 * before[chosen]:+.1f}% before the gates, " if before else ""
    print(
        f"the plant ({chosen[0]} divisions, {chosen[1]} multiply-adds in the chain's kernel) timed "
        f"directly: speedup {timed}{-100 * after[chosen]:+.1f}% after"
    )
    print("\n".join(summarize_slowdown(outcomes)))
    if args.keep:
        (args.keep / "outcomes.json").write_text(json.dumps(outcomes, indent=2))


def summarize_slowdown(outcomes: list[dict[str, Any]]) -> list[str]:
    """Per variant and case: verdicts, the speedup change's median and range, re-measures."""
    lines = [
        "| variant | case | runs | FAIL / INCONCL. / PASS | of which INCONCL. for contention | "
        "speedup change: median (range) | re-measured |",
        "|---|---|---|---|---|---|---|",
    ]
    for variant, runs in by_variant(outcomes).items():
        for case in CASES:
            gate = Counter(r["gate"][case] for r in runs)
            contended = sum(r["notes"][case].startswith("CPU contention") for r in runs)
            remeasured = sum(r["remeasured"][case] for r in runs)
            lines.append(
                f"| {variant} | {case} | {len(runs)} | {gate['FAIL']} / {gate['INCONCLUSIVE']} / {gate['PASS']} | "
                f"{contended} | {_changes([r['ratio'][case][2] for r in runs])} | {remeasured} |"
            )
    return lines


def noisy_main(args: argparse.Namespace) -> None:
    # SIGTERM unwinds like Ctrl-C, so the neighbours are stopped (`running`'s finally)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("terminated"))
    unknown = [kind for kind in args.neighbours if kind not in KINDS]
    if unknown:
        sys.exit(f"--neighbours: unknown {', '.join(unknown)}; known: {', '.join(KINDS)}")
    if args.keep:
        args.keep.mkdir(parents=True, exist_ok=True)
    project = Path(tempfile.mkdtemp(prefix="gate_quality_"))
    print(
        f"project: {project}  ({time.strftime('%Y-%m-%d %H:%M')}, {os.cpu_count()} CPUs)",
        flush=True,
    )
    waited = wait_for_quiet(args.quiet_wait)
    before = machine_load()
    record(project, NOISY)
    print(
        f"baseline recorded after waiting {waited:.0f}s: load {before['load']:.1f}, "
        f"CPU pressure {before['pressure']}% before, {machine_load()} after",
        flush=True,
    )
    if args.keep:
        shutil.copy(next((project / "perf-baselines").glob("*.json")), args.keep / "baseline.json")
    outcomes = noisy_runs(args, project)
    print()
    print("\n".join(summarize_noisy(outcomes)))
    if args.keep:
        (args.keep / "outcomes.json").write_text(json.dumps(outcomes, indent=2))


if __name__ == "__main__":
    main()
