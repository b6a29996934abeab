"""Generated kernel modules and Inductor's compile workers.

`PyCodeCache.load(source)` imports a generated module (a Triton kernel
with its benchmark harness) from its source. With Triton, the first
Inductor compile starts a pool of worker processes that import torch in
the background for seconds (`AsyncCompile._ready_future`).
"""

from __future__ import annotations

import types


def load_module(source: str) -> types.ModuleType:
    """Import one generated module from its source, through Inductor's code cache."""
    from torch._inductor.codecache import PyCodeCache

    return PyCodeCache.load(source)


def settle_compile_workers(timeout: float = 120.0) -> None:
    """Wait for Inductor's compile workers, if a compile started them, to finish booting.

    Timing while they boot measures them too. Only waits on a pool that
    exists; a change in this private detail never fails the caller.
    """
    try:
        from torch._inductor.async_compile import AsyncCompile

        ready = getattr(AsyncCompile, "_ready_future", None)
        if ready is not None:
            ready.result(timeout=timeout)
    except Exception:  # a private detail of Inductor: never let it fail a benchmark
        pass
