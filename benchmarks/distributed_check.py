"""The distributed cases' rehearsal: record, re-run four ways, plant changes and faults.

    python benchmarks/distributed_check.py [--backend inductor|aot_eager] [--keep DIR]

A project of three cases (DDP with 1 MB buckets, FSDP2 over the whole model,
FSDP2 compiled layer by layer; two gloo ranks each) is recorded with a cold
Inductor cache, then re-run without `--update-snapshots`: warm with another
hash seed, copied to another path with another cold cache, and under
`pytest -n 2`. Each re-run must pass and write nothing. Then each planted
change (a graph break in the model, another bucket size, ReLU -> GELU, a
recompile on rank 1 alone) must fail its case, and a crashing and a hanging
rank must fail theirs; the script prints each failure's first line and the
seconds each run and case took (`--durations`), which docs/distributed.md
quotes. Exit status 1 when any step did not go as said.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PROJECT = """
import os
import time

import pytest
import torch
import torch.distributed as dist
from torch import nn

PLANT = os.environ.get("PLANT", "")
ACTIVATION = torch.nn.functional.gelu if PLANT == "swap" else torch.relu


class Block(nn.Module):
    def __init__(self, width=512):
        super().__init__()
        self.lin = nn.Linear(width, width)
        self.scale = 1.0

    def forward(self, x):
        return ACTIVATION(self.lin(x) * self.scale)


class Net(nn.Module):
    def __init__(self, depth=4):
        super().__init__()
        self.layers = nn.ModuleList([Block() for _ in range(depth)])

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x.sum()


class Broken(Net):
    def forward(self, x):
        x = self.layers[0](x)
        torch._dynamo.graph_break()
        for layer in self.layers[1:]:
            x = layer(x)
        return x.sum()


def ddp_model():
    return Broken() if PLANT == "break" else Net()


def per_layer_model():
    net = Net()
    if PLANT == "rank_recompile" and dist.get_rank() == 1:
        net.layers[3].scale = 2.0
    return net


@pytest.mark.compile_snapshot(backend=BACKEND)
def test_ddp(compile_distributed):
    bucket = 2 if PLANT == "bucket" else 1
    compile_distributed(ddp_model, torch.randn(8, 512), wrapper="ddp", bucket_cap_mb=bucket)


@pytest.mark.compile_snapshot(backend=BACKEND)
def test_fsdp2_whole(compile_distributed):
    compile_distributed(Net, torch.randn(8, 512), wrapper="fsdp2")


@pytest.mark.compile_snapshot(backend=BACKEND)
def test_fsdp2_per_layer(compile_distributed):
    compile_distributed(per_layer_model, torch.randn(8, 512), wrapper="fsdp2_per_layer")
"""

FAULTS = """
import time

import pytest
import torch
import torch.distributed as dist
from torch import nn


class Crash(nn.Linear):
    def forward(self, x):
        if dist.get_rank() == 1:
            raise RuntimeError("rank 1 ran out of luck, as planted")
        return super().forward(x)


class Hang(nn.Linear):
    def forward(self, x):
        if dist.get_rank() == 1:
            time.sleep(600)
        return super().forward(x)


@pytest.mark.compile_snapshot(backend="aot_eager")
def test_crash(compile_distributed):
    compile_distributed(Crash, torch.randn(8, 64), 64, 64)


def hang():
    return Hang(64, 64)


@pytest.mark.compile_snapshot(backend="aot_eager")
def test_hang(compile_distributed):
    compile_distributed(hang, torch.randn(8, 64), timeout=30)
