"""The suite's pytest runs forked from a process that has imported torch's compiler stack.

Most of this suite's time is pytest runs in subprocesses (pytester's, the docs' commands),
and each new interpreter spends about 4 seconds importing torch, Dynamo and Inductor before
its first line of test code, a third to a half of a small compile test's run. A zygote
imports them once per worker; each run is a `fork` of it that then behaves as
`python -m pytest ARGS` started in the run's folder with the run's environment: its own
working directory, environment, `sys.path` (the folder, then `PYTHONPATH`, then the
interpreter's own), standard streams on the run's files, and its exit status.

What a fork cannot redo is what the interpreter fixes when it starts: the hash seed and
whatever torch reads from the environment at import (`TORCH_LOGS`, `OMP_NUM_THREADS`, the
temporary folder `TMPDIR`, ...).
A run whose environment differs from the zygote's in such a variable (`IMPORT_TIME`) runs
in a real subprocess, and so does a test marked `fresh_interpreter` (it checks what a
process imports) or every run when `PTC_TESTS_FRESH_INTERPRETERS=1`. The forks of one
zygote share its hash seed, so two runs of one test (record, then re-run) no longer see
two seeds: the stability tests (`tests/stability/`) give each of their runs a seed of its
own in a real subprocess, and they are what proves snapshots stable across seeds.
"""

from __future__ import annotations

import json
import os
import re
import select
import signal
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

#: what the zygote imports: what every compiling run imports first (tests/conftest.py)
PRELOAD = (
    "torch._dynamo.repro.after_dynamo",
    "torch._inductor.codecache",
    "torch._inductor.compile_fx",
)
#: environment variables the interpreter or torch read when they start (a run that sets
#: another value than the zygote had runs in a real subprocess); `PYTHONPATH` is redone per run
IMPORT_TIME = re.compile(
    r"^(PYTHON(?!PATH$)|TORCH|PYTORCH|OMP_|MKL_|KMP_|ATEN_|CUDA|NVIDIA|LD_|TRITON|(TMPDIR|TEMP|TMP)$)"
)
#: the zygote's own environment on top of the worker's: numpy's OpenBLAS starts no thread pool
#: (a thread must not be forked) and torch asks NVML, not the CUDA driver, whether CUDA is there
ZYGOTE_ONLY = {"OPENBLAS_NUM_THREADS": "1", "PYTORCH_NVML_BASED_CUDA_CHECK": "1"}
#: set to 1 for every run in a real subprocess
OPT_OUT = "PTC_TESTS_FRESH_INTERPRETERS"

_SERVER = r"""
import atexit, importlib, io, json, os, runpy, sys, tempfile, threading, warnings

filters = warnings.filters[:]
warnings.simplefilter("ignore")
for name in json.loads(sys.argv[1]):
    importlib.import_module(name)
warnings.filters[:] = filters
leaked = sorted(m for m in ("pytest", "_pytest", "pytest_torchcompile") if m in sys.modules)
BASE = [p for p in sys.path[1:]]
inbox, outbox = sys.stdin.buffer, sys.stdout.buffer


def reply(**message):
    outbox.write(json.dumps(message).encode() + b"\n")
    outbox.flush()


threads = len(os.listdir("/proc/self/task")) if os.path.isdir("/proc/self/task") else threading.active_count()
cuda = "torch" in sys.modules and sys.modules["torch"].cuda.is_initialized()
# a native thread (numpy's BLAS pool, a GPU driver's thread started by an import) or a CUDA
# context would not survive a fork: the runs then take real subprocesses
reply(ready=not leaked and threads == 1 and not cuda, leaked=leaked, threads=threads, cuda=cuda)


def child(request):
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    extra = [os.path.abspath(p) for p in request["env"].get("PYTHONPATH", "").split(os.pathsep) if p]
    seen, path = set(), []
    for entry in [os.getcwd(), *extra, *BASE]:
        if entry not in seen:
            seen.add(entry)
            path.append(entry)
    sys.path[:] = path
    importlib.invalidate_caches()
    tempfile.tempdir = None  # chosen again from TMPDIR, as a new process would
    null = os.open(os.devnull, os.O_RDONLY)
    out = os.open(request["stdout"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    err = os.open(request["stderr"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    for fd, target in ((null, 0), (out, 1), (err, 2)):
        os.dup2(fd, target)
        os.close(fd)
    encoding = "utf-8"
    sys.stdin = io.TextIOWrapper(io.FileIO(0, "r", closefd=False), encoding=encoding)
    sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), encoding=encoding)
    sys.stderr = io.TextIOWrapper(
        io.FileIO(2, "w", closefd=False), encoding=encoding, errors="backslashreplace", line_buffering=True
    )
    sys.__stdin__, sys.__stdout__, sys.__stderr__ = sys.stdin, sys.stdout, sys.stderr
    sys.argv = ["-m", *request["args"]]
    code = 0
    try:
        runpy.run_module("pytest", run_name="__main__", alter_sys=True)
    except SystemExit as done:
        if done.code is None:
            code = 0
        elif isinstance(done.code, int):
            code = done.code
        else:
            print(done.code, file=sys.stderr)
            code = 1
    except BaseException:
        import traceback

        traceback.print_exc()
        code = 1
    try:
        atexit._run_exitfuncs()
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:
                pass
        os._exit(code)


for line in inbox:
    request = json.loads(line)
    pid = os.fork()
    if pid == 0:
        try:
            child(request)
        finally:
            os._exit(70)
    reply(pid=pid)
    _, status = os.waitpid(pid, 0)
    reply(status=os.waitstatus_to_exitcode(status))
"""


