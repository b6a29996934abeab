"""What the compile-time gate says about unchanged runs and planted regressions, measured.

    python benchmarks/compile_time.py [--runs 5] [--unchanged 3] [--fact-runs N] [--only NAME ...]
                                      [--device cuda] [--keep DIR [--reuse-baseline]]
                                      [--neighbours synthetic|replay]

Writes a small project in a temporary folder (a two-layer MLP with a ReLU,
under `no_grad`, on Inductor, `@pytest.mark.compile_benchmark(compile_time=True)`),
records its baseline (`--torchcompile-perf-update-baseline`, `--runs` cold and
warm fresh-process compiles), then gates it (`--torchcompile-perf-gate`) with
the test unchanged `--unchanged` times and once with each planted regression:

- `per_process`: a value that differs in every process (a scale read from a
  counter file each process bumps) baked into the graph: a warm start cannot hit;
- `config`: an Inductor config change (`options={"cpp.simdlen": 256}`): the keys move;
- `aot_cache_off`: `torch._functorch.config.enable_autograd_cache = False`;
- `autotune_cache_off`: `max_autotune` with `autotune_local_cache=False`, against a
  `max_autotune` baseline of its own (a test of its own), run only when named in
  `--only`: on this CPU max-autotune chose no template for an fp32 Linear (no
  `select_algorithm_autotune`, with `freezing` too), so it means something on a GPU
  (`--device cuda`);
- `twice_layers`: four layers instead of two (the graph doubles: its facts move);
- `slow_codegen`: Inductor's `GraphLowering.codegen` made to burn, after its own
  work, as much CPU as the baseline's whole cold compile took (its median
  `cold_cpu_s`): a cold compile that costs twice as much, with every fact and key
  unchanged (a warm start runs no codegen, so it is unchanged too).

The planted regressions that move facts (`per_process`, `config`, `aot_cache_off`,
`autotune_cache_off`) need no statistics: `--fact-runs 1` gates them with one pair
each (their CPU rows then say "too few runs", never FAIL), which is what makes the
harness affordable on a loaded machine; `twice_layers` and `slow_codegen` use `--runs`.

Prints one line per run: the run verdict, each compile row's verdict, the
change of cold and warm compile CPU time, the first line that says what moved,
the contention the gate saw, and the seconds the run took; `--json` writes them.
Timings on a shared machine move with the neighbours: say the load with the numbers
(each line ends with the load average and CPU pressure when the run ended).
`--neighbours` gates (not the baseline) beside `benchmarks/neighbours.py`'s load.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from neighbours import KINDS, machine_load, running

INI = """[pytest]
torchcompile_perf_max_time = 0.2
torchcompile_perf_compile_runs = {runs}
"""

TEST = """
from pathlib import Path

import pytest, torch

PLANT = {plant!r}
DEVICE = {device!r}
BURN_S = {burn!r}

if PLANT == "aot_cache_off":
    import torch._functorch.config

    torch._functorch.config.enable_autograd_cache = False
if PLANT == "slow_codegen":
    import time
    from torch._inductor.graph import GraphLowering

    original = GraphLowering.codegen

    def codegen(self, *args, **kwargs):
        result = original(self, *args, **kwargs)
        until = time.process_time() + BURN_S  # the baseline's cold compile CPU once more
        while time.process_time() < until:
            pass
        return result

    GraphLowering.codegen = codegen


def scale():
    if PLANT != "per_process":
        return 1.5
    counter = Path(__file__).with_name("processes.txt")
    seen = int(counter.read_text()) if counter.exists() else 0
    counter.write_text(str(seen + 1))
    return 1.5 + seen / 1000


class MLP(torch.nn.Module):
    def __init__(self, layers, scale):
        super().__init__()
        torch.manual_seed(0)
        self.layers = torch.nn.ModuleList(torch.nn.Linear(64, 64) for _ in range(layers))
        self.scale = scale

    def forward(self, x):
        for layer in self.layers:
            x = torch.relu(layer(x)) * self.scale
        return x


OPTIONS = {{"cpp.simdlen": 256}} if PLANT == "config" else None


@pytest.mark.compile_benchmark(compile_time=True, options=OPTIONS)
def test_mlp(compile_benchmark):
    with torch.no_grad():
        model = MLP(4 if PLANT == "twice_layers" else 2, scale()).to(DEVICE)
        compile_benchmark(model, torch.randn(32, 64, device=DEVICE))


AUTOTUNE = {{"max_autotune": True}}
if PLANT == "autotune_cache_off":
    AUTOTUNE["autotune_local_cache"] = False


@pytest.mark.compile_benchmark(compile_time=True, options=AUTOTUNE)
def test_autotune(compile_benchmark):
    with torch.no_grad():
        compile_benchmark(MLP(2, 1.5).to(DEVICE), torch.randn(32, 64, device=DEVICE))
