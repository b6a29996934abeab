"""The caller's side of one fork server (`zygote.py`): requests out, replies checked, any doubt ends it.

Each request carries a number, and each reply must be the expected one for
that number. A reply that is not (a line that is not JSON, a reply to
another request, a key missing: a child wrote into the server's reply pipe),
or a call past its time limit, ends the server and its child at once and
fails that call alone, saying which; the next call gets a new server, so no
later call can read a reply meant for another.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Hashable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from .folders import OwnedFolder
from .lines import Garbled, Lines, send
from .settings import time_limit, timed_out, working_folder

ZYGOTE = "pytest_torchcompile.snapshot.fresh_process.zygote"
#: the server's own environment on top of the caller's: numpy's OpenBLAS starts no thread pool,
#: and torch asks NVML, not the CUDA driver, whether CUDA is available (the driver starts a thread)
SERVER_ONLY = {"OPENBLAS_NUM_THREADS": "1", "PYTORCH_NVML_BASED_CUDA_CHECK": "1"}
#: seconds the server may take to import torch and Inductor (not counted in a call's limit)
START_TIMEOUT_S = 600.0
_TAIL_LINES = 15


class FreshProcessFailed(Exception):
    """The fresh process exited without an answer, or could not be started; the message says how."""


class ForkRefused(FreshProcessFailed):
    """The fork server found forking unsafe (a thread, a CUDA context): the call was not started."""


class ServerGone(Exception):
    """The fork server exited (or never started); the message has the end of its log."""


def tail(path: Path) -> str:
    """The last lines of a log or stderr file ('' when there is none)."""
    text = path.read_text(errors="replace") if path.is_file() else ""
    return "\n".join(text.strip().splitlines()[-_TAIL_LINES:])


@dataclass(frozen=True)
class Call:
    """One call in a fresh process: `python -m module *argv`, its output files in `folder`."""

    module: str
    argv: list[str]
    folder: Path
    timeout_s: float

    def stderr_tail(self) -> str:
        return tail(self.folder / "stderr.txt")


class ForkServer:
    """One running `zygote.py`, spoken to over its stdin and stdout."""

    def __init__(
        self, key: Hashable, process: subprocess.Popen[bytes], folder: OwnedFolder
    ) -> None:
        self.key = key
        self.process = process
        self.folder = folder
        assert process.stdin is not None and process.stdout is not None
        self.requests: IO[bytes] = process.stdin
        self.replies = Lines(process.stdout.fileno())
        self.pid: int | None = None  # set once the server said it is ready
        #: the step it stopped before (a GPU driver's thread), and why; None when it holds them all
        self.stopped_before: str | None = None
        self.why: str | None = None
        self.sent = 0

    @classmethod
    def start(cls, key: Hashable, env: dict[str, str]) -> ForkServer:
        folder = OwnedFolder("forkserver")
        with open(folder.path / "server.log", "wb") as log:
            process = subprocess.Popen(
                [sys.executable, "-m", ZYGOTE],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=log,
                cwd=working_folder(folder.path),  # the caller's, or its own where that was deleted
                env={**env, **SERVER_ONLY},
                start_new_session=True,  # the terminal's Ctrl-C reaches pytest, which ends it
            )
        return cls(key, process, folder)

    def alive(self) -> bool:
        return self.process.poll() is None

    def run(self, call: Call, settled: dict[str, object]) -> int:
        """`call` in a child, `settled` (folder, environment, path) as the caller has them; its exit
        code (negative: killed by that signal)."""
        self._ready(time.monotonic() + START_TIMEOUT_S)
        limit = time_limit(call.timeout_s)
        self.sent += 1
        n, pid = self.sent, None
        message = {"n": n, "module": call.module, "argv": call.argv, **settled}
        deadline = time.monotonic() + limit
        try:
            send(self.requests.fileno(), message)
            pid = self._reply(deadline, n, "started")
            status = self._reply(deadline, n, "exited")
        except BrokenPipeError:
            raise self._gone("before the call") from None
        except TimeoutError:
            self.stop(pid)
            raise FreshProcessFailed(timed_out(limit, call.stderr_tail())) from None
        except Garbled as exc:
            self.stop(pid)
            raise FreshProcessFailed(
                f"(its fork server's replies were garbled, so the server and the call were ended; "
                f"something, the call itself perhaps, wrote into the server's reply pipe: {exc}):\n"
                f"{call.stderr_tail()}"
            ) from None
        return os.waitstatus_to_exitcode(status)

    def _ready(self, deadline: float) -> None:
        if self.pid is not None:
            return
        try:
            message = self._message(deadline, "ready")
        except TimeoutError:
            self.stop()
            raise FreshProcessFailed(
                f"(its fork server did not start in {START_TIMEOUT_S:.0f} s):\n{self.log_tail()}"
            ) from None
        except Garbled as exc:
            self.stop()
            raise FreshProcessFailed(f"(its fork server said {exc}):\n{self.log_tail()}") from None
        self.pid, self.stopped_before, self.why = (
            message["ready"],
            message.get("stopped_before"),
            message.get("why"),
        )

    def _reply(self, deadline: float, n: int, expected: str) -> Any:
        return self._message(deadline, expected, n)[expected]

    def _message(self, deadline: float, expected: str, n: int | None = None) -> dict[str, Any]:
        """The next message, which must answer request `n` (none: the server's first)."""
        message = self.replies.next(deadline)
        if message is None:
            raise self._gone(f"while waiting for '{expected}'")
        if message.get("n") != n:
            raise Garbled(f"a reply to request {message.get('n')!r} while waiting on request {n}")
        if "refused" in message:
            raise ForkRefused(str(message["refused"]))
        if expected not in message:
            raise Garbled(f"{message!r} while waiting for '{expected}'"[:300])
        return message

    def _gone(self, when: str) -> ServerGone:
        try:
            status = self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            status = None
        return ServerGone(
            f"(its fork server, pid {self.process.pid}, exited {when}, status {status}):\n{self.log_tail()}"
        )

    def log_tail(self) -> str:
        return tail(self.folder.path / "server.log")

    def stop(self, child: int | None = None) -> None:
        """Kill `child` (with what it started), close stdin (the server kills a running child and
        exits), kill the server if it lingers; its folder goes."""
        if child is not None:
            _kill_group(child)
        for stream in (self.process.stdin, self.process.stdout):
            if stream is not None:
                stream.close()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.folder.cleanup()


def _kill_group(pid: int) -> None:
    for kill in (os.killpg, os.kill):
        try:
            kill(pid, signal.SIGKILL)
            return
        except (ProcessLookupError, PermissionError):
            continue
