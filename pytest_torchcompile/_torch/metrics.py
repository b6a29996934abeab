"""Dynamo's compile metrics: how long frame compiles took, as Dynamo measured them.

Dynamo records one `CompilationMetrics` per frame compile in a process-wide
list; `entire_frame_compile_time_s` is the whole compile of that frame
(tracing, AOTAutograd, the backend), without running the compiled code.
"""

from __future__ import annotations

from torch._dynamo.utils import clear_compilation_metrics, get_compilation_metrics


def clear() -> None:
    """Forget the metrics recorded so far."""
    clear_compilation_metrics()


def frame_compile_seconds() -> float:
    """Seconds spent compiling frames since the last `clear` (0.0 where a metric is missing)."""
    return sum(
        getattr(m, "entire_frame_compile_time_s", None) or 0.0 for m in get_compilation_metrics()
    )
