"""What `run_program=True` costs a test: forked from the session's server, or a new interpreter per run.

One pytest session (this script's Python, `--update-snapshots` in a temporary
folder, default artifacts) runs each case below three times, interleaved
case by case in a rotating order so that load on the machine hits all
variants alike:

- `plain`: the test without `run_program`;
- `fork`: `run_program=True`, the run forked from the session's fork server;
- `spawn`: `run_program=True` with `PTC_FORK_SERVER=0`, a new Python
  interpreter per run (the isolation as it was before the fork server).

`--server-without-inductor` runs the session as on a GPU machine whose CUDA
driver starts a thread when Inductor's `compile_fx` is imported (an H100
with torch 2.11): a `sitecustomize` starts a thread there in the fork
server's processes, so the server starts itself again without that import
and each forked run imports Inductor itself. `--device cuda` runs the cases
on the GPU. Each run's `program_report.started` is counted: on any machine
every `fork` run must say `forked`, never `new interpreter`.

Each test's time is pytest's setup + call + teardown. The script prints, per
variant, the median test time, the ratio of medians to `plain`, and the
median and worst of the per-case ratios, with the load average before and
after. The first `fork` test waits for the server to import torch (it starts
when the first case that needs it starts compiling); its time is printed
apart and stays in the medians.

    python benchmarks/fresh_runs.py                     # aot_eager, every case
    python benchmarks/fresh_runs.py --backend inductor  # Inductor's C++ kernels loaded in each run
    python benchmarks/fresh_runs.py --cases 10 --variants plain,fork
    python benchmarks/fresh_runs.py --cases 12 --variants plain,fork --server-without-inductor
    python benchmarks/fresh_runs.py --cases 12 --device cuda            # on a GPU machine
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

REPO = Path(__file__).resolve().parents[1]
VARIANTS = ("plain", "fork", "spawn")


# --- the cases: small functions and modules, as compiler tests have them -------


def add_mul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return a + b * 2


def trig(x: torch.Tensor) -> torch.Tensor:
    return torch.sin(x) * torch.cos(x) + 1


def reductions(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    return x.sum(dim=0), x.mean()


def softmax_rows(x: torch.Tensor) -> torch.Tensor:
    return torch.softmax(x, dim=-1)


def branch_on_shape(x: torch.Tensor) -> torch.Tensor:
    if x.shape[0] > 2:
        return x * 3
    return x - 3


def branch_on_value(x: torch.Tensor) -> torch.Tensor:
    y = torch.tanh(x)
    if y.sum() > 0:  # a graph break: a resume frame of its own
        return y * 2
    return -y


def scaled(x: torch.Tensor, *, scale: float = 2.0) -> torch.Tensor:
    return torch.relu(x) * scale


def sum_list(xs: list[torch.Tensor]) -> torch.Tensor:
    total = xs[0]
    for x in xs[1:]:
        total = total + x
    return total


def dict_out(x: torch.Tensor) -> dict[str, torch.Tensor]:
    return {"double": x * 2, "square": x * x}


def where_clamp(x: torch.Tensor) -> torch.Tensor:
    return torch.where(x > 0, x.clamp(max=0.5), x * 0.1)


def cat_split(a: torch.Tensor, b: torch.Tensor) -> tuple[torch.Tensor, ...]:
    return torch.cat([a, b], dim=1).split(3, dim=1)


def transpose_view(x: torch.Tensor) -> torch.Tensor:
    return x.t().contiguous().view(-1) + 1


def cumulative(x: torch.Tensor) -> torch.Tensor:
    return torch.cumsum(x, dim=0) / (1 + torch.arange(x.shape[0], device=x.device))[:, None]


def python_scalar(x: torch.Tensor, n: int) -> torch.Tensor:
    return x * n + n


def unrolled_loop(x: torch.Tensor) -> torch.Tensor:
    for i in range(3):
        x = x * (i + 1) - 1
    return x


def _inner(x: torch.Tensor) -> torch.Tensor:
    return torch.sigmoid(x) * x


def nested_call(x: torch.Tensor) -> torch.Tensor:
    return _inner(x) + _inner(x * 2)


def matmul_relu(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return torch.relu(a @ b)


class MLP(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(16, 32), nn.Linear(32, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(F.gelu(self.fc1(x)))


class ConvReLU(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.relu(self.conv(x))


class NormGelu(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.norm, self.lin = nn.LayerNorm(16), nn.Linear(16, 16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.gelu(self.lin(self.norm(x)))


class EmbedProject(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed, self.proj = nn.Embedding(20, 8), nn.Linear(8, 3)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.proj(self.embed(ids)).mean(dim=1)


class RunningMean(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("mean", torch.zeros(8))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.mean.mul_(0.9).add_(x.mean(dim=0) * 0.1)
        return x - self.mean


def cases(device: str = "cpu") -> dict[str, tuple[Any, tuple[Any, ...], dict[str, Any], bool]]:
    """name -> (model or function, args, kwargs, grad mode), each built from seed 0, on `device`."""
    return {name: _on(device, case) for name, case in _cases().items()}


def _on(device: str, case: tuple[Any, tuple[Any, ...], dict[str, Any], bool]) -> Any:
    model, args, kwargs, grad = case
    if isinstance(model, nn.Module):
        model = model.to(device)
    moved = [a.to(device) if isinstance(a, torch.Tensor) else a for a in args]
    moved = [[t.to(device) for t in a] if isinstance(a, list) else a for a in moved]
    return model, tuple(moved), kwargs, grad


def _cases() -> dict[str, tuple[Any, tuple[Any, ...], dict[str, Any], bool]]:
    torch.manual_seed(0)
    r = torch.randn
    return {
        "add_mul": (add_mul, (r(4, 4), r(4, 4)), {}, False),
        "trig": (trig, (r(8),), {}, False),
        "reductions": (reductions, (r(5, 3),), {}, False),
        "softmax_rows": (softmax_rows, (r(4, 6),), {}, False),
        "branch_on_shape": (branch_on_shape, (r(4, 2),), {}, False),
        "branch_on_value": (branch_on_value, (r(4, 2),), {}, False),
        "scaled_kwargs": (scaled, (r(6),), {"scale": 3.0}, False),
        "sum_list": (sum_list, ([r(3), r(3), r(3)],), {}, False),
        "dict_out": (dict_out, (r(5),), {}, False),
        "where_clamp": (where_clamp, (r(10),), {}, False),
        "cat_split": (cat_split, (r(2, 3), r(2, 3)), {}, False),
        "transpose_view": (transpose_view, (r(3, 4),), {}, False),
        "cumulative": (cumulative, (r(6, 2),), {}, False),
        "python_scalar": (python_scalar, (r(4), 3), {}, False),
        "unrolled_loop": (unrolled_loop, (r(4),), {}, False),
        "nested_call": (nested_call, (r(4, 4),), {}, False),
        "matmul_relu": (matmul_relu, (r(4, 8), r(8, 2)), {}, False),
        "mlp_inference": (MLP(), (r(4, 16),), {}, False),
        "mlp_training": (MLP(), (r(4, 16),), {}, True),
        "conv_relu": (ConvReLU(), (r(1, 3, 8, 8),), {}, False),
        "norm_gelu_training": (NormGelu(), (r(2, 16),), {}, True),
        "embed_project": (EmbedProject(), (torch.randint(0, 20, (2, 5)),), {}, False),
        "running_mean": (RunningMean(), (r(4, 8),), {}, False),
        "trig_training": (trig, (r(8, requires_grad=True),), {}, True),
    }


# --- the session -----------------------------------------------------------------

TEST = """
import os, sys, pytest, torch
sys.path.insert(0, {repo!r})
from benchmarks.fresh_runs import cases

