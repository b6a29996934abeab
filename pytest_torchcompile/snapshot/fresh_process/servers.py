"""Where fresh processes come from: forked from a server that imported torch once.

A new Python process costs seconds (`import torch`, Dynamo, Inductor) before
it does anything. `FreshProcesses`, one per pytest session (so one per xdist
worker), starts a fork server (`zygote.py`, spoken to by `fork_server.py`)
the first time a case needs a fresh process, in the background while the
case compiles, and asks it for one forked child per call: a copy of a
process where torch (and, where importing it starts no thread, Inductor) is
imported and nothing was ever compiled, the same for every call. The
server's environment is the caller's, with numpy's BLAS kept to one thread
and torch's CUDA check made through NVML (`fork_server.SERVER_ONLY`: a
process with threads must not fork; what Inductor asks at import is
answered from another process, `zygote.py`); the child takes the caller's
environment again, its working folder and import path at the time of the
call (the call's own folder where the caller's working folder was
deleted). A change of environment starts another server.

Failures are named: a child that crashes or is killed (its exit status or
signal and the end of its stderr), one that runs past the time limit, a
reply that is not the one expected, a server that cannot start (the end of
its log). A timeout or a garbled reply ends the server with its child and
fails that call alone; the next call gets a new server. A server that dies
is started again once. `close()` (at the end of the session, and at exit)
ends the server, which kills a running child: nothing outlives the session.
Where `fork` is missing (not Linux), or `PTC_FORK_SERVER=0`, each call
starts a new interpreter instead; so does every call of a session whose
server refuses to fork (a thread already running before it imported torch).
"""

from __future__ import annotations

import atexit
import os
import subprocess
import sys

from .fork_server import Call, ForkRefused, ForkServer, FreshProcessFailed, ServerGone
from .settings import (
    FORK_VARIABLE,
    TIMEOUT_VARIABLE,
    forking,
    time_limit,
    timed_out,
    working_folder,
)

__all__ = ["Call", "FreshProcessFailed", "FreshProcesses"]

#: variables that change between tests or are read here, not in the server: no new server for them
_PER_CALL = frozenset({"PYTEST_CURRENT_TEST", "PYTHONPATH", FORK_VARIABLE, TIMEOUT_VARIABLE})
#: how a call ran, for the reports
FORKED, NEW_INTERPRETER = "forked", "new interpreter"


def child_env() -> dict[str, str]:
    """This process's environment, with its import path (pytest may have extended it)."""
    paths = [p for p in sys.path if isinstance(p, str) and p]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(dict.fromkeys(paths))}


class FreshProcesses:
    """The fresh processes of one session: a fork server, started on first need and ended by `close`."""

    def __init__(self) -> None:
        self.server: ForkServer | None = None
        #: why the server refused to fork, once it did: the session's calls then start interpreters
        self.refused: str | None = None
        #: how the last call ran (FORKED or NEW_INTERPRETER)
        self.last = ""
        atexit.register(self.close)  # a session that never reached its end hook

    def prestart(self) -> None:
        """Start the server now (it imports torch while the caller compiles), if not running."""
        if forking() and self.refused is None:
            self._server(child_env())

    def run(self, call: Call) -> int:
        """Run the call in a fresh process; its exit code (negative: killed by that signal)."""
        env = child_env()
        settled = {
            "cwd": working_folder(call.folder),
            "env": env,
            "path": [p for p in sys.path if isinstance(p, str)],
            "stdout": str(call.folder / "stdout.txt"),
            "stderr": str(call.folder / "stderr.txt"),
        }
        if not forking() or self.refused is not None:
            return self._spawn(call, env, settled["cwd"])
        for attempt in (1, 2):
            server = self._server(env)
            try:
                code = server.run(call, settled)
            except ForkRefused as exc:
                # what made it unsafe came with its imports: every later server would refuse too
                self.refused = str(exc)
                self._stop()
                return self._spawn(call, env, settled["cwd"])
            except ServerGone as exc:
                self._stop()
                if attempt == 2:
                    raise FreshProcessFailed(str(exc)) from None
                continue
            except FreshProcessFailed:
                self._stop()  # timed out or garbled: the server was ended, the next call starts one
                raise
            self.last = FORKED
            return code
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

    def _spawn(self, call: Call, env: dict[str, str], cwd: str) -> int:
        """A new interpreter for this call alone (no fork server)."""
        limit = time_limit(call.timeout_s)
        self.last = NEW_INTERPRETER
        with (
            open(call.folder / "stdout.txt", "wb") as out,
            open(call.folder / "stderr.txt", "wb") as err,
        ):
            try:
                done = subprocess.run(
                    [sys.executable, "-m", call.module, *call.argv],
                    env=env,
                    cwd=cwd,
                    stdout=out,
                    stderr=err,
                    timeout=limit,
                )
            except subprocess.TimeoutExpired:
                raise FreshProcessFailed(timed_out(limit, call.stderr_tail())) from None
        return done.returncode


def _server_key(env: dict[str, str]) -> tuple[tuple[str, str], ...]:
    return tuple(sorted((k, v) for k, v in env.items() if k not in _PER_CALL))
