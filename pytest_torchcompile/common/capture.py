"""Capture what torch.compile produced, through the same channel tlparse reads.

A handler on torch's structured-trace logger is attached for the duration
of each compiled call and receives the artifact records the plugin keeps:
FX graphs, output code, guards, runtime wrappers, graph-break and recompile
reasons (torch builds no other record meanwhile, unless `TORCH_TRACE` writes
them to files). A
bytecode hook sees Dynamo's transformed code, a decline hook the compiled
frames it ran as Python after all. All are removed afterwards,
even when the compile raises. Records are keyed by (frame, compile, name,
occurrence), never by arrival order, which differs between cold and warm
caches. What the records are called and hold is `_torch`'s business
(`_torch/trace.py`, `_torch/formats.py`).
"""

from __future__ import annotations

import contextlib
import logging
import types
from collections.abc import Iterator

from .._torch import config, dynamo
from .._torch.formats import EMITTED_TWICE_ON_CACHE_HIT, TRACE_RECORDS
from .._torch.trace import decode, trace_only_to
from .capture_log import BytecodeRecord, CaptureLog, Declined, FrameKey, TraceRecord

__all__ = ["BytecodeRecord", "CaptureLog", "FrameKey", "TraceRecord", "capturing", "reset_dynamo"]


class _TraceHandler(logging.Handler):
    """Collect the structured-trace records the plugin snapshots; print nothing."""

    def __init__(self, log: CaptureLog) -> None:
        super().__init__(level=logging.DEBUG)
        self.log = log

    def emit(self, record: logging.LogRecord) -> None:
        event = decode(record)
        if event is None:
            return
        key = FrameKey(event.frame_id, event.compile_id)
        if event.stream in EMITTED_TWICE_ON_CACHE_HIT and self._is_duplicate(
            key, event.stream, event.payload
        ):
            return
        self.log.records.append(TraceRecord(key, event.stream, event.payload))

    def _is_duplicate(self, key: FrameKey, name: str, payload: str) -> bool:
        """A cache hit emits the post-grad graph both as a record and an artifact."""
        previous = [r for r in self.log.records if r.key == key and r.name == name]
        return bool(previous) and previous[-1].payload == payload


def _current_frame_key() -> FrameKey:
    compile_id = dynamo.current_compile_id()
    return FrameKey(-1, 0) if compile_id is None else FrameKey(*compile_id)


@contextlib.contextmanager
def capturing(log: CaptureLog, pin_host: bool = True) -> Iterator[CaptureLog]:
    """Attach the trace handler and bytecode hook for the duration of a call.

    `pin_host` patches Inductor's codegen settings so generated C++ is the
    same on every x86 host (see `_torch.config.HOST_PINNED_CONFIG`).
    """

    def on_bytecode(original: types.CodeType, transformed: types.CodeType) -> None:
        log.bytecode.append(BytecodeRecord(_current_frame_key(), original, transformed))

    def on_decline(code: types.CodeType, for_good: bool) -> None:
        if any(b.original is code for b in log.bytecode):  # not a frame it never compiles
            log.declined.append(Declined(code, for_good, log.calls))

    log.calls += 1
    with dynamo.bytecode_hook(on_bytecode), dynamo.decline_hook(on_decline):
        with (
            trace_only_to(_TraceHandler(log), TRACE_RECORDS),
            config.patched(config.HOST_PINNED_CONFIG if pin_host else None),
        ):
            yield log


def reset_dynamo() -> None:
    """Forget earlier compiles so frame ids do not depend on test order."""
    dynamo.reset()
