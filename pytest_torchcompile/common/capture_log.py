"""What a capture holds: trace records and rewritten bytecode per frame compile.

Plain data, no torch import: the artifact builders, the counters and the
guard emission read it, and the plugin loads them before anything imports
torch. `capture.py` fills it while a compiled call runs.
"""

from __future__ import annotations

import inspect
import types
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .._torch.guard_tree import GuardRow


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


@dataclass(frozen=True)
class Declined:
    """A frame Dynamo had compiled before and declined to compile again: that call ran its code as
    Python (every compile refused the inputs, and the new compile failed or found nothing)."""

    code: types.CodeType
    #: the code runs as Python from then on, even where an old compile's guards would pass
    for_good: bool
    call: int  # the case's call it happened in, from 1


@dataclass
class CaptureLog:
    """Everything captured for one case, across all of its calls."""

    records: list[TraceRecord] = field(default_factory=list)
    bytecode: list[BytecodeRecord] = field(default_factory=list)
    #: guard rows per frame compile, read from Dynamo's cache right after the compile
    guards: dict[FrameKey, tuple[GuardRow, ...]] = field(default_factory=dict)
    declined: list[Declined] = field(default_factory=list)
    calls: int = 0  # compiled calls captured so far

    def frames(self) -> list[FrameKey]:
        """Frame compiles in (frame, compile) order."""
        keys = {r.key for r in self.records} | {b.key for b in self.bytecode}
        return sorted(keys)

    def payloads(self, name: str, key: FrameKey | None = None) -> list[str]:
        """Payloads of one artifact in (frame, compile, occurrence) order."""
        hits = [r for r in self.records if r.name == name and (key is None or r.key == key)]
        return [r.payload for r in sorted(hits, key=lambda r: r.key)]

    def frame_names(self) -> dict[FrameKey, str]:
        """The user function each frame compile traced (from the bytecode hook)."""
        return {b.key: b.original.co_name for b in self.bytecode}

    def frame_signatures(self) -> dict[FrameKey, str]:
        """Each frame compile's function with its arguments, `forward(self, x, *, scale)`: a
        comparison reads a frame's inputs by their place in this list (see `signature`)."""
        return {b.key: signature(b.original) for b in self.bytecode}

    def only(self, key: FrameKey) -> CaptureLog:
        """The records and bytecode of one frame compile."""
        return CaptureLog(
            [r for r in self.records if r.key == key], [b for b in self.bytecode if b.key == key]
        )

    def frozen(self) -> CaptureLog:
        """A copy as of now: later calls of the case add to this log, not to the copy."""
        return CaptureLog(
            list(self.records),
            list(self.bytecode),
            dict(self.guards),
            list(self.declined),
            self.calls,
        )


def signature(code: types.CodeType) -> str:
    """`name(a, b, *args, c, **kwargs)`: a code object's arguments as Python writes them.

    Dynamo names a graph's inputs after the frame's locals (`L['x']`, `L_x_`);
    with the arguments in order a comparison can tell a parameter renamed
    (`x` -> `inp`, still the first argument: text) from another argument read
    (`x` -> `y`: behaviour).
    """
    names = code.co_varnames
    positional = code.co_argcount
    keyword_only = code.co_kwonlyargcount
    args = list(names[:positional])
    at = positional + keyword_only
    if code.co_flags & inspect.CO_VARARGS:
        args.append(f"*{names[at]}")
        at += 1
    elif keyword_only:
        args.append("*")
    args += names[positional : positional + keyword_only]
    if code.co_flags & inspect.CO_VARKEYWORDS:
        args.append(f"**{names[at]}")
    return f"{code.co_name}({', '.join(args)})"
