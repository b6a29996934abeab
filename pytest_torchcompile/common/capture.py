"""Capture what torch.compile produced, through the same channel tlparse reads.

A handler on torch's structured-trace logger (`torch.__trace`) is attached for
the duration of each compiled call and receives every artifact record: FX
graphs, output code, guards, runtime wrappers, graph-break and recompile
reasons. A bytecode hook sees Dynamo's transformed code. Both are removed
afterwards, even when the compile raises. Records are keyed by (frame,
compile, name, occurrence), never by arrival order, which differs between
cold and warm caches.
"""

from __future__ import annotations

import contextlib
import logging
import types
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import torch
import torch._inductor.config as inductor_config
from torch._dynamo.convert_frame import register_bytecode_hook
from torch._guards import CompileContext
from torch._logging._internal import trace_log

if TYPE_CHECKING:
    from ..snapshot.guards import GuardRow

#: trace record kind (or artifact name) -> the plugin's name for it.
RECORD_NAMES: dict[str, str] = {
    "dynamo_output_graph": "dynamo_graph",
    "aot_forward_graph": "aot_forward",
    "aot_backward_graph": "aot_backward",
    "aot_inference_graph": "aot_inference",
    "inductor_post_grad_graph": "post_grad_graph",
    "inductor_output_code": "output_code",
    "dynamo_cpp_guards_str": "guards",
    "runtime_wrapper_orchestration": "runtime_wrapper",
    "compiled_fn_wrapper": "runtime_wrapper",
    "dynamo_graph_break_reason": "graph_break_reason",
    "recompile_reasons": "recompile_reasons",
}

#: Inductor settings that make generated C++ independent of the host: no
#: OpenMP blocks whatever the thread count, and 256-bit vectors on AVX2 and
#: AVX-512 machines alike (DESIGN section 3).
HOST_PINNED_CONFIG: dict[str, Any] = {"cpp.threads": 1, "cpp.simdlen": 256}


@dataclass(frozen=True, order=True)
class FrameKey:
    """One Dynamo frame compile: the frame and which compile of it."""

    frame_id: int
    compile_id: int


@dataclass
class TraceRecord:
    """One artifact payload as torch emitted it, before normalization."""

    key: FrameKey
    name: str
    payload: str


@dataclass
class BytecodeRecord:
    """A frame's code before and after Dynamo rewrote it."""

    key: FrameKey
    original: types.CodeType
    transformed: types.CodeType


@dataclass
class CaptureLog:
    """Everything captured for one case, across all of its calls."""

    records: list[TraceRecord] = field(default_factory=list)
    bytecode: list[BytecodeRecord] = field(default_factory=list)
    #: guard rows per frame compile, read from Dynamo's cache right after the compile
    guards: dict[FrameKey, tuple[GuardRow, ...]] = field(default_factory=dict)

    def frames(self) -> list[FrameKey]:
        """Frame compiles in (frame, compile) order."""
        keys = {r.key for r in self.records} | {b.key for b in self.bytecode}
        return sorted(keys)

    def payloads(self, name: str, key: FrameKey | None = None) -> list[str]:
        """Payloads of one artifact in (frame, compile, occurrence) order."""
        hits = [r for r in self.records if r.name == name and (key is None or r.key == key)]
        return [r.payload for r in sorted(hits, key=lambda r: r.key)]


class _TraceHandler(logging.Handler):
    """Collect the structured-trace records the plugin snapshots; print nothing."""

    def __init__(self, log: CaptureLog) -> None:
        super().__init__(level=logging.DEBUG)
        self.log = log

    def emit(self, record: logging.LogRecord) -> None:
        metadata = getattr(record, "metadata", None)
        if not isinstance(metadata, dict) or not metadata:
            return
        kind = next(iter(metadata))
        if kind == "artifact":
            kind = metadata["artifact"].get("name", "")
        name = RECORD_NAMES.get(kind)
        if name is None or metadata.get("frame_id") is None:
            return
        key = FrameKey(int(metadata["frame_id"]), int(metadata.get("frame_compile_id") or 0))
        payload = getattr(record, "payload", None) or ""
        if name == "post_grad_graph" and self._is_duplicate(key, name, payload):
            return
        self.log.records.append(TraceRecord(key, name, payload))

    def _is_duplicate(self, key: FrameKey, name: str, payload: str) -> bool:
        """A cache hit emits the post-grad graph both as a record and an artifact."""
        previous = [r for r in self.log.records if r.key == key and r.name == name]
        return bool(previous) and previous[-1].payload == payload


def _current_frame_key() -> FrameKey:
    compile_id = CompileContext.current_compile_id()
    if compile_id is None or compile_id.frame_id is None:
        return FrameKey(-1, 0)
    return FrameKey(compile_id.frame_id, compile_id.frame_compile_id or 0)


@contextlib.contextmanager
def capturing(log: CaptureLog, pin_host: bool = True) -> Iterator[CaptureLog]:
    """Attach the trace handler and bytecode hook for the duration of a call.

    `pin_host` patches Inductor's codegen settings so generated C++ is the
    same on every x86 host (see `HOST_PINNED_CONFIG`).
    """
    hook = register_bytecode_hook(
        lambda original, transformed: log.bytecode.append(BytecodeRecord(_current_frame_key(), original, transformed))
    )
    try:
        with trace_only_to(_TraceHandler(log)), inductor_config.patch(HOST_PINNED_CONFIG if pin_host else {}):
            yield log
    finally:
        hook.remove()


@contextlib.contextmanager
def trace_only_to(handler: logging.Handler | None) -> Iterator[None]:
    """Send torch's structured trace to `handler` alone (None: to no one) for a while.

    pytest's log capture attaches its handlers to this non-propagating logger
    too; they are detached meanwhile so the trace does not flood test reports
    (and torch does not build payloads nobody reads).
    """
    previous_level, previous_propagate = trace_log.level, trace_log.propagate
    foreign = list(trace_log.handlers)
    for other in foreign:
        trace_log.removeHandler(other)
    if handler is not None:
        trace_log.addHandler(handler)
        trace_log.setLevel(logging.DEBUG)
    trace_log.propagate = False  # records are for `handler` only, not for pytest's log capture
    try:
        yield
    finally:
        if handler is not None:
            trace_log.removeHandler(handler)
        trace_log.setLevel(previous_level)
        trace_log.propagate = previous_propagate
        for other in foreign:
            trace_log.addHandler(other)


def reset_dynamo() -> None:
    """Forget earlier compiles so frame ids do not depend on test order."""
    torch._dynamo.reset()
