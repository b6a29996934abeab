"""Where fresh processes come from: forked from a server that imported torch once.

A new Python process costs seconds (`import torch`, Dynamo, Inductor) before
it does anything. `FreshProcesses`, one per pytest session (so one per xdist
worker), starts a fork server (`zygote.py`) the first time a case needs a
fresh process, in the background while the case compiles, and asks it for
one forked child per call: a copy of a process where torch and Inductor are
imported and nothing was ever compiled, the same for every call. The
server's environment is the caller's, with numpy's BLAS kept to one thread
(its pool would otherwise start at import, and a process with threads must
not fork); the child takes the caller's environment again, its working
folder and import path at the time of the call. A change of environment
starts another server.

Failures are named: a child that crashes or is killed (its exit status or
signal and the end of its stderr), one that runs past the time limit
(killed, with what it started), a server that cannot start (the end of its
log). A server that dies is started again once. `close()` (at the end of
the session, and at exit) ends the server, which kills a running child:
nothing outlives the session. Where `fork` is missing (not Linux), or
`PTC_FORK_SERVER=0`, each call starts a new interpreter instead; so does
every call of a session whose server says forking is unsafe there (a
thread running after its imports: on an H100 with torch 2.11 the CUDA
driver starts one).
"""

from __future__ import annotations

import atexit
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from .lines import Lines, send

ZYGOTE = "pytest_torchcompile.snapshot.fresh_process.zygote"
#: set to 0 to start every fresh process as a new interpreter (the slow isolation, no fork)
FORK_VARIABLE = "PTC_FORK_SERVER"
#: seconds a fresh process may run before it is killed (overrides the caller's limit)
TIMEOUT_VARIABLE = "PTC_FRESH_PROCESS_TIMEOUT"
#: variables that change between tests or are read here, not in the server: no new server for them
_PER_CALL = frozenset({"PYTEST_CURRENT_TEST", "PYTHONPATH", FORK_VARIABLE, TIMEOUT_VARIABLE})
#: the server's own environment on top of the caller's: numpy's OpenBLAS starts no thread pool
_SERVER_ONLY = {"OPENBLAS_NUM_THREADS": "1"}
_TAIL_LINES = 15
#: seconds the server may take to import torch and Inductor (not counted in a call's limit)
START_TIMEOUT_S = 600.0


class FreshProcessFailed(Exception):
    """The fresh process exited without an answer, or could not be started; the message says how."""


class ForkRefused(FreshProcessFailed):
    """The fork server found forking unsafe (a thread, a CUDA context): the call was not started."""


@dataclass(frozen=True)
class Call:
    """One call in a fresh process: `python -m module *argv`, its output files in `folder`."""

    module: str
    argv: list[str]
    folder: Path
    timeout_s: float

    def stderr_tail(self) -> str:
        path = self.folder / "stderr.txt"
        text = path.read_text(errors="replace") if path.is_file() else ""
        return "\n".join(text.strip().splitlines()[-_TAIL_LINES:])


def child_env() -> dict[str, str]:
    """This process's environment, with its import path (pytest may have extended it)."""
    paths = [p for p in sys.path if isinstance(p, str) and p]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(dict.fromkeys(paths))}


def time_limit(default_s: float) -> float:
    """The caller's limit, or `PTC_FRESH_PROCESS_TIMEOUT`'s."""
    given = os.environ.get(TIMEOUT_VARIABLE)
    if given is None:
        return default_s
    try:
        seconds = float(given)
    except ValueError:
        seconds = 0.0
    if seconds <= 0:
        raise FreshProcessFailed(
            f"{TIMEOUT_VARIABLE}={given!r} is not a positive number of seconds; unset it for the default ({default_s:.0f} s)"
        )
    return seconds


def forking() -> bool:
    """Whether fresh processes are forked from a server here (Linux, not turned off)."""
    return sys.platform == "linux" and os.environ.get(FORK_VARIABLE, "1") != "0"


class FreshProcesses:
    """The fresh processes of one session: a fork server, started on first need and ended by `close`."""

    def __init__(self) -> None:
        self.server: ForkServer | None = None
        #: why the server refused to fork, once it did: the session's calls then start interpreters
        self.refused: str | None = None
        atexit.register(self.close)  # a session that never reached its end hook

    def prestart(self) -> None:
        """Start the server now (it imports torch while the caller compiles), if not running."""
        if forking() and self.refused is None:
            self._server(child_env())

    def run(self, call: Call) -> int:
        """Run the call in a fresh process; its exit code (negative: killed by that signal)."""
        env = child_env()
        if not forking() or self.refused is not None:
            return _spawn(call, env)
        for attempt in (1, 2):
            server = self._server(env)
            try:
                return server.run(call, env)
            except ForkRefused as exc:
                # what made it unsafe came with its imports: every later server would refuse too
                self.refused = str(exc)
                self._stop()
                return _spawn(call, env)
            except ServerGone as exc:
                self._stop()
                if attempt == 2:
                    raise FreshProcessFailed(str(exc)) from None
        raise AssertionError("unreachable")

    def close(self) -> None:
        atexit.unregister(self.close)
        self._stop()

    def _server(self, env: dict[str, str]) -> ForkServer:
        key = _server_key(env)
        if self.server is not None and (self.server.key != key or not self.server.alive()):
            self._stop()
        if self.server is None:
            self.server = ForkServer.start(key, env)
        return self.server

    def _stop(self) -> None:
        if self.server is not None:
            self.server.stop()
            self.server = None


