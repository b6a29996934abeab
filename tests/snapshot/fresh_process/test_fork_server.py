"""Fresh processes forked from one server per session: independent runs, named failures, nothing left behind.

Each pytester run is a session of its own (a subprocess). Its tests find
their session's fork server as the child of their own process running
`zygote`, and every process the session starts carries a token in its
environment, so the outer test can tell, once the session has ended,
that none of them is still running. A call that crashes leaves the server
serving; one that times out (before or after its child started) or whose
child writes into the server's reply pipe ends the server and fails alone,
and the next call gets a new server.
"""

from __future__ import annotations

import os
import re
import sys
import uuid
from pathlib import Path

import pytest

from pytest_torchcompile.snapshot.fresh_process.settings import FORK_VARIABLE, TIMEOUT_VARIABLE
from tests import zygote
from tests.conftest import DATA

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="the fork server runs on Linux")

#: what the inner tests share: the session's server, a model, and objects that act only when
#: unpickled, which happens in the fresh process alone (the test process deep-copies them).
COMMON = """
import os, signal, time, pytest, torch

def server():
    for pid in os.listdir("/proc"):
        try:
            with open(f"/proc/{pid}/stat") as stat:
                parent = int(stat.read().rsplit(")", 1)[1].split()[1])
            with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
                command = cmdline.read()
        except (OSError, ValueError, IndexError):
            continue
        if parent == os.getpid() and b"fresh_process.zygote" in command:
            return int(pid)
    return None

def arrive():
    # a fresh run sees no trace of an earlier one: the mark it leaves is gone in the next
    if hasattr(torch, "_left_by_an_earlier_run"):
        raise RuntimeError("this run saw what an earlier run left behind")
    torch._left_by_an_earlier_run = True
    return Probe()

class Probe:
    def __deepcopy__(self, memo):
        return type(self)()
    def __reduce__(self):
        return (arrive, ())

class Crash(Probe):
    def __reduce__(self):
        return (os.abort, ())

class Hang(Probe):
    def __reduce__(self):
        return (time.sleep, (3600,))

def scribble():
    # write into the server's reply pipe (its one write-only pipe): a reply to another request
    parent = os.getppid()
    for fd in os.listdir(f"/proc/{parent}/fd"):
        try:
            target = os.readlink(f"/proc/{parent}/fd/{fd}")
            with open(f"/proc/{parent}/fdinfo/{fd}") as info:
                flags = int(next(line for line in info if line.startswith("flags")).split()[1], 8)
        except (OSError, StopIteration):
            continue
        if target.startswith("pipe:") and flags & 3 == os.O_WRONLY:
            with open(f"/proc/{parent}/fd/{fd}", "wb", buffering=0) as pipe:
                pipe.write(b'{"n": 999, "exited": 0}\\n')
    return Probe()

class Scribble(Probe):
    def __reduce__(self):
        return (scribble, ())

class Lin(torch.nn.Module):
    def __init__(self, probe):
        super().__init__()
        torch.manual_seed(0)
        self.lin, self.probe = torch.nn.Linear(4, 4), probe

    def forward(self, x):
        return torch.relu(self.lin(x))

fresh = pytest.mark.compile_snapshot(backend="aot_eager", artifacts=("summary",), run_program=True)

def run(compile_model, probe):
    compile_model(Lin(probe), torch.randn(2, 4))
    print("SERVER", server())
"""

SESSION = (
    COMMON
    + """
@fresh
def test_first(compile_model):
    run(compile_model, Probe())
    with open(f"/proc/{server()}/status") as status:
        print([line for line in status if line.startswith("Threads:")][0].strip())

@fresh
def test_crash(compile_model):
    run(compile_model, Crash())

@fresh
def test_after_a_crash(compile_model):
    run(compile_model, Probe())

def limited(seconds, compile_model, probe):
    os.environ["PTC_FRESH_PROCESS_TIMEOUT"] = seconds
    try:
        run(compile_model, probe)
    finally:
        del os.environ["PTC_FRESH_PROCESS_TIMEOUT"]

@fresh
def test_hang(compile_model):
    limited("3", compile_model, Hang())

@fresh
def test_timeout_before_the_child_started(compile_model):
    limited("0.000001", compile_model, Probe())

@fresh
def test_a_bad_limit_set_during_the_run(compile_model):
    limited("inf", compile_model, Probe())

@fresh
def test_scribble(compile_model):
    run(compile_model, Scribble())

@fresh
def test_from_a_deleted_folder(compile_model, tmp_path):
    gone, here = tmp_path / "gone", os.getcwd()
    gone.mkdir()
    os.chdir(gone)
    gone.rmdir()
    try:
        run(compile_model, Probe())
    finally:
        os.chdir(here)

@fresh
def test_after_them(compile_model):
    run(compile_model, Probe())
    os.kill(server(), signal.SIGKILL)

@fresh
def test_after_the_server_died(compile_model):
    run(compile_model, Probe())
"""
)


