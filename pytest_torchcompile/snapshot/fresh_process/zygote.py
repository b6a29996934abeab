"""The fork server: a fresh interpreter that imports torch once and forks one child per call.

`python -m pytest_torchcompile.snapshot.fresh_process.zygote`, started by
`fork_server.ForkServer` with a clean copy of the caller's environment. It
takes the steps of `STEPS` in order (torch, Dynamo, the modules its children
run, Inductor: `_torch/process/preload.py`), compiles nothing, freezes what it holds
for the garbage collector (so children do not copy it page by page), then
answers on stdout (JSON, one message a line) and reads requests on stdin.

An import that asks whether CUDA is available (torch 2.11's Inductor does)
is answered from another process (`preload.take_step_without_driver`): asking
the driver here would start its thread. After each step it checks that
forking is still safe (one thread, no CUDA context); where an import starts a
thread anyway, the server starts itself again (`exec`, which ends every
thread) with `--stop-before` that step, so it holds what comes before and
each child imports the rest itself, as it needs it. Only a thread that runs
before torch is imported makes it refuse.

- it says `{"ready": pid, "stopped_before": step or null, "why": ...}`
  once, or `{"refused": why}` when forking would be unsafe;
- per request `{"n", "module", "argv", "cwd", "env", "path", "stdout",
  "stderr"}` it checks that it is still fork-safe, forks, says
  `{"n": n, "started": pid}`, waits for that child and says
  `{"n": n, "exited": status}` (a raw wait status), or `{"n": n, "refused": why}`.

The child is a copy of the server as it was after start-up: every call
starts from the same state, and nothing a call does reaches the next. It
takes the request's working folder, environment and import path, sends
its output to the request's files, runs `module.main(argv)` and exits
without running the server's exit handlers. It is the leader of its own
process group (a timeout kills it with whatever it started) and dies with
the server (`PR_SET_PDEATHSIG`). When stdin closes (the caller ended or
died), or a request is not a message, the server kills a running child
and exits.
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

from ..._torch.process import preload
from .lines import Garbled, Lines, send

#: the modules the children run, imported once here
CHILD_MODULES = (
    "pytest",  # a test module, unpickled with its model, imports it
    "pytest_torchcompile.snapshot.fresh_process.child",
    "pytest_torchcompile.snapshot.program.run.child",
    "pytest_torchcompile.snapshot.numerics.calls",  # the observing function, unpickled by name
)
#: what the server imports, in order (a step that starts a thread, and those after it, are left
#: to the children)
STEPS = (
    *preload.CORE,
    *CHILD_MODULES,
    *preload.INDUCTOR,
    preload.VEC_ISA_PROBE,
    "pytest_torchcompile.snapshot.precompile.child",
)
#: Linux's prctl(PR_SET_PDEATHSIG): a signal for the child when its parent dies
_PR_SET_PDEATHSIG = 1
_LIBC = ctypes.CDLL(None, use_errno=True)


def main(argv: list[str]) -> int:
    stop_before, why = (argv[1], argv[3]) if argv[:1] == ["--stop-before"] else (None, None)
    replies = os.dup(1)
    os.dup2(2, 1)  # what imports print goes to the server's log, never into the replies
    problem = preload.fork_unsafe()
    for step in STEPS if problem is None else ():
        if step == stop_before:
            break
        preload.take_step_without_driver(step)
        problem = preload.fork_unsafe()
        if problem is not None and stop_before is None and step != STEPS[0]:
            _again(replies, step, f"importing it made forking unsafe: {problem}")
    if problem is not None:
        send(replies, {"refused": f"its fork server cannot fork safely: {problem}"})
        return 1
    gc.collect()
    gc.freeze()
    send(replies, {"ready": os.getpid(), "stopped_before": stop_before, "why": why})
    serve(Lines(0), replies)
    return 0


def _again(replies: int, step: str, why: str) -> NoReturn:
    """Start this server again in this process, holding only the steps before `step`."""
    print(f"fork server: starting again without {step}: {why}", file=sys.stderr, flush=True)
    os.dup2(replies, 1)
    module = (
        __spec__.name
        if __spec__ is not None
        else "pytest_torchcompile.snapshot.fresh_process.zygote"
    )
    os.execv(sys.executable, [sys.executable, "-m", module, "--stop-before", step, "--why", why])


def serve(requests: Lines, replies: int) -> None:
    """One forked child per request, until the caller closes stdin (or writes what is not a request)."""
    while True:
        try:
            request = requests.next()
        except Garbled as exc:
            print(f"fork server: a request that is not one: {exc}", file=sys.stderr, flush=True)
            return
        if request is None:
            return
        n = request.get("n")
        problem = preload.fork_unsafe()
        if problem is not None:
            send(replies, {"n": n, "refused": f"its fork server cannot fork safely: {problem}"})
            continue
        pid = os.fork()
        if pid == 0:
            _child(request, replies)
        send(replies, {"n": n, "started": pid})
        status = _wait(pid, requests)
        if status is None:  # the caller is gone
            return
        send(replies, {"n": n, "exited": status})


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
    sys.exit(main(sys.argv[1:]))