def _server_key(env: dict[str, str]) -> tuple[tuple[str, str], ...]:
    return tuple(sorted((k, v) for k, v in env.items() if k not in _PER_CALL))


class ServerGone(Exception):
    """The fork server exited (or never started); the message has the end of its log."""


class ForkServer:
    """One running `zygote.py`, spoken to over its stdin and stdout."""

    def __init__(self, key: Any, process: subprocess.Popen[bytes], log_dir: str) -> None:
        self.key = key
        self.process = process
        self.log_dir = log_dir
        assert process.stdin is not None and process.stdout is not None
        self.requests: IO[bytes] = process.stdin
        self.replies = Lines(process.stdout.fileno())
        self.pid: int | None = None  # set once the server said it is ready

    @classmethod
    def start(cls, key: Any, env: dict[str, str]) -> ForkServer:
        log_dir = tempfile.mkdtemp(prefix="torchcompile_forkserver_")
        with open(Path(log_dir) / "server.log", "wb") as log:
            process = subprocess.Popen(
                [sys.executable, "-m", ZYGOTE],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=log,
                env={**env, **_SERVER_ONLY},
                start_new_session=True,  # the terminal's Ctrl-C reaches pytest, which ends it
            )
        return cls(key, process, log_dir)

    def alive(self) -> bool:
        return self.process.poll() is None

    def run(self, call: Call, env: dict[str, str]) -> int:
        self._ready(time.monotonic() + START_TIMEOUT_S)
        deadline = time.monotonic() + time_limit(call.timeout_s)
        request = {
            "module": call.module,
            "argv": call.argv,
            "cwd": os.getcwd(),
            "env": env,
            "path": [p for p in sys.path if isinstance(p, str)],
            "stdout": str(call.folder / "stdout.txt"),
            "stderr": str(call.folder / "stderr.txt"),
        }
        try:
            send(self.requests.fileno(), request)
        except BrokenPipeError:
            raise self._gone("before the call") from None
        started = self._reply(deadline, "started")
        return self._exited(started, call, deadline)

    def _exited(self, pid: int, call: Call, deadline: float) -> int:
        try:
            status = self._reply(deadline, "exited")
        except TimeoutError:
            _kill_group(pid)
            try:
                self._reply(time.monotonic() + 60, "exited")
            except (TimeoutError, ServerGone):
                self.process.kill()  # FreshProcesses starts another for the next call
            limit = time_limit(call.timeout_s)
            raise FreshProcessFailed(
                f"(killed after {limit:.0f} s, the time limit; {TIMEOUT_VARIABLE} sets another):\n{call.stderr_tail()}"
            ) from None
        return os.waitstatus_to_exitcode(status)

    def _ready(self, deadline: float) -> None:
        if self.pid is None:
            try:
                self.pid = self._reply(deadline, "ready")
            except TimeoutError:
                raise FreshProcessFailed(
                    f"(its fork server did not start in {START_TIMEOUT_S:.0f} s):\n{self.log_tail()}"
                ) from None

    def _reply(self, deadline: float, expected: str) -> Any:
        message = self.replies.next(deadline)
        if message is None:
            raise self._gone(f"while waiting for '{expected}'")
        if "refused" in message:
            raise ForkRefused(message["refused"])
        return message[expected]

    def _gone(self, when: str) -> ServerGone:
        try:
            status = self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            status = None
        return ServerGone(
            f"(its fork server, pid {self.process.pid}, exited {when}, status {status}):\n{self.log_tail()}"
        )

    def log_tail(self) -> str:
        path = Path(self.log_dir) / "server.log"
        text = path.read_text(errors="replace") if path.is_file() else ""
        return "\n".join(text.strip().splitlines()[-_TAIL_LINES:])

    def stop(self) -> None:
        """Close its stdin (it kills a running child and exits); kill it if it lingers."""
        for stream in (self.process.stdin, self.process.stdout):
            if stream is not None:
                stream.close()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        shutil.rmtree(self.log_dir, ignore_errors=True)


def _kill_group(pid: int) -> None:
    for kill in (os.killpg, os.kill):
        try:
            kill(pid, signal.SIGKILL)
            return
        except (ProcessLookupError, PermissionError):
            continue


def _spawn(call: Call, env: dict[str, str]) -> int:
    """A new interpreter for this call alone (no fork server)."""
    limit = time_limit(call.timeout_s)
    with (
        open(call.folder / "stdout.txt", "wb") as out,
        open(call.folder / "stderr.txt", "wb") as err,
    ):
        try:
            done = subprocess.run(
                [sys.executable, "-m", call.module, *call.argv],
                env=env,
                stdout=out,
                stderr=err,
                timeout=limit,
            )
        except subprocess.TimeoutExpired:
            raise FreshProcessFailed(
                f"(killed after {limit:.0f} s, the time limit; {TIMEOUT_VARIABLE} sets another):\n{call.stderr_tail()}"
            ) from None
    return done.returncode
