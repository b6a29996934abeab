"""Noisy neighbours for the perf gate's benchmark: processes that keep the machine busy.

- `synthetic`: per CPU, a spinning process, a torch loop of matmuls on all
  CPUs' threads and a loop of cold Inductor compiles (caches off), which is
  what the other jobs of a shared CI runner do;
- `replay`: real load, the plugin's own zoo suite (`pytest fixtures -n <CPUs>`)
  run again and again, as when another test suite shares the machine.

Each neighbour is started in its own process group and stopped by killing
that group, so compile workers it forked stop with it. `machine_load()` reads
what the machine was doing (load average, CPU pressure), for the records.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CPUS = os.cpu_count() or 1

SPIN = "while True:\n    pass\n"
TORCH_LOOP = f"""
import torch
torch.set_num_threads({CPUS})
a = torch.randn(1024, 1024)
while True:
    a @ a
"""
COMPILE_LOOP = """
import itertools, torch
torch._inductor.config.force_disable_caches = True
for i in itertools.count():
    torch._dynamo.reset()
    def f(x, k=float(i % 97 + 1)):
        return torch.sin(x * k).cos() + torch.relu(x) * k
    torch.compile(f)(torch.randn(256 + i % 64))
"""
REPLAY = "import subprocess, sys\nwhile True:\n    subprocess.run(sys.argv[1:])\n"

KINDS = ("synthetic", "replay")


def commands(kind: str) -> list[list[str]]:
    """The processes of one kind of neighbour."""
    python = sys.executable
    if kind == "synthetic":
        per_cpu = [[python, "-c", SPIN], [python, "-c", TORCH_LOOP], [python, "-c", COMPILE_LOOP]]
        return [command for _ in range(CPUS) for command in per_cpu]
    if kind == "replay":
        suite = [
            python,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-n",
            str(CPUS),
            "fixtures",
        ]
        return [[python, "-c", REPLAY, *suite]]
    raise ValueError(f"unknown neighbour {kind!r}: use one of {', '.join(KINDS)}")


@contextmanager
def running(kind: str, settle: float = 15.0) -> Iterator[None]:
    """Run the neighbour for the duration of the block (after `settle` seconds of warm-up)."""
    env = dict(os.environ, PYTHONPATH=str(REPO), PYTHONDONTWRITEBYTECODE="1")
    processes = [
        subprocess.Popen(
            command,
            cwd=REPO,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        for command in commands(kind)
    ]
    try:
        time.sleep(settle)
        yield
    finally:
        for process in processes:
            try:
                os.killpg(process.pid, signal.SIGKILL)  # the group this script started
            except ProcessLookupError:
                pass
            process.wait()


def machine_load() -> dict[str, float | None]:
    """The 1-minute load average and the CPU pressure ("some", avg10, in %) now."""
    return {"load": os.getloadavg()[0], "pressure": pressure_avg10()}


def pressure_avg10() -> float | None:
    try:
        with open("/proc/pressure/cpu", encoding="ascii") as handle:
            first = handle.readline()
    except OSError:
        return None
    fields = dict(part.split("=") for part in first.split()[1:])
    return float(fields["avg10"])


def wait_for_quiet(limit: float, pressure: float = 20.0, poll: float = 5.0) -> float:
    """Wait up to `limit` seconds for CPU pressure below `pressure` %; the seconds waited."""
    started = time.monotonic()
    while time.monotonic() - started < limit:
        now = pressure_avg10()
        if now is None or now < pressure:
            break
        time.sleep(poll)
    return time.monotonic() - started