ORDER = {order!r}

@pytest.mark.parametrize(
    "name,variant",
    [
        pytest.param(name, variant, marks=pytest.mark.compile_snapshot(
            backend={backend!r}, run_program=variant != "plain"), id=f"{{name}}-{{variant}}")
        for name, variant in ORDER
    ],
)
def test_case(compile_model, monkeypatch, name, variant):
    if variant == "spawn":
        monkeypatch.setenv("PTC_FORK_SERVER", "0")
    model, args, kwargs, grad = cases({device!r})[name]
    with torch.set_grad_enabled(grad):
        result = compile_model(model, *args, **kwargs)
    if result.program_report is not None:
        with open(os.environ["FRESH_RUNS_STARTED"], "a") as out:
            out.write(f"{{variant}} {{' '.join(s.replace(' ', '_') for s in result.program_report.started)}}\\n")
"""

#: a GPU driver whose thread starts when Inductor's compile_fx is imported, in the fork server's
#: processes alone (`--server-without-inductor`)
DRIVER = REPO / "tests" / "data" / "gpu_driver_sitecustomize.py"

CONFTEST = """
import json, os

def pytest_runtest_logreport(report):
    with open(os.environ["FRESH_RUNS_TIMES"], "a") as out:
        out.write(json.dumps([report.nodeid, report.when, report.duration, report.outcome]) + "\\n")