def leftovers(token: str) -> list[int]:
    """Processes whose environment holds the token (every process the inner session started), but
    the suite's own zygote (tests/zygote.py), which outlives it when the session started it."""
    found = []
    ours = zygote.pid()
    for pid in os.listdir("/proc"):
        if pid == str(ours):
            continue
        try:
            environ = Path(f"/proc/{pid}/environ").read_bytes()
        except (OSError, ValueError):
            continue
        if token.encode() in environ:
            found.append(int(pid))
    return found


def test_runs_fork_from_one_server_each_independent_failures_named_nothing_left(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    token = f"PTC_SESSION_TOKEN_{uuid.uuid4().hex}"
    monkeypatch.setenv(token, "1")
    temp = pytester.mkdir("temp")
    monkeypatch.setenv("TMPDIR", str(temp))
    pytester.makepyfile(test_fresh=SESSION)
    result = pytester.runpytest("--update-snapshots", "-s")
    result.assert_outcomes(passed=5, failed=5)
    servers = re.findall(r"SERVER (\d+)", result.stdout.str())
    # a crash leaves the server serving; a timeout or a garbled reply ends it, and a new one serves
    assert len(servers) == 5, result.outlines
    assert servers[0] == servers[1] != servers[2] == servers[3] != servers[4], result.outlines
    result.stdout.fnmatch_lines(
        [
            "*Threads:*1",  # nothing runs a thread in the server before it forks
            "*_ test_crash _*",
            "*diverges at stage: program",
            "the fresh process that runs the program file failed (killed by SIGABRT):",
            "Fatal Python error: Aborted",
            "*_ test_hang _*",
            "*diverges at stage: program",
            f"the fresh process that runs the program file failed (killed after 3 s, the time limit; {TIMEOUT_VARIABLE} sets another)*",
            "*_ test_timeout_before_the_child_started _*",
            f"the fresh process that runs the program file failed (killed after 1e-06 s, the time limit; {TIMEOUT_VARIABLE} sets another)*",
            "*_ test_a_bad_limit_set_during_the_run _*",
            f"*run_program=True: {TIMEOUT_VARIABLE}='inf' is not a time limit: give a positive, finite number of seconds*",
            "*_ test_scribble _*",
            "the fresh process that runs the program file failed (its fork server's replies were garbled, so the server and the call were ended; *a reply to request 999 while waiting on request *",
        ]
    )
    assert "internal error" not in result.stdout.str()
    assert leftovers(token) == []
    assert list(temp.iterdir()) == []  # every fresh-process folder removed at its end


def test_each_xdist_worker_has_a_server_of_its_own(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    token = f"PTC_SESSION_TOKEN_{uuid.uuid4().hex}"
    monkeypatch.setenv(token, "1")
    tests = "\n".join(
        f"@fresh\ndef test_{i}(compile_model):\n    run(compile_model, Probe())\n    print('WORKER', os.environ['PYTEST_XDIST_WORKER'], server())\n"
        for i in range(4)
    )
    pytester.makepyfile(test_workers=COMMON + tests)
    result = pytester.runpytest("--update-snapshots", "-n", "2", "--dist", "load", "-rP")
    result.assert_outcomes(passed=4)
    pairs = {tuple(line.split()[1:3]) for line in result.outlines if line.startswith("WORKER ")}
    workers = {worker for worker, _ in pairs}
    by_worker = {worker: {pid for w, pid in pairs if w == worker} for worker in workers}
    assert all(len(pids) == 1 for pids in by_worker.values()), by_worker
    assert len({pid for _, pid in pairs}) == len(workers)
    assert leftovers(token) == []


def test_without_the_fork_server_each_call_is_a_new_interpreter(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(FORK_VARIABLE, "0")
    pytester.makepyfile(
        test_plain=COMMON
        + "@fresh\ndef test_plain(compile_model):\n    run(compile_model, Probe())\n"
    )
    result = pytester.runpytest("--update-snapshots", "-s")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*SERVER None*"])


#: on the import path of the inner session: a thread in the fork server alone, as a GPU machine's
#: CUDA driver starts one while the server imports torch (seen on an H100 with torch 2.11)
THREAD_IN_THE_SERVER = """
import sys, threading, time
if "pytest_torchcompile.snapshot.fresh_process.zygote" in sys.orig_argv:
    threading.Thread(target=time.sleep, args=(3600,), daemon=True, name="driver").start()
"""


def test_a_server_that_cannot_fork_safely_runs_each_call_as_a_new_interpreter(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(sitecustomize=THREAD_IN_THE_SERVER)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(pytester.path), *sys.path]))
    pytester.makepyfile(
        test_refused=COMMON
        + "".join(
            f"@fresh\ndef test_{i}(compile_model):\n    run(compile_model, Probe())\n"
            for i in range(2)
        )
    )
    result = pytester.runpytest("--update-snapshots", "-s")
    result.assert_outcomes(passed=2)
    # the server refused, was ended, and none was started for the second call
    assert re.findall(r"SERVER (\S+)", result.stdout.str()) == ["None", "None"], result.outlines


#: on the import path of the inner session: a GPU driver as seen on an H100 with torch 2.11, where
#: importing Inductor's compile_fx starts the CUDA driver's thread; here in the fork server's
#: processes alone (the server, and the children it forks)
DRIVER_ON_INDUCTOR_IMPORT = (DATA / "gpu_driver_sitecustomize.py").read_text()

#: in the child, while its call is unpickled: what it holds of the server (a copy of it as it was
#: when it forked), then what a run that needs Inductor does there
LOOK = """
import importlib, sys

def look():
    held = "torch._inductor.compile_fx" in sys.modules
    threads = len(os.listdir("/proc/self/task"))
    cuda = torch.cuda.is_initialized()
    importlib.import_module("torch._inductor.compile_fx")
    with open(os.environ["LOOK_OUT"], "a") as out:
        print("LOOK", held, threads, cuda, len(os.listdir("/proc/self/task")), file=out)
    return Probe()

class Look(Probe):
    def __reduce__(self):
        return (look, ())

"""


def test_a_server_whose_inductor_import_starts_a_thread_forks_without_it(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The server holds what comes before that import and never a thread or CUDA; each child imports
    Inductor itself, and every call is still forked from the one server, never a new interpreter."""
    pytester.makepyfile(sitecustomize=DRIVER_ON_INDUCTOR_IMPORT)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(pytester.path), *sys.path]))
    seen = pytester.path / "look.txt"
    monkeypatch.setenv("LOOK_OUT", str(seen))
    test = """
@fresh
def test_{i}(compile_model):
    result = compile_model(Lin(Look()), torch.randn(2, 4))
    with open(f"/proc/{{server()}}/cmdline", "rb") as cmdline:
        print("SERVER", server(), result.program_report.started, cmdline.read().split(b"\\0")[-6:])
    with open(f"/proc/{{server()}}/status") as status:
        print([line for line in status if line.startswith("Threads:")][0].strip())
"""
    pytester.makepyfile(test_driver=COMMON + LOOK + "".join(test.format(i=i) for i in range(2)))
    result = pytester.runpytest("--update-snapshots", "-s")
    result.assert_outcomes(passed=2)
    servers = re.findall(r"SERVER (\d+) \['forked'\] (.*)", result.stdout.str())
    assert len(servers) == 2 and servers[0] == servers[1], result.outlines
    # started again (exec) with the import that started the thread, and what follows, left out
    assert "b'--stop-before', b'torch._inductor.compile_fx'" in servers[0][1]
    result.stdout.fnmatch_lines(["*Threads:*1", "*Threads:*1"])
    # in each child: Inductor's compile_fx not held, 1 thread, no CUDA; imported there, the driver
    assert seen.read_text().splitlines() == ["LOOK False 1 False 2"] * 2


#: on the import path of the inner session: torch 2.11 on a machine whose driver sees
#: DRIVER_DEVICES GPUs, where importing Inductor asks `torch.cuda.is_available()` and asking the
#: driver starts its thread
DRIVER_ASKED_ON_INDUCTOR_IMPORT = (DATA / "gpu_driver_check_sitecustomize.py").read_text()

ASKED = """
def asked():
    from torch._inductor import compile_fx, cpu_vec_isa
    probed = cpu_vec_isa.valid_vec_isa_list.cache_info().currsize
    with open(os.environ["LOOK_OUT"], "a") as out:
        print("ASKED", compile_fx.ASKED, "ISA probed", probed, file=out)
    return Probe()

class Asked(Probe):
    def __reduce__(self):
        return (asked, ())

"""


@pytest.mark.parametrize("devices", [0, 1])
def test_a_server_asks_another_process_whether_cuda_is_there(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, devices: int
) -> None:
    """Inductor's import asks whether CUDA is available; the server's answer comes from a process
    of its own, so the server holds Inductor with one thread, and the modules hold the answer a
    fresh process gets. Where a device is seen, the ISA probe is left to the children."""
    pytester.makepyfile(sitecustomize=DRIVER_ASKED_ON_INDUCTOR_IMPORT)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(pytester.path), *sys.path]))
    monkeypatch.setenv("DRIVER_DEVICES", str(devices))
    seen = pytester.path / "asked.txt"
    monkeypatch.setenv("LOOK_OUT", str(seen))
    test = """
@fresh
def test_asked(compile_model):
    result = compile_model(Lin(Asked()), torch.randn(2, 4))
    with open(f"/proc/{server()}/cmdline", "rb") as cmdline:
        print("SERVER", result.program_report.started, cmdline.read().split(b"\\0")[-6:])
    with open(f"/proc/{server()}/status") as status:
        print([line for line in status if line.startswith("Threads:")][0].strip())
"""
    pytester.makepyfile(test_asked=COMMON + ASKED + test)
    result = pytester.runpytest("--update-snapshots", "-s")
    result.assert_outcomes(passed=1)
    (started,) = re.findall(r"SERVER \['forked'\] (.*)", result.stdout.str())
    assert "--stop-before" not in started, result.outlines  # it held Inductor: no start again
    result.stdout.fnmatch_lines(["*Threads:*1"])
    assert seen.read_text().splitlines() == [f"ASKED {devices > 0} ISA probed {int(not devices)}"]
