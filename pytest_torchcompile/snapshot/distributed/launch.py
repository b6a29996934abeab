"""Start a case's ranks, wait for them within the case's timeout, and say what went wrong.

Each rank is a new interpreter (`rank.py`) in a session of its own (so it
and whatever it starts, Inductor's compile workers, are stopped together),
with its output in files of a temporary folder that also holds the file
store the ranks meet at: no port, so nothing clashes under xdist, and
nothing is left once the case is done. The ranks get `START_LIMIT_S` to
start (an interpreter, torch's import) and join the process group; the
case's timeout counts from when all have. A rank that fails stops the
others at once and the test fails with its error and traceback; at the
deadline every rank still running writes its stack (SIGUSR1) and is killed.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from ..fresh_process.servers import child_env
from .report import JOINED_FILE, REQUEST_FILE, SETUP_FILE, RankReport

RANK_MODULE = "pytest_torchcompile.snapshot.distributed.rank"
#: seconds the ranks may take to start and join the process group (torch's import, on a busy machine)
START_LIMIT_S = 300.0
_POLL_S = 0.05
#: seconds a rank gets to write its stack before it is killed
_STACK_WAIT_S = 2.0
_TAIL_LINES = 30
#: lines of a hung rank's stacks shown (the main thread's comes first)
_STACK_LINES = 60


class RanksFailed(Exception):
    """A rank crashed, failed or hung; the message names it and shows its error."""


@dataclass
class Rank:
    """One running rank: its process and its output files."""

    index: int
    process: subprocess.Popen[bytes]
    folder: Path

    @property
    def stderr(self) -> Path:
        return self.folder / f"rank{self.index}.stderr"

    def tail(self, lines: int = _TAIL_LINES) -> str:
        """The last `lines` lines of its stderr."""
        return "\n".join(self.since(0).splitlines()[-lines:])

    def since(self, start: int) -> str:
        """Its stderr from byte `start` on."""
        if not self.stderr.is_file():
            return ""
        with open(self.stderr, "rb") as handle:
            handle.seek(start)
            return handle.read().decode(errors="replace").strip()

    def written(self) -> int:
        return self.stderr.stat().st_size if self.stderr.is_file() else 0

    def stop(self) -> None:
        """Kill it and everything it started; reap it."""
        if self.process.poll() is None:
            for kill in (os.killpg, os.kill):
                try:
                    kill(self.process.pid, signal.SIGKILL)
                    break
                except (ProcessLookupError, PermissionError):
                    continue
        self.process.wait()


def run_ranks(request: bytes, world_size: int, backend: str, timeout_s: float) -> list[RankReport]:
    """Every rank's report, once all exited cleanly; `RanksFailed` otherwise. Leaves nothing behind."""
    folder = Path(tempfile.mkdtemp(prefix="torchcompile_ranks_"))
    try:
        setup = {"world_size": world_size, "backend": backend, "timeout_s": timeout_s}
        (folder / SETUP_FILE).write_text(json.dumps(setup))
        (folder / REQUEST_FILE).write_bytes(request)
        ranks: list[Rank] = []
        try:
            ranks = [_start(folder, index, world_size) for index in range(world_size)]
            _wait(ranks, folder, timeout_s)
        finally:
            for rank in ranks:
                rank.stop()
        reports = [RankReport.load(folder, rank.index) for rank in ranks]
        return [r if r is not None else _no_report(rank) for r, rank in zip(reports, ranks)]
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _start(folder: Path, index: int, world_size: int) -> Rank:
    env = {
        **child_env(),
        "RANK": str(index),
        "LOCAL_RANK": str(index),
        "WORLD_SIZE": str(world_size),
    }
    with (
        open(folder / f"rank{index}.stdout", "wb") as out,
        open(folder / f"rank{index}.stderr", "wb") as err,
    ):
        process = subprocess.Popen(
            [sys.executable, "-m", RANK_MODULE, str(folder), str(index), str(os.getpid())],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=err,
            start_new_session=True,
        )
    return Rank(index, process, folder)


def _wait(ranks: list[Rank], folder: Path, timeout_s: float) -> None:
    """Return once every rank exited with 0; raise `RanksFailed` at the first failure or deadline."""
    start_deadline, deadline = time.monotonic() + START_LIMIT_S, None
    while True:
        codes = [rank.process.poll() for rank in ranks]
        failed = [rank for rank, code in zip(ranks, codes) if code not in (None, 0)]
        if failed:
            raise RanksFailed(_failure(failed[0], ranks, folder))
        if all(code == 0 for code in codes):
            return
        now = time.monotonic()
        if deadline is None and all(
            (folder / JOINED_FILE.format(rank=r.index)).exists() for r in ranks
        ):
            deadline = now + timeout_s
        if deadline is None and now > start_deadline:
            raise RanksFailed(_late(ranks, folder))
        if deadline is not None and now > deadline:
            raise RanksFailed(_hung(ranks, timeout_s))
        time.sleep(_POLL_S)


def _failure(rank: Rank, ranks: list[Rank], folder: Path) -> str:
    """The first failed rank's error (its report, or how it died and its stderr)."""
    report = RankReport.load(folder, rank.index)
    others = [r.index for r in ranks if r is not rank and r.process.poll() is None]
    stopped = f"\n(stopped the ranks still running: {_names(others)})" if others else ""
    if report is not None and report.failure is not None:
        return f"rank {rank.index}: {report.failure}{stopped}"
    if report is not None and report.error is not None:
        return f"rank {rank.index} raised:\n{report.error.rstrip()}{stopped}"
    return f"rank {rank.index} {_exit(rank.process.returncode)} without a report:\n{rank.tail()}{stopped}"


def _hung(ranks: list[Rank], timeout_s: float) -> str:
    """The ranks still running at the deadline, each with the stack it wrote when asked."""
    running = [r for r in ranks if r.process.poll() is None]
    before = {r.index: r.written() for r in running}
    for rank in running:
        try:
            os.kill(rank.process.pid, signal.SIGUSR1)
        except ProcessLookupError:
            pass
    time.sleep(_STACK_WAIT_S)
    lines = [
        f"{_names([r.index for r in running])} did not finish within the case's timeout "
        f"({timeout_s:g} s after every rank joined; compile_distributed(..., timeout=...) sets it): "
        "killed; where each was:"
    ]
    for rank in running:
        stack = rank.since(before[rank.index]).splitlines()
        more = [f"... {len(stack) - _STACK_LINES} more lines"] if len(stack) > _STACK_LINES else []
        lines += [f"rank {rank.index}:", *(stack[:_STACK_LINES] or ["(it wrote no stack)"]), *more]
    return "\n".join(lines)


def _late(ranks: list[Rank], folder: Path) -> str:
    waiting = [r.index for r in ranks if not (folder / JOINED_FILE.format(rank=r.index)).exists()]
    tails = [f"rank {r.index}'s stderr:\n{r.tail()}" for r in ranks if r.index in waiting]
    return "\n".join(
        [
            f"{_names(waiting)} did not start and join the process group in {START_LIMIT_S:.0f} s:",
            *tails,
        ]
    )


def _no_report(rank: Rank) -> RankReport:
    raise RanksFailed(f"rank {rank.index} exited without a report:\n{rank.tail()}")


def _names(indices: list[int]) -> str:
    if len(indices) == 1:
        return f"rank {indices[0]}"
    return "ranks " + ", ".join(map(str, indices[:-1])) + f" and {indices[-1]}"


def _exit(code: int | None) -> str:
    if code is not None and code < 0:
        try:
            return f"was killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    return f"exited with status {code}"
