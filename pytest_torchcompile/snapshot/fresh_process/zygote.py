"""The fork server: a fresh interpreter that imports torch once and forks one child per call.

`python -m pytest_torchcompile.snapshot.fresh_process.zygote`, started by
`servers.ForkServer` with a clean copy of the caller's environment. It
imports torch, Dynamo and Inductor and the modules its children run
(`_torch.preload.warm_up`), compiles nothing, freezes what it holds for
the garbage collector (so children do not copy it page by page), then
answers on stdout (JSON, one message a line) and reads requests on stdin:

- it says `{"ready": pid}` once, or `{"refused": why}` when forking would be unsafe;
- per request `{"module", "argv", "cwd", "env", "path", "stdout", "stderr"}` it
  checks that it is still fork-safe (one thread, no CUDA context), forks,
  says `{"started": pid}`, waits for that child and says `{"exited": status}`
  (a raw wait status) or `{"refused": why}`.

The child is a copy of the server as it was after start-up: every call
starts from the same state, and nothing a call does reaches the next. It
takes the request's working folder, environment and import path, sends
its output to the request's files, runs `module.main(argv)` and exits
without running the server's exit handlers. It is the leader of its own
process group (a timeout kills it with whatever it started) and dies with
the server (`PR_SET_PDEATHSIG`). When stdin closes (the caller ended or
died), the server kills a running child and exits.
"""

from __future__ import annotations

import ctypes
import faulthandler
import gc
import importlib
import os
import select
import signal
import sys
import traceback
from typing import Any, NoReturn

from .lines import Lines, send

#: the modules the children run, imported once here
CHILD_MODULES = (
    "pytest",  # a test module, unpickled with its model, imports it
    "pytest_torchcompile.snapshot.program.run.child",
    "pytest_torchcompile.snapshot.numerics.check",  # the observing function, unpickled by name
    "pytest_torchcompile.snapshot.numerics.precompile",
)
#: Linux's prctl(PR_SET_PDEATHSIG): a signal for the child when its parent dies
_PR_SET_PDEATHSIG = 1
_LIBC = ctypes.CDLL(None, use_errno=True)


def main() -> int:
    replies = os.dup(1)
    os.dup2(2, 1)  # what imports print goes to the server's log, never into the replies
    from ..._torch.preload import fork_unsafe, warm_up

    warm_up()
    for name in CHILD_MODULES:
        importlib.import_module(name)
    gc.collect()
    gc.freeze()
    problem = fork_unsafe()
    if problem is not None:
        send(replies, {"refused": f"its fork server cannot fork safely: {problem}"})
        return 1
    send(replies, {"ready": os.getpid()})
    serve(Lines(0), replies, fork_unsafe)
    return 0


def serve(requests: Lines, replies: int, fork_unsafe: Any) -> None:
    """One forked child per request, until the caller closes stdin."""
    while (request := requests.next()) is not None:
        problem = fork_unsafe()
        if problem is not None:
            send(replies, {"refused": f"its fork server cannot fork safely: {problem}"})
            continue
        pid = os.fork()
        if pid == 0:
            _child(request, replies)
        send(replies, {"started": pid})
        status = _wait(pid, requests)
        if status is None:  # the caller is gone
            return
        send(replies, {"exited": status})


def _wait(pid: int, requests: Lines) -> int | None:
    """The child's wait status; None (the child killed) when the caller closes stdin first."""
    child = os.pidfd_open(pid) if hasattr(os, "pidfd_open") else None
    try:
        while True:
            watched = [requests.fd] + ([child] if child is not None else [])
            readable = select.select(watched, [], [], None if child is not None else 0.02)[0]
            if requests.fd in readable:
                requests.feed()  # the caller writes nothing during a run: only its end arrives
                if requests.closed:
                    _kill(pid)
                    os.waitpid(pid, 0)
                    return None
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                return status
    finally:
        if child is not None:
            os.close(child)


def _kill(pid: int) -> None:
    """The child and everything it started (its process group)."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _child(request: dict[str, Any], replies: int) -> NoReturn:
    """In the forked child: take the caller's settings, run `module.main(argv)`, exit with its status."""
    status = 1
    try:
        os.setpgid(0, 0)
        _LIBC.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() == 1:  # the server died before the line above took effect
            os._exit(1)
        _settle(request, replies)
        status = importlib.import_module(request["module"]).main(request["argv"]) or 0
    except SystemExit as exc:
        status = exc.code if isinstance(exc.code, int) else 1
    except BaseException:
        traceback.print_exc()
    finally:
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
        os._exit(status)


def _settle(request: dict[str, Any], replies: int) -> None:
    """The caller's folder, environment, import path and argv; output to the request's files."""
    os.close(replies)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    for fd, path in ((1, request["stdout"]), (2, request["stderr"])):
        target = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(target, fd)
        os.close(target)
    faulthandler.enable()  # a crash leaves its Python traceback in the stderr the caller reads
    signal.signal(signal.SIGINT, signal.default_int_handler)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    sys.path[:] = request["path"]
    sys.argv = [request["module"], *request["argv"]]


if __name__ == "__main__":
    sys.exit(main())
