"""The counters of a capture: graphs, graph breaks, recompiles, kernels, ops per frame.

Counted from the trace records alone (`CaptureLog`), the same way for a
snapshot's `summary` and a benchmark's exact counters, so both wings agree
on what "one graph break" is. No torch import: the formats come from
`_torch/formats.py` and `_torch/patterns/dynamo.py`.
"""

from __future__ import annotations

from dataclasses import dataclass

from .._torch.formats import FX_BODY_START, FX_OP_LINE, kernel_names, recompile_reasons
from .._torch.patterns.dynamo import BREAK_AT, BREAK_REASON
from .capture_log import CaptureLog, FrameKey

#: The four counters, each as its attribute (on `CompileResult`, `BenchmarkResult`
#: and in JSON) and as its label (in the `summary` text and the tables).
COUNTER_LABELS: dict[str, str] = {
    "graph_count": "graphs",
    "graph_break_count": "graph breaks",
    "recompile_count": "recompiles",
    "kernel_count": "kernels",
}


#: the attribute names perf baselines and reports were written with before the counters had
#: one spelling everywhere; stored records may hold them still.
LEGACY_NAMES: dict[str, str] = {
    "graphs": "graph_count",
    "graph_breaks": "graph_break_count",
    "recompiles": "recompile_count",
    "kernels": "kernel_count",
}


@dataclass(frozen=True)
class FrameCounters:
    """One frame compile's counts: written into the `summary` artifact and read back from it."""

    key: FrameKey
    name: str
    ops: int
    kernels: tuple[str, ...]


@dataclass(frozen=True)
class Counters:
    """The case's counters, as `CompileResult` exposes them."""

    graph_count: int
    graph_break_count: int
    recompile_count: int
    kernel_count: int
    break_reasons: tuple[str, ...]
    recompile_reasons: tuple[str, ...]
    frames: tuple[FrameCounters, ...]

    def as_dict(self) -> dict[str, int]:
        """The four counters by attribute name, in `COUNTER_LABELS` order."""
        return {name: getattr(self, name) for name in COUNTER_LABELS}


def count_fx_ops(graph_text: str) -> int:
    """Operations in a printed FX graph: assignments that are not renames or deletions."""
    body = graph_text.split(FX_BODY_START, 1)[-1]
    return len(FX_OP_LINE.findall(body))


def counters(log: CaptureLog) -> Counters:
    """Graphs, breaks, recompiles and kernels, all counted from the records."""
    names = log.frame_names()
    frames = tuple(
        FrameCounters(
            key=key,
            name=names.get(key, "?"),
            ops=sum(count_fx_ops(g) for g in log.payloads("dynamo_graph", key)),
            kernels=tuple(
                k for code in log.payloads("output_code", key) for k in kernel_names(code)
            ),
        )
        for key in log.frames()
    )
    breaks = tuple(break_summary(p) for p in log.payloads("graph_break_reason"))
    recompiles = tuple(r for p in log.payloads("recompile_reasons") for r in recompile_reasons(p))
    return Counters(
        graph_count=len(log.payloads("dynamo_graph")),
        graph_break_count=len(breaks),
        recompile_count=sum(1 for key in log.frames() if key.compile_id > 0),
        kernel_count=sum(len(f.kernels) for f in frames),
        break_reasons=breaks,
        recompile_reasons=recompiles,
        frames=frames,
    )


def break_summary(payload: str) -> str:
    """`<reason> at <file:line>` from one graph-break record."""
    reason = BREAK_REASON.search(payload)
    where = BREAK_AT.search(payload)
    text = reason.group(1).strip() if reason else payload.strip().splitlines()[0]
    return f"{text} at {where.group(1)}" if where else text