"""

PLANTS = ("per_process", "config", "aot_cache_off", "twice_layers", "slow_codegen")
AUTOTUNE = "autotune_cache_off"
#: the plants that move facts: judged exactly, with no statistics
FACT_PLANTS = ("per_process", "config", "aot_cache_off", AUTOTUNE)
COMPILE_ROWS = ("compile facts (cold)", "compile facts (warm)", "cache keys")


def pytest_run(
    project: Path, plant: str, test: str, device: str, *flags: str
) -> tuple[dict[str, Any], float]:
    """One pytest run of `test` with `plant`; its JSON report and its seconds."""
    burn = baseline_cold_cpu(project)
    (project / "test_compile.py").write_text(TEST.format(plant=plant, device=device, burn=burn))
    (project / "processes.txt").unlink(missing_ok=True)
    report = project / "report.json"
    report.unlink(missing_ok=True)
    started, cpu = time.perf_counter(), _children_cpu()
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_ADDOPTS"}
    command = [
        sys.executable,
        "-m",
        "pytest",
        f"test_compile.py::{test}",
        "-q",
        "-p",
        "no:cacheprovider",
    ]
    command += [f"--torchcompile-perf-report={report}", *flags]
    done = subprocess.run(command, cwd=project, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    print(
        f"  ({' '.join(flags)}: {seconds:.0f} s wall, {_children_cpu() - cpu:.0f} s CPU)",
        flush=True,
    )
    if not report.exists():
        sys.exit(
            f"pytest wrote no report (exit {done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-2000:]}"
        )
    return json.loads(report.read_text()), seconds


def baseline_cold_cpu(project: Path) -> float:
    """The median cold compile CPU seconds of test_mlp in the project's baseline (0 before one)."""
    for path in sorted((project / "perf-baselines").glob("*.json")):
        for key, case in json.loads(path.read_text())["cases"].items():
            if "test_mlp" in key and "cold_cpu_s" in case["metrics"]:
                return float(case["metrics"]["cold_cpu_s"]["median"])
    return 0.0


def _children_cpu() -> float:
    """CPU seconds of this script's ended children and theirs (pytest and its fresh processes)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def summarize(name: str, report: dict[str, Any], seconds: float) -> dict[str, Any]:
    """The run's verdict, each compile row's, the CPU changes and the first line of what moved."""
    rows = {r["metric"]: r for r in report["rows"]}
    moved = [
        r["note"] for r in report["rows"] if r["verdict"] == "FAIL" and r["metric"] in COMPILE_ROWS
    ]
    moved.sort(key=lambda note: not note.startswith("warm start "))  # as the failure's first line
    cpu = {m: rows.get(m, {}) for m in ("cold_cpu_s", "warm_cpu_s")}
    reasons = sorted(
        {
            r["note"]
            for r in report["rows"]
            if r["note"].startswith(("CPU contention", "this machine"))
        }
    )
    case = next(iter(report["cases"].values()), {})
    block = case.get("compile_time", {})
    warm = block.get("warm", {})
    return {
        "run": name,
        "verdict": report["verdict"],
        "rows": {m: rows[m]["verdict"] for m in (*COMPILE_ROWS, *cpu) if m in rows},
        "cpu_change": {m: r.get("change") for m, r in cpu.items()},
        "cpu_now_s": {m: r.get("now") for m, r in cpu.items()},
        "grew_most": [
            r.get("note", "") for r in cpu.values() if r.get("note", "").startswith("grew")
        ],
        # why a CPU row is undecided: its interval (`possibly slower: +24%, interval ...`)
        "undecided": [
            f"{m.split('_')[0]}: {r['note']}"
            for m, r in cpu.items()
            if r.get("verdict") == "INCONCLUSIVE"
            and not r.get("note", "").startswith(("CPU contention", "this machine"))
        ],
        "moved": moved[0].split("; ")[0] if moved else "",
        "contention": reasons[0] if reasons else "",
        "reference_s": block.get("contention", {}).get("reference_s"),
        "warm": {
            "caches": _outcomes(warm.get("facts", {})),
            "autotune": warm.get("facts", {}).get("autotune"),
            "triton_compile_s": warm.get("triton_compile_s"),
        },
        "seconds": round(seconds, 1),
        "samples": {
            name: values
            for name, values in case.get("samples", {}).items()
            if name.startswith(("cold_", "warm_"))
        },
    }


def spread(values: list[float]) -> str:
    """`2.11 s CV 4%`: the median of a side's runs and their coefficient of variation."""
    if not values:
        return "-"
    cv = statistics.pstdev(values) / statistics.fmean(values) if len(values) > 1 else 0.0
    return f"{statistics.median(values):.3g} s CV {cv:.0%}"


