"""What `compile_distributed` returns: rank 0's outputs, counters and artifacts, and every rank's."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .report import RankReport, Share


@dataclass(frozen=True)
class DistributedResult:
    """One distributed case: as `CompileResult` for rank 0 (whose artifacts are the snapshots),
    plus the run's own facts and every rank's report (`ranks`)."""

    output: Any
    eager_output: Any
    graph_count: int
    graph_break_count: int
    recompile_count: int
    kernel_count: int
    artifacts: Mapping[str, str]
    compile_seconds: float
    world_size: int
    #: the process group's backend: `gloo` (CPU) or `nccl` (a GPU per rank)
    backend: str
    wrapper: str
    #: DDP's buckets (the parts of its split graph; 0 where DDP split nothing)
    ddp_buckets: int
    #: how much of the model's forward ran compiled (`compiled_share` as a fraction)
    share: Share
    device_key: str
    ranks: tuple[RankReport, ...]

    @property
    def compiled_share(self) -> float:
        return self.share.fraction

    @classmethod
    def from_reports(
        cls, reports: list[RankReport], backend: str, wrapper: str
    ) -> DistributedResult:
        first = reports[0]
        return cls(
            output=first.output,
            eager_output=first.eager_output,
            artifacts=dict(first.texts),
            compile_seconds=first.compile_seconds,
            world_size=len(reports),
            backend=backend,
            wrapper=wrapper,
            ddp_buckets=first.buckets,
            share=first.share,
            device_key=first.device_key,
            ranks=tuple(reports),
            **{name: int(value) for name, value in first.counters.items()},
        )
