"""A rank's artifact texts: the snapshot wing's own, with what a distributed case adds.

The `summary` marks each graph break that happened inside torch's wrappers
(`[DDP: Logger.set_runtime_stats_and_log] ...`) apart from the user's, and
states the DDP buckets, how many breaks were the wrappers', and how much of
the model ran compiled; `ddp_split` (DDP's split graph) is snapshotted by
default where DDP split one. Pure text over a capture: no torch import.
"""

from __future__ import annotations

import dataclasses
import os

from ..._torch.patterns.distributed import break_function, ddp_buckets, wrapper_at, wrapper_named
from ..._torch.patterns.dynamo import BREAK_AT
from ...common.capture_log import CaptureLog
from ...common.counters import Counters
from ..artifacts.case_artifacts import CaseArtifacts
from ..artifacts.catalogue import ARTIFACTS, DEFAULT_ARTIFACTS, CaseCapture
from ..artifacts.normalize import Normalizer
from .report import Share

#: the artifact of DDP's split graph, and the summary's lines of a distributed case
DDP_SPLIT, SUMMARY = "ddp_split", "summary"
BUCKETS, WRAPPER_BREAKS, COMPILED_OPS = (
    "ddp buckets",
    "graph breaks in torch's wrappers",
    "compiled ops",
)


def buckets(log: CaptureLog) -> int:
    """DDP's buckets over every frame it split (0 where DDP split nothing)."""
    return sum(ddp_buckets(payload) for payload in log.payloads(DDP_SPLIT))


def wrapper_break(payload: str, rootdir: str) -> str | None:
    """The torch wrapper a graph break happened in, or None for the user's: located in the
    wrapper's file, or (outside the rootdir: a skipped function of DDP's is located in the
    standard library's `contextlib.py`) naming the wrapper's code as what Dynamo did not trace."""
    where = BREAK_AT.search(payload)
    path = where.group(1).rsplit(":", 1)[0] if where else ""
    wrapper = wrapper_at(path)
    if wrapper is None and not os.path.abspath(path).startswith(os.path.join(rootdir, "")):
        wrapper = wrapper_named(payload)
    return wrapper


def marked(counted: Counters, log: CaptureLog, rootdir: str) -> tuple[Counters, dict[str, int]]:
    """The counters with each break inside a torch wrapper marked (`[DDP: f] reason`), and
    how many breaks each wrapper caused."""
    reasons, by_wrapper = [], dict[str, int]()
    for reason, payload in zip(counted.break_reasons, log.payloads("graph_break_reason")):
        wrapper = wrapper_break(payload, rootdir)
        if wrapper is None:
            reasons.append(reason)
            continue
        by_wrapper[wrapper] = by_wrapper.get(wrapper, 0) + 1
        function = break_function(payload)
        reasons.append(f"[{wrapper}{': ' + function if function else ''}] {reason}")
    return dataclasses.replace(counted, break_reasons=tuple(reasons)), by_wrapper


def facts(
    counted: Counters, by_wrapper: dict[str, int], split: int, share: Share
) -> list[tuple[str, str]]:
    """The summary's lines after the counters: buckets, the wrappers' breaks, the compiled share."""
    lines = [(BUCKETS, str(split))] if split else []
    if counted.graph_break_count:
        whose = ", ".join(f"{w} {n}" for w, n in sorted(by_wrapper.items()))
        lines.append(
            (
                WRAPPER_BREAKS,
                f"{sum(by_wrapper.values())} of {counted.graph_break_count}"
                + (f" ({whose})" if whose else ""),
            )
        )
    return [*lines, (COMPILED_OPS, share.line())]


def rank_texts(
    log: CaptureLog,
    counted: Counters,
    backend: str,
    wanted: tuple[str, ...] | None,
    normalizer: Normalizer,
    share: Share,
    rootdir: str,
) -> tuple[dict[str, str], str]:
    """artifact name -> text as stored (the requested artifacts, or the defaults the compile
    produced with `ddp_split` where DDP split a graph), and the summary, which the ranks compare
    whether it is stored or not."""
    counted, by_wrapper = marked(counted, log, rootdir)
    capture = CaseCapture(
        log, counted=counted, facts=tuple(facts(counted, by_wrapper, buckets(log), share))
    )
    if wanted is None:
        produced = [a for a in (*DEFAULT_ARTIFACTS, ARTIFACTS[DDP_SPLIT]) if a.produced(log)]
        wanted = tuple(a.name for a in produced)
    texts = dict(CaseArtifacts(capture, backend, wanted, normalizer))
    summary = texts.get(SUMMARY) or ARTIFACTS[SUMMARY].text(capture, backend, normalizer)
    return texts, summary
