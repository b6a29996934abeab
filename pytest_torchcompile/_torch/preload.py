"""What a fork server imports and probes once, so that the processes it forks start warm.

`warm_up` imports torch, Dynamo, AOTAutograd and Inductor's code cache and
C++ builder (everything a program file or a precompiled artifact loads) and
asks Inductor which vector instruction sets this host supports (a C++ probe
build and a `dlopen` in a child Python: about 1.5 s that every fresh process
otherwise paid on its first C++ kernel). It compiles no model and runs no
tensor operation, so no thread pool starts. `fork_unsafe` says why forking
now would be unsafe: a second thread (an OpenMP or intra-op pool) or an
initialized CUDA context would not survive into the child.
"""

from __future__ import annotations

import importlib
import os
import warnings

#: the modules a program file or a precompiled artifact imports while it loads
MODULES = (
    "torch",
    "torch._dynamo",
    "torch._dynamo.eval_frame",
    "torch._dynamo.convert_frame",
    "torch._functorch.aot_autograd",
    "torch._inductor.codecache",
    "torch._inductor.compile_fx",
    "torch._inductor.async_compile",
    "torch._inductor.cpp_builder",
    "torch._inductor.codegen.memory_planning",
    "torch._inductor.hooks",
    "torch.utils.cpp_extension",
)


def warm_up() -> None:
    """Import what every fresh process needs and probe the host's vector ISAs; compile nothing."""
    with warnings.catch_warnings():  # torch's import-time deprecations would only fill the log
        warnings.simplefilter("ignore")
        for name in MODULES:
            importlib.import_module(name)
    from torch._inductor import cpu_vec_isa

    cpu_vec_isa.valid_vec_isa_list()  # cached for the process: the probe builds run once, here


def fork_unsafe() -> str | None:
    """Why this process must not fork now (threads running, CUDA initialized), or None."""
    import torch

    tasks = os.listdir("/proc/self/task") if os.path.isdir("/proc/self/task") else ["self"]
    if len(tasks) > 1:
        names = sorted(_thread_name(task) for task in tasks)
        return f"{len(tasks)} threads are running ({', '.join(names)}); a forked child would hold their locks"
    if torch.cuda.is_initialized():
        return "CUDA is initialized, and a CUDA context does not survive a fork"
    return None


def _thread_name(task: str) -> str:
    try:
        with open(f"/proc/self/task/{task}/comm") as comm:
            return comm.read().strip()
    except OSError:
        return task
