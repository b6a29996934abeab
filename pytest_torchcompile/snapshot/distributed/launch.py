"""Start a case's ranks, wait for them within the case's timeout, and say what went wrong.

Each rank (`rank.py`, started by `starter.py`) leads a session of its own
(so it and whatever it starts, Inductor's compile workers, are stopped
together), with its output in files of a temporary folder that also holds
the file store the ranks meet at: no port, so nothing clashes under xdist,
and nothing is left once the case is done. The ranks get `START_LIMIT_S` to
start (an interpreter, torch's import) and join the process group; the
case's timeout counts from when all have. A rank that fails stops the
others at once and the test fails with its error and traceback; at the
deadline every rank still running writes its stack (SIGUSR1) and is killed.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import signal
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from .report import JOINED_FILE, REPORT_FILE, REQUEST_FILE, SETUP_FILE, RankReport
from .starter import RankProcess, start_rank

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
    process: RankProcess
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

    @property
    def report_file(self) -> Path:
        return self.folder / REPORT_FILE.format(rank=self.index)

    @property
    def reported(self) -> bool:
        return self.report_file.exists()

    def reported_at(self) -> float:
        """When it wrote its report (never: infinitely late)."""
        return self.report_file.stat().st_mtime if self.reported else math.inf

    def written(self) -> int:
        return self.stderr.stat().st_size if self.stderr.is_file() else 0

    def stop(self) -> None:
        """Kill it and what it started (its session: Inductor's compile workers), even once it
        exited; reap it."""
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            if self.process.poll() is None:  # not its session's leader yet
                os.kill(self.process.pid, signal.SIGKILL)
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
            for index in range(world_size):
                ranks.append(Rank(index, start_rank(folder, index, world_size), folder))
            _wait(ranks, folder, timeout_s)
        finally:
            for rank in ranks:
                rank.stop()
        reports = [RankReport.load(folder, rank.index) for rank in ranks]
        failed = [rank for rank, r in zip(ranks, reports) if r is None or not r.ran]
        if failed:
            raise RanksFailed(_first_failure(failed, [], folder))
        return [r for r in reports if r is not None]
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _wait(ranks: list[Rank], folder: Path, timeout_s: float) -> None:
    """Return once every rank exited with 0 or wrote its report (one that hangs on its way out
    is stopped); raise `RanksFailed` at the first failure or deadline."""
    start_deadline, deadline = time.monotonic() + START_LIMIT_S, None
    while True:
        codes = [rank.process.poll() for rank in ranks]
        failed = [rank for rank, code in zip(ranks, codes) if code not in (None, 0)]
        if failed:
            running = [r.index for r, code in zip(ranks, codes) if code is None]
            raise RanksFailed(_first_failure(failed, running, folder))
        if all(code == 0 or rank.reported for rank, code in zip(ranks, codes)):
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


def _first_failure(failed: list[Rank], running: list[int], folder: Path) -> str:
    """The error of the rank that failed first (by its report's time: a peer's crash makes the
    others' collectives fail right after), then a line for each other failed rank."""
    first = min(failed, key=lambda rank: rank.reported_at())
    text = _failure(first, RankReport.load(folder, first.index), running)
    for rank in failed:
        if rank is not first:
            report = RankReport.load(folder, rank.index)
            last = (report.error or report.failure or "") if report is not None else ""
            after = last.strip().splitlines()[-1:] or [_exit(rank.process.returncode)]
            text += f"\n(rank {rank.index} failed too, after it: {after[0]})"
    return text


def _failure(rank: Rank, report: RankReport | None, running: list[int]) -> str:
    """A failed rank's error (its report, or how it died and its stderr)."""
    stopped = f"\n(stopped the ranks still running: {_names(running)})" if running else ""
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