def _outcomes(facts: dict[str, Any]) -> str:
    """`FX 1/0/0 AOT 1/0/0`: each cache's hits/misses/bypasses on the warm side."""
    return " ".join(
        f"{short} "
        + "/".join(str(facts.get(f"{cache}.{o}", "-")) for o in ("hit", "miss", "bypass"))
        for cache, short in (("fx_graph", "FX"), ("aot_autograd", "AOT"))
    )


def show(result: dict[str, Any]) -> str:
    change = ", ".join(
        f"{m.split('_')[0]} {c * 100:+.1f}%"
        for m, c in result["cpu_change"].items()
        if c is not None
    )
    rows = " ".join(f"{m.replace('compile facts ', '')}={v}" for m, v in result["rows"].items())
    parts = [f"{result['run']:<22} {result['verdict'] or '-':<13} {rows}", f"CPU {change}"]
    warm = result["warm"]
    parts.append(f"warm {warm['caches']} autotune {warm['autotune']}")
    if warm["triton_compile_s"] is not None:
        parts[-1] += f" triton compile {warm['triton_compile_s']} s"
    for key in ("grew_most", "undecided", "moved", "contention"):
        if result[key]:
            parts.append(str(result[key]))
    if result["reference_s"] is not None:
        parts.append(f"reference compile {result['reference_s']:.2f} s")
    parts.append(
        "runs: "
        + ", ".join(
            f"{name.removesuffix('_s')} {spread(values)}"
            for name, values in result["samples"].items()
            if "frame" not in name
        )
    )
    return " | ".join(parts) + f" | {result['seconds']} s"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=5, help="cold/warm pairs a side (default 5)")
    parser.add_argument(
        "--unchanged", type=int, default=3, help="gated runs of the unchanged test (default 3)"
    )
    parser.add_argument(
        "--only",
        nargs="*",
        default=list(PLANTS),
        choices=[*PLANTS, AUTOTUNE],
        help="planted regressions to run",
    )
    parser.add_argument("--device", default="cpu", help="where the model runs (cuda on a GPU)")
    parser.add_argument(
        "--fact-runs", type=int, help="pairs for the plants that move facts (default: --runs)"
    )
    parser.add_argument(
        "--reuse-baseline", action="store_true", help="gate against the --keep folder's baseline"
    )
    parser.add_argument(
        "--ignore-contention",
        action="store_true",
        help="judge as if the machine were quiet (--torchcompile-perf-contention=ignore)",
    )
    parser.add_argument(
        "--neighbours",
        choices=KINDS,
        help="gate beside this load (benchmarks/neighbours.py); the baseline is recorded without it",
    )
    parser.add_argument("--keep", type=Path, help="keep the project (its baseline) in this folder")
    parser.add_argument("--json", type=Path, help="write the results as JSON")
    args = parser.parse_args()
    project = args.keep or Path(tempfile.mkdtemp(prefix="compile-time-bench-"))
    project.mkdir(parents=True, exist_ok=True)
    (project / "pytest.ini").write_text(INI.format(runs=args.runs))
    load = os.getloadavg()[0]
    print(
        f"project {project}; load average {load:.1f} on {os.cpu_count()} CPUs; {args.runs} runs a side"
    )
    tests = ["test_mlp"] + (["test_autotune"] if AUTOTUNE in args.only else [])
    for test in tests if not args.reuse_baseline else []:
        update = pytest_run(project, "", test, args.device, "--torchcompile-perf-update-baseline")
        print(show(summarize(f"baseline {test}", *update)), flush=True)
    runs = [(f"unchanged {i + 1}", "") for i in range(args.unchanged)]
    load_beside = running(args.neighbours) if args.neighbours else contextlib.nullcontext()
    with load_beside:
        results = gate_runs(project, runs + [(plant, plant) for plant in args.only], args)
    print(f"load average at the end {os.getloadavg()[0]:.1f}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")
    if not args.keep:
        shutil.rmtree(project, ignore_errors=True)


def gate_runs(project: Path, runs: list[tuple[str, str]], args: argparse.Namespace) -> list[dict]:
    """Each (name, plant) gated once against the project's baseline, printed as it ends."""
    results = []
    for name, plant in runs:
        test = "test_autotune" if plant == AUTOTUNE else "test_mlp"
        pairs = args.fact_runs if plant in FACT_PLANTS and args.fact_runs else args.runs
        flags = ["--torchcompile-perf-gate", f"--torchcompile-perf-compile-runs={pairs}"]
        if args.ignore_contention:
            flags.append("--torchcompile-perf-contention=ignore")
        gated = pytest_run(project, plant, test, args.device, *flags)
        results.append(summarize(name, *gated))
        load = ", ".join(f"{k} {v}" for k, v in machine_load().items())
        print(show(results[-1]) + f" | machine now: {load}", flush=True)
    return results


if __name__ == "__main__":
    main()
