"""What `compile_benchmark` returns: one case's timings, counters and verdict."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .facts.runs import Fact, Varies
from .record import CaseRecord
from .stats import Summary


class Figure(float):
    """A measured median that compares and computes as a number, its spread kept beside it.

    `result.speedup > 1.0` and `f"{result.speedup:.2f}"` read the median;
    `result.speedup.ci_low`, `.ci_high`, `.min`, `.q1`, `.q3`, `.iqr`, `.n`
    and `.summary` (the `Summary`) give the rest.
    """

    summary: Summary

    def __new__(cls, summary: Summary) -> Figure:
        figure = super().__new__(cls, summary.median)
        figure.summary = summary
        return figure

    def __getnewargs__(self) -> tuple[Any, ...]:  # type: ignore[override]
        return (self.summary,)

    def __getattr__(self, name: str) -> Any:
        if name == "summary":  # not set yet (unpickling): no recursion through __getattr__
            raise AttributeError(name)
        return getattr(self.summary, name)

    def __repr__(self) -> str:
        s = self.summary
        return f"{s.median:.4g} [{s.ci_low:.4g}, {s.ci_high:.4g}]"


@dataclass(frozen=True)
class CompileTime:
    """The fresh-process compiles of a case (`compile_time=True`), `runs` a side.

    `cold_cpu` and `warm_cpu` are CPU seconds of the compiling process and
    its children over the first compiled call; `*_wall` that call's wall
    time; `*_frame_compile` Dynamo's own `entire_frame_compile_time_s`; each
    a `Figure` (median over the runs, with its interval). `cold_facts` and
    `warm_facts` are the exact facts (`fx_graph.hit`, `codegen`, ...; a
    `Varies` where the runs differed); `warm_misses` says why a warm lookup
    missed, where one did.
    """

    runs: int
    cold_cpu: Figure
    warm_cpu: Figure
    cold_wall: Figure
    warm_wall: Figure
    cold_frame_compile: Figure
    warm_frame_compile: Figure
    cold_facts: dict[str, Fact | Varies]
    warm_facts: dict[str, Fact | Varies]
    warm_misses: tuple[str, ...]

    @classmethod
    def from_record(cls, record: CaseRecord) -> CompileTime | None:
        block, m = record.compile, record.metrics
        if block is None:
            return None
        figures = {
            f"{side}_{name}": Figure(m[f"{side}_{metric}"])
            for side in ("cold", "warm")
            for name, metric in (
                ("cpu", "cpu_s"),
                ("wall", "wall_s"),
                ("frame_compile", "frame_compile_s"),
            )
        }
        return cls(
            block.runs,
            **figures,
            cold_facts=dict(block.cold.facts),
            warm_facts=dict(block.warm.facts),
            warm_misses=block.warm_misses,
        )


@dataclass(frozen=True)
class BenchmarkResult:
    """One case's figures; times are seconds per call, `speedup` is eager/compiled.

    `eager`, `compiled` and `speedup` are `Figure`s: the median, usable as a
    number, with min, quartiles and a confidence interval of the median as
    attributes. `gpu` holds the GPU metrics (empty on CPU, with the reason in
    `notes`), `kernel_times` the time of each Triton kernel, both as
    `Figure`s. `verdict` is the gate's PASS, FAIL or INCONCLUSIVE under
    `--torchcompile-perf-gate`, else None. `compile_time` holds the
    fresh-process compiles under `compile_time=True`, else None.
    """

    case: str
    speedup: Figure
    eager: Figure
    compiled: Figure
    compile_seconds: float
    first_call_seconds: float
    threads: int
    rounds: int
    iterations: int
    graph_count: int
    graph_break_count: int
    recompile_count: int
    kernel_count: int
    gpu: dict[str, Figure]
    kernel_times: dict[str, Figure]
    notes: tuple[str, ...]
    verdict: str | None
    record: CaseRecord = field(repr=False)
    compile_time: CompileTime | None = None