"""

#: (plant, the test it changes, what its failure's first line must say)
PLANTS = (
    ("break", "test_ddp", r"graph breaks 3 -> 4"),
    ("bucket", "test_ddp", r"ops: -bucket_3"),
    ("swap", "test_ddp", r"ops: relu -> gelu"),
    (
        "rank_recompile",
        "test_fsdp2_per_layer",
        r"rank 1 compiled differently from rank 0: .*recompiles 1 -> 2",
    ),
)


def digest(root: Path) -> str:
    files = sorted(p for p in root.rglob("*") if p.is_file())
    return hashlib.sha256(
        b"".join(p.read_bytes() + str(p.relative_to(root)).encode() for p in files)
    ).hexdigest()


def pytest_run(cwd: Path, *args: str, **env: str) -> tuple[subprocess.CompletedProcess[str], float]:
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--durations=0", *args],
        cwd=cwd,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
    )
    return done, time.monotonic() - started


def durations(output: str) -> dict[str, float]:
    """test name -> seconds of its call phase, from `--durations=0`."""
    calls = re.finditer(r"^([\d.]+)s call\s+\S+::(\w+)", output, re.M)
    return {m.group(2): float(m.group(1)) for m in calls}


def first_lines(output: str) -> dict[str, str]:
    """Each failed test's first line of failure text (after its `____ test ____` header)."""
    found = {}
    for match in re.finditer(r"^_+ (\w+) _+\n(.*)$", output, re.M):
        found[match.group(1)] = match.group(2)
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", default="inductor")
    parser.add_argument("--keep", type=Path, help="leave the projects in this folder")
    options = parser.parse_args()
    base = Path(options.keep or tempfile.mkdtemp(prefix="distributed_check_"))
    project = base / "project"
    project.mkdir(parents=True, exist_ok=True)
    (project / "test_dist.py").write_text(PROJECT.replace("BACKEND", repr(options.backend)))
    ok = True

    def step(
        name: str, passed: bool, done: subprocess.CompletedProcess[str], seconds: float
    ) -> None:
        nonlocal ok
        ok &= passed
        cases = ", ".join(f"{k} {v:.1f} s" for k, v in durations(done.stdout).items())
        print(f"{'ok  ' if passed else 'FAIL'} {name}: {seconds:.0f} s ({cases})", flush=True)
        if not passed:
            print(done.stdout[-4000:], done.stderr[-2000:], sep="\n")

    cold = str(base / "cache-cold")
    done, seconds = pytest_run(project, "--update-snapshots", TORCHINDUCTOR_CACHE_DIR=cold)
    step("record (cold cache)", done.returncode == 0, done, seconds)
    recorded = digest(project / "snapshots")
    reruns = [
        (
            "re-run warm, PYTHONHASHSEED=1",
            project,
            (),
            {"TORCHINDUCTOR_CACHE_DIR": cold, "PYTHONHASHSEED": "1"},
        ),
        (
            "another path, cold cache, PYTHONHASHSEED=0",
            base / "moved",
            (),
            {"TORCHINDUCTOR_CACHE_DIR": str(base / "cache-2"), "PYTHONHASHSEED": "0"},
        ),
        (
            "-n 2, PYTHONHASHSEED=2",
            project,
            ("-n", "2"),
            {"TORCHINDUCTOR_CACHE_DIR": cold, "PYTHONHASHSEED": "2"},
        ),
    ]
    shutil.copytree(project, base / "moved")
    for name, cwd, args, env in reruns:
        done, seconds = pytest_run(cwd, *args, **env)
        step(name, done.returncode == 0 and digest(cwd / "snapshots") == recorded, done, seconds)
    for plant, test, expected in PLANTS:
        done, seconds = pytest_run(project, "-k", test, PLANT=plant, TORCHINDUCTOR_CACHE_DIR=cold)
        line = first_lines(done.stdout).get(test, "")
        print(f"     {plant}: {line[:200]}")
        step(
            f"planted {plant}",
            bool(re.search(expected, line)) and digest(project / "snapshots") == recorded,
            done,
            seconds,
        )
    faults = base / "faults"
    faults.mkdir(exist_ok=True)
    (faults / "test_faults.py").write_text(FAULTS)
    done, seconds = pytest_run(faults)
    lines = first_lines(done.stdout)
    for test, line in sorted(lines.items()):
        print(f"     {test}: {line[:200]}")
    expected = {
        "test_crash": "rank 1 raised:",
        "test_hang": "did not finish within the case's timeout (30 s",
    }
    step(
        "a crashing and a hanging rank",
        all(want in lines.get(t, "") for t, want in expected.items()),
        done,
        seconds,
    )
    leftovers = [p.name for p in Path(tempfile.gettempdir()).glob("torchcompile_ranks_*")]
    print(f"rank folders left in {tempfile.gettempdir()}: {leftovers or 'none'}")
    if not options.keep:
        shutil.rmtree(base, ignore_errors=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
