"""What `compile_benchmark` returns: one case's timings, counters and verdict."""

from __future__ import annotations

from dataclasses import dataclass, field

from .record import CaseRecord
from .stats import Summary


@dataclass(frozen=True)
class BenchmarkResult:
    """One case's figures; times are seconds per call, `speedup` is eager/compiled.

    `eager`, `compiled` and `speedup` are medians with min, quartiles and a
    confidence interval of the median (`Summary`). `gpu` holds the GPU
    metrics (empty on CPU, with the reason in `notes`), `kernel_times` the
    time of each Triton kernel. `verdict` is the gate's PASS, FAIL or
    INCONCLUSIVE under `--perf-gate`, else None.
    """

    case: str
    speedup: Summary
    eager: Summary
    compiled: Summary
    compile_seconds: float
    first_call_seconds: float
    threads: int
    rounds: int
    iterations: int
    graph_count: int
    graph_break_count: int
    recompile_count: int
    kernel_count: int
    gpu: dict[str, Summary]
    kernel_times: dict[str, Summary]
    notes: tuple[str, ...]
    verdict: str | None
    record: CaseRecord = field(repr=False)