class ZygoteRun:
    """One run forked by the zygote, as much of `subprocess.Popen` as pytester's `run` uses."""

    stdin = None

    def __init__(self, zygote: Zygote, pid: int) -> None:
        self._zygote = zygote
        self.pid = pid
        self.returncode: int | None = None

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None:
            message = self._zygote.receive(timeout)
            if message is None:
                raise subprocess.TimeoutExpired(f"pytest (forked, pid {self.pid})", timeout or 0)
            self.returncode = int(message["status"])
        return self.returncode

    def kill(self) -> None:
        if self.returncode is None:
            try:
                os.kill(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


#: the worker's environment before any test changed it: a zygote started inside a test that set
#: an import-time variable (`TMPDIR`) would otherwise fork none of the later tests' runs
_WORKER_ENV = dict(os.environ)


class Zygote:
    """The worker's zygote: started at its first run, with the environment the worker started with."""

    def __init__(self) -> None:
        env = {k: v for k, v in _WORKER_ENV.items() if k != "PYTHONPATH"}
        self.env = env
        self._process = subprocess.Popen(
            [sys.executable, "-c", _SERVER, json.dumps(PRELOAD)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env={**env, **ZYGOTE_ONLY},
            cwd="/",
        )
        hello = self.receive(120)
        self.ready = bool(hello and hello.get("ready"))
        self.why = "" if self.ready else f"zygote not usable: {hello}"

    def receive(self, timeout: float | None) -> dict | None:
        stdout = self._process.stdout
        assert stdout is not None
        if timeout is not None and not select.select([stdout], [], [], timeout)[0]:
            return None
        line = stdout.readline()
        if not line:
            raise RuntimeError(f"the test zygote exited ({self._process.poll()})")
        return json.loads(line)

    def accepts(self, env: dict[str, str]) -> bool:
        """Whether a run with `env` reads at start what the zygote read (see the module)."""
        keys = {k for k in {*env, *self.env} if IMPORT_TIME.match(k)}
        return self.ready and all(env.get(k) == self.env.get(k) for k in keys)

    def start(
        self, args: list[str], cwd: Path, env: dict[str, str], stdout: str, stderr: str
    ) -> ZygoteRun:
        stdin = self._process.stdin
        assert stdin is not None
        request = {"args": args, "cwd": str(cwd), "env": env, "stdout": stdout, "stderr": stderr}
        stdin.write(json.dumps(request).encode() + b"\n")
        stdin.flush()
        message = self.receive(60)
        if message is None or "pid" not in message:
            raise RuntimeError(f"the test zygote did not fork: {message}")
        return ZygoteRun(self, int(message["pid"]))

    def close(self) -> None:
        if self._process.poll() is None:
            self._process.kill()
            self._process.wait()


_zygote: Zygote | None = None
_lock = threading.Lock()


def zygote() -> Zygote | None:
    """This worker's zygote, or None where runs take real subprocesses (`OPT_OUT`, no `fork`)."""
    global _zygote
    if os.environ.get(OPT_OUT) == "1" or not hasattr(os, "fork"):
        return None
    with _lock:
        if _zygote is None:
            _zygote = Zygote()
        return _zygote


def run_pytest(
    args: list[str], cwd: Path, env: dict[str, str], timeout: float
) -> subprocess.CompletedProcess[str]:
    """`python -m pytest ARGS` in `cwd` with exactly `env`, forked where the zygote accepts it."""
    forks = zygote()
    if forks is None or not forks.accepts(env):
        command = [sys.executable, "-m", "pytest", *args]
        return subprocess.run(
            command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout
        )
    with tempfile.TemporaryDirectory() as folder:
        out, err = Path(folder, "stdout"), Path(folder, "stderr")
        run = forks.start(args, cwd, env, str(out), str(err))
        try:
            code = run.wait(timeout)
        except subprocess.TimeoutExpired:
            run.kill()
            run.wait()
            raise
        return subprocess.CompletedProcess(
            ["python", "-m", "pytest", *args],
            code,
            out.read_text(errors="replace"),
            err.read_text(errors="replace"),
        )


def pid() -> int | None:
    """The worker's zygote's process id, if it was started."""
    return None if _zygote is None else _zygote._process.pid


def close() -> None:
    if _zygote is not None:
        _zygote.close()
