"""The `summary` artifact, written and read back in one place.

`write` lays out a capture's counters, one fact a line, for a reviewer to
read first; `read` takes any such text (also one recorded by another version
of the plugin) back to a `CaseSummary`, with None where a line is missing.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from ...common.capture_log import FrameKey
from ...common.counters import COUNTER_LABELS, Counters, FrameCounters

_LABELS = "|".join(re.escape(label) for label in COUNTER_LABELS.values())
_FIELD = re.compile(rf"^(backend|{_LABELS}): *(.*)$")
#: a fact a kind of case adds after the frames, unindented: `ddp buckets: 4`
_FACT = re.compile(r"^([a-z][\w' ]*): (.+)$")
_FRAME = re.compile(r"^\s+- frame (\d+) compile (\d+): (.*): (\d+) ops, (\d+) kernels\s*$")
_BULLET = re.compile(r"^  - (.*)$")
_CONTINUED = re.compile(r"^    (\S.*)$")
_KERNEL_LINE = re.compile(r"^\s{6,}(\w+)\s*$")
_REASONS = {"graph breaks": "break_reasons", "recompiles": "recompile_reasons"}


def write(backend: str, c: Counters, facts: Iterable[tuple[str, str]] = ()) -> str:
    """The counters a reviewer reads first, one fact a line; then `facts`, `label: value` lines
    a kind of case adds (a distributed case's DDP buckets), not read back as counters."""
    lines = [
        f"backend: {backend}",
        f"graphs: {c.graph_count}",
        f"graph breaks: {c.graph_break_count}",
        *_bullets(c.break_reasons),
        f"recompiles: {c.recompile_count}",
        *_bullets(c.recompile_reasons),
        f"kernels: {c.kernel_count}",
        "frames:",
    ]
    for f in c.frames:
        key = f"frame {f.key.frame_id} compile {f.key.compile_id}"
        lines.append(f"  - {key}: {f.name}: {f.ops} ops, {len(f.kernels)} kernels")
        lines.extend(f"      {k}" for k in f.kernels)
    lines.extend(f"{label}: {value}" for label, value in facts)
    return "\n".join(lines) + "\n"


def _bullets(items: Iterable[str]) -> list[str]:
    lines = []
    for item in items:
        first, *rest = item.splitlines() or [""]
        lines.append(f"  - {first}")
        lines.extend(f"    {line}" for line in rest)
    return lines


@dataclass(frozen=True)
class CaseSummary:
    """A `summary` text read back; a counter the text lacks is None. Each frame's line
    (`- frame F compile C: NAME: N ops, K kernels`) reads back as the `FrameCounters` it was
    written from."""

    backend: str | None = None
    graph_count: int | None = None
    graph_break_count: int | None = None
    recompile_count: int | None = None
    kernel_count: int | None = None
    break_reasons: tuple[str, ...] = ()
    recompile_reasons: tuple[str, ...] = ()
    frames: tuple[FrameCounters, ...] = ()
    #: the `label: value` lines a kind of case adds after the frames (`ddp buckets: 4`)
    facts: tuple[tuple[str, str], ...] = ()

    def ops_per_graph(self) -> tuple[int, ...] | None:
        return tuple(f.ops for f in self.frames) if self.frames else None


def read(text: str) -> CaseSummary:
    """Counters, reasons and per-frame ops and kernels from a `summary` text."""
    fields: dict[str, str] = {}
    reasons: dict[str, list[str]] = {label: [] for label in _REASONS}
    frames: list[FrameCounters] = []
    facts: list[tuple[str, str]] = []
    section = ""
    for line in text.splitlines():
        if (match := _FIELD.match(line)) is not None:
            section = match[1]
            fields[section] = match[2].strip()
        elif line.startswith("frames:"):
            section = "frames"
        elif section == "frames" and (match := _FACT.match(line)) is not None:
            facts.append((match[1], match[2].strip()))
        elif section == "frames":
            _read_frame_line(line, frames)
        elif section in reasons:
            _read_reason_line(line, reasons[section])
    counters = {name: _int(fields.get(label)) for name, label in COUNTER_LABELS.items()}
    return CaseSummary(
        backend=fields.get("backend"),
        **counters,
        break_reasons=tuple(reasons["graph breaks"]),
        recompile_reasons=tuple(reasons["recompiles"]),
        frames=tuple(frames),
        facts=tuple(facts),
    )


def _read_frame_line(line: str, frames: list[FrameCounters]) -> None:
    if (match := _FRAME.match(line)) is not None:
        key = FrameKey(int(match[1]), int(match[2]))
        frames.append(FrameCounters(key, match[3], int(match[4]), ()))
    elif frames and (match := _KERNEL_LINE.match(line)) is not None:
        last = frames[-1]
        frames[-1] = FrameCounters(last.key, last.name, last.ops, (*last.kernels, match[1]))


def _read_reason_line(line: str, reasons: list[str]) -> None:
    if (match := _BULLET.match(line)) is not None:
        reasons.append(match[1].strip())
    elif reasons and (match := _CONTINUED.match(line)) is not None:
        reasons[-1] += "\n" + match[1]


def _int(value: str | None) -> int | None:
    return int(value) if value is not None and value.isdigit() else None
