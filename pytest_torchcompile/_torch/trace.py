"""torch's structured trace (`torch.__trace`): the logger, and what its records hold.

Every artifact the plugin snapshots passes through `trace_structured`,
which writes to this logger only when it has a handler. A record carries
`record.metadata` (a dict whose first key is the record kind, or
`artifact` with the real name under `metadata["artifact"]["name"]`, plus
`frame_id` and `frame_compile_id`) and `record.payload` (the text).

torch's own handler (`LazyTraceHandler`) sits on the same logger; given a
folder by `TORCH_TRACE=dir` (or `TORCH_COMPILE_DEBUG=1`) it writes the trace
files tlparse reads, and it stays attached while the plugin captures;
`trace_files_in` points it at a folder of one test's own for a while.
"""

from __future__ import annotations

import contextlib
import logging
import sys
import types
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from torch._logging import _internal, trace_structured
from torch._logging._internal import trace_log

from .formats import ARTIFACT_KIND, TRACE_RECORDS


@dataclass(frozen=True)
class TraceEvent:
    """One record the plugin keeps: its stream, its frame compile, its text."""

    stream: str
    frame_id: int
    compile_id: int
    payload: str


def decode(record: logging.LogRecord) -> TraceEvent | None:
    """The record as an event, or None for a record of no stream (timings, cache events ...)."""
    metadata = getattr(record, "metadata", None)
    if not isinstance(metadata, dict) or not metadata:
        return None
    kind = next(iter(metadata))
    if kind == ARTIFACT_KIND:
        kind = metadata[ARTIFACT_KIND].get("name", "")
    stream = TRACE_RECORDS.get(kind)
    if stream is None or metadata.get("frame_id") is None:
        return None
    payload = getattr(record, "payload", None) or ""
    return TraceEvent(
        stream, int(metadata["frame_id"]), int(metadata.get("frame_compile_id") or 0), payload
    )


def writes_trace_files(handler: logging.Handler) -> bool:
    """torch's own trace handler with a folder to write to (TORCH_TRACE): tlparse's input."""
    own = getattr(_internal, "LazyTraceHandler", None)
    return (
        own is not None
        and isinstance(handler, own)
        and getattr(handler, "root_dir", None) is not None
    )


@contextlib.contextmanager
def trace_only_to(
    handler: logging.Handler | None, kinds: Collection[str] | None = None
) -> Iterator[None]:
    """Send torch's structured trace to `handler` (None: to no one) for a while,
    and to torch's own trace files where `TORCH_TRACE` asked for them.

    Every other handler is detached meanwhile: pytest's log capture attaches
    its handlers to this non-propagating logger too, and the trace would
    flood test reports (and torch would build payloads nobody reads). With
    `kinds`, the records `handler` keeps, torch builds no other record
    (`building_only`).
    """
    previous_level, previous_propagate = trace_log.level, trace_log.propagate
    foreign = [other for other in trace_log.handlers if not writes_trace_files(other)]
    for other in foreign:
        trace_log.removeHandler(other)
    if handler is not None:
        trace_log.addHandler(handler)
        trace_log.setLevel(logging.DEBUG)
    trace_log.propagate = False  # records are for `handler` only, not for pytest's log capture
    try:
        with building_only(kinds) if kinds is not None else contextlib.nullcontext():
            yield
    finally:
        if handler is not None:
            trace_log.removeHandler(handler)
        trace_log.setLevel(previous_level)
        trace_log.propagate = previous_propagate
        for other in foreign:
            trace_log.addHandler(other)


@contextlib.contextmanager
def building_only(kinds: Collection[str]) -> Iterator[None]:
    """While inside, `trace_structured` builds and emits only records of these kinds.

    With any handler on its logger, torch builds every record's metadata and
    payload (graphs printed, metrics and tensor descriptions serialized to
    JSON) before a handler sees it: a tenth of a warm compile of a small
    model, spent on records the capture drops. Each module that holds
    `trace_structured` (torch's callers import it by name or reach it through
    `torch._logging`) holds a filter meanwhile that calls it only for these
    kinds (an artifact's kind is its name). Where `TORCH_TRACE` writes
    trace files, tlparse reads every record: nothing is filtered then.
    """
    original = _internal.trace_structured
    if getattr(original, "_builds_only", None) is not None or any(
        writes_trace_files(h) for h in trace_log.handlers
    ):
        yield
        return
    filtered = _filter(original, frozenset(kinds))
    holders = [m for m in _holders(original) if m.__dict__.get("trace_structured") is original]
    for module in holders:
        module.trace_structured = filtered  # type: ignore[attr-defined]
    try:
        yield
    finally:
        for module in holders:
            if module.__dict__.get("trace_structured") is filtered:
                module.trace_structured = original  # type: ignore[attr-defined]


#: (the function, how many modules were loaded, the modules that held it then)
_HOLDERS: list[tuple[object, int, list[types.ModuleType]]] = []


def _holders(function: object) -> list[types.ModuleType]:
    """The loaded modules that hold `function` as `trace_structured`, looked for again only
    once more modules are loaded (a look through every module costs a millisecond or two)."""
    loaded = len(sys.modules)
    if _HOLDERS and _HOLDERS[0][0] is function and _HOLDERS[0][1] == loaded:
        return _HOLDERS[0][2]
    found = [
        module
        for module in list(sys.modules.values())
        if isinstance(module, types.ModuleType)
        and module.__dict__.get("trace_structured") is function
    ]
    _HOLDERS[:] = [(function, loaded, found)]
    return found


def _filter(original: Callable[..., None], kinds: frozenset[str]) -> Callable[..., None]:
    def trace_structured(name: str, metadata_fn: Callable[[], Any] = dict, **kwargs: Any) -> None:
        if name == ARTIFACT_KIND:
            metadata = metadata_fn()
            if not isinstance(metadata, dict) or metadata.get("name") not in kinds:
                return
            original(name, lambda: metadata, **kwargs)
        elif name in kinds:
            original(name, metadata_fn, **kwargs)

    trace_structured._builds_only = kinds  # type: ignore[attr-defined]
    return trace_structured


#: the artifact record that names the test in its own trace file (tlparse lists it under [-/-]).
TEST_RECORD = "pytest_test"


@contextlib.contextmanager
def trace_files_in(subfolder: str, test: str) -> Iterator[Path | None]:
    """While inside, torch's trace files (`TORCH_TRACE=dir`) go to `dir/subfolder`.

    Yields that folder, or None where torch writes no trace files. The file
    is opened on the first record (a test that compiles nothing leaves
    none); where one was written, a last record names `test`, so tlparse's
    output of that file says which test it traced. torch's own handler is
    back in place afterwards.
    """
    own = next((h for h in trace_log.handlers if writes_trace_files(h)), None)
    if own is None:
        yield None
        return
    folder = Path(own.root_dir) / subfolder  # type: ignore[attr-defined]
    handler = _internal.LazyTraceHandler(str(folder))
    handler.setFormatter(own.formatter)  # torch's trace format: what tlparse parses
    handler.setLevel(own.level)
    trace_log.removeHandler(own)
    trace_log.addHandler(handler)
    try:
        yield folder
    finally:
        if handler.stream is not None:
            trace_structured(
                "artifact",
                metadata_fn=lambda: {"name": TEST_RECORD, "encoding": "string"},
                payload_fn=lambda: test,
            )
        trace_log.removeHandler(handler)
        handler.close()
        trace_log.addHandler(own)