"""


def interleaved(names: list[str], variants: list[str]) -> list[tuple[str, str]]:
    """Case by case, the variants in a rotating order (each leads as often as the others)."""
    order = []
    for i, name in enumerate(names):
        turn = variants[i % len(variants) :] + variants[: i % len(variants)]
        order.extend((name, variant) for variant in turn)
    return order


def run_session(
    names: list[str], variants: list[str], backend: str, device: str, driver: bool
) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="fresh_runs_") as folder:
        project = Path(folder)
        order = interleaved(names, variants)
        (project / "test_fresh_runs.py").write_text(
            TEST.format(repo=str(REPO), order=order, backend=backend, device=device)
        )
        (project / "conftest.py").write_text(CONFTEST)
        site = project / "site"
        site.mkdir()
        if driver:
            (site / "sitecustomize.py").write_text(DRIVER.read_text())
        times, started = project / "times.jsonl", project / "started.txt"
        started.touch()
        env = {**os.environ, "FRESH_RUNS_TIMES": str(times), "FRESH_RUNS_STARTED": str(started)}
        env["PYTHONPATH"] = os.pathsep.join([str(site), str(REPO), env.get("PYTHONPATH", "")])
        load_before = os.getloadavg()
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--update-snapshots",
             "-W", "ignore", "--rootdir", folder, str(project)],
            cwd=folder, env=env, capture_output=True, text=True,
        )  # fmt: skip
        load_after = os.getloadavg()
        if done.returncode != 0:
            sys.stderr.write(done.stdout[-6000:] + done.stderr[-3000:])
        records = [json.loads(line) for line in times.read_text().splitlines()]
        runs = started.read_text().splitlines()
    return {
        "records": records,
        "load": (load_before, load_after),
        "rc": done.returncode,
        "started": runs,
    }


def per_test(records: list[list[Any]]) -> dict[tuple[str, str], float]:
    """(case, variant) -> setup + call + teardown seconds of tests that passed."""
    seconds: dict[tuple[str, str], float] = {}
    failed = set()
    for nodeid, _, duration, outcome in records:
        name, variant = nodeid.split("[", 1)[1].rstrip("]").rsplit("-", 1)
        seconds[name, variant] = seconds.get((name, variant), 0.0) + duration
        if outcome != "passed":
            failed.add((name, variant))
    for key in sorted(failed):
        print(f"  (failed, left out: {key[0]} {key[1]})")
    return {key: value for key, value in seconds.items() if key not in failed}


def report(
    session: dict[str, Any], names: list[str], variants: list[str], backend: str, setup: str
) -> None:
    seconds = per_test(session["records"])
    (b1, b5, b15), (a1, a5, a15) = session["load"]
    print(
        f"run_program cost, {backend}, {setup}, {len(names)} cases x {len(variants)} variants interleaved, one session; "
        f"torch {torch.__version__}, Python {platform.python_version()}, {os.cpu_count()} CPU cores; "
        f"load average before {b1:.1f}/{b5:.1f}/{b15:.1f}, after {a1:.1f}/{a5:.1f}/{a15:.1f}"
    )
    plain = statistics.median(seconds[n, "plain"] for n in names if (n, "plain") in seconds)
    print(
        f"{'variant':<8} {'median s':>9} {'x plain':>8} {'median of ratios':>17} {'worst ratio':>12}"
    )
    for variant in variants:
        both = [n for n in names if (n, variant) in seconds and (n, "plain") in seconds]
        median = statistics.median(seconds[n, variant] for n in both)
        ratios = [seconds[n, variant] / seconds[n, "plain"] for n in both]
        print(
            f"{variant:<8} {median:9.3f} {median / plain:8.2f} {statistics.median(ratios):17.2f} {max(ratios):12.2f}"
        )
    if "fork" in variants:
        first = next(n for n in names if (n, "fork") in seconds)
        print(
            f"first fork test (waits for the server to start): {first} {seconds[first, 'fork']:.2f} s"
        )
    for variant in variants[1:]:
        runs = [
            r for line in session["started"] if line.split()[0] == variant for r in line.split()[1:]
        ]
        counted = {how: runs.count(how) for how in sorted(set(runs))}
        print(f"{variant} runs started: {counted or 'none'}")


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="aot_eager")
    parser.add_argument("--cases", type=int, default=None, help="the first N cases only")
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--device", default="cpu")
    parser.add_argument(
        "--server-without-inductor",
        action="store_true",
        help="a thread starts when the fork server imports compile_fx, as a GPU driver's does",
    )
    options = parser.parse_args(argv)
    names = list(cases())[: options.cases]
    variants = options.variants.split(",")
    if "plain" not in variants:
        variants.insert(0, "plain")
    driver = options.server_without_inductor
    session = run_session(names, variants, options.backend, options.device, driver)
    setup = f"on {options.device}" + (
        ", a server without Inductor (a driver thread)" if driver else ""
    )
    report(session, names, variants, options.backend, setup)


if __name__ == "__main__":
    main(sys.argv[1:])
