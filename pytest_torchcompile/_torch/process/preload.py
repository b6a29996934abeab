"""What a fork server imports and probes once, so that the processes it forks start warm.

The steps, in order: torch, Dynamo and AOTAutograd (`CORE`), then
Inductor's code cache, compile_fx and C++ builder (`INDUCTOR`: everything a
program file or a precompiled artifact loads) and Inductor's probe of the
vector instruction sets this host supports (`VEC_ISA_PROBE`: a C++ build and
a `dlopen` in a child Python, about 1.5 s that every fresh process otherwise
paid on its first C++ kernel). No step compiles a model or runs a tensor
operation, so no thread pool starts. `fork_unsafe` says why forking now
would be unsafe: a second thread (an OpenMP or intra-op pool, a GPU driver's
thread) or an initialized CUDA context would not survive into the child.
On a GPU machine an import may start the driver: the server checks after
each step and leaves that step and the ones after it to the children.
"""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
import warnings
from collections.abc import Callable
from typing import Any

#: torch and the tracing stack, imported by every fresh process
CORE = (
    "torch",
    "torch._dynamo",
    "torch._dynamo.eval_frame",
    "torch._dynamo.convert_frame",
    "torch._functorch.aot_autograd",
)
#: Inductor: what a program file's kernels or a precompiled artifact import while they load
INDUCTOR = (
    "torch._inductor.codecache",
    "torch._inductor.compile_fx",
    "torch._inductor.async_compile",
    "torch._inductor.cpp_builder",
    "torch._inductor.codegen.memory_planning",
    "torch._inductor.hooks",
    "torch.utils.cpp_extension",
)
#: the name of the step that asks Inductor which vector ISAs this host has
VEC_ISA_PROBE = "torch._inductor.cpu_vec_isa.valid_vec_isa_list()"
#: every module a program file or a precompiled artifact imports while it loads, in order
MODULES = (*CORE, *INDUCTOR)


def take_step(step: str) -> None:
    """Import one module (or run the ISA probe); compile nothing."""
    with warnings.catch_warnings():  # torch's import-time deprecations would only fill the log
        warnings.simplefilter("ignore")
        if step != VEC_ISA_PROBE:
            importlib.import_module(step)
            return
        from torch._inductor import cpu_vec_isa

        cpu_vec_isa.valid_vec_isa_list()  # cached for the process: the probe builds run once, here


def take_step_without_driver(step: str) -> None:
    """`take_step` in the fork server, where asking the CUDA driver would stop it forking.

    Asking the driver in a process starts the driver's thread, after which it must not fork;
    Inductor asks at import (torch 2.11's `runtime/benchmarking.py`, whose answer picks its
    benchmarker), so `torch.cuda.is_available()` asks another process instead
    (`_devices_seen`): the answer is the driver's all the same, and the modules hold what they
    would hold in a fresh process. Where the driver sees a device, the ISA probe is left to the
    children that build C++ kernels: it took 65 s on an H200 machine, for kernels a run on the
    GPU never builds.
    """
    torch = sys.modules.get("torch")
    if torch is None:
        take_step(step)
        return
    if step == VEC_ISA_PROBE and _devices_seen(torch):
        return
    asks_driver = torch.cuda.is_available
    torch.cuda.is_available = lambda: _available(asks_driver)
    try:
        take_step(step)
    finally:
        torch.cuda.is_available = asks_driver


#: how many devices the CUDA driver sees, asked in a process of its own (0: no driver)
_DEVICES_SEEN = """
import ctypes
try:
    cuda = ctypes.CDLL("libcuda.so.1")
except OSError:
    print(0)
else:
    count = ctypes.c_int(0)
    asked = cuda.cuInit(0) == 0 and cuda.cuDeviceGetCount(ctypes.byref(count)) == 0
    print(count.value if asked else 0)
"""
_seen: dict[str, bool | None] = {}


def _available(asks_driver: Callable[[], bool]) -> bool:
    """Whether torch sees a CUDA device, without the driver in this process where it can."""
    seen = _devices_seen(sys.modules["torch"])
    return asks_driver() if seen is None else seen  # asked here: the server may leave the step


def _devices_seen(torch: Any) -> bool | None:
    """Whether a CUDA build sees a device, asked once in another process; None if that failed."""
    if not torch.backends.cuda.is_built():  # `is_available` asks no driver then either
        return False
    if "cuda" not in _seen:
        try:
            done = subprocess.run(
                [sys.executable, "-c", _DEVICES_SEEN], capture_output=True, text=True, timeout=60
            )
            _seen["cuda"] = int(done.stdout) > 0
        except (OSError, ValueError, subprocess.SubprocessError):
            _seen["cuda"] = None
    return _seen["cuda"]


def fork_unsafe() -> str | None:
    """Why this process must not fork now (threads running, CUDA initialized), or None."""
    tasks = os.listdir("/proc/self/task") if os.path.isdir("/proc/self/task") else ["self"]
    if len(tasks) > 1:
        names = sorted(_thread_name(task) for task in tasks)
        return f"{len(tasks)} threads are running ({', '.join(names)}); a forked child would hold their locks"
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_initialized():
        return "CUDA is initialized, and a CUDA context does not survive a fork"
    return None


def _thread_name(task: str) -> str:
    try:
        with open(f"/proc/self/task/{task}/comm") as comm:
            return comm.read().strip()
    except OSError:
        return task
