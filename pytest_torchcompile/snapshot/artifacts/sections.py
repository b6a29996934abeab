"""The per-frame layout every artifact file shares: one section per frame compile.

Written as `# ===== frame F compile C: NAME(ARGUMENTS) =====` (`frame_header`) and read
back by `split_sections`, so a graph break or a recompile is a new section in
a diff, and a comparison can pair sections by frame compile.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from ...common.capture_log import CaptureLog, FrameKey

#: `# ===== frame 0 compile 1: forward ===== [2 of 2]`, as `frame_header` and `record_artifact` write it.
SECTION_HEADER = re.compile(
    r"^# ===== frame (\d+) compile (\d+)(?:: (.*?))? =====(?: \[(\d+) of \d+\])?\s*$"
)
#: how each section's first line starts
_HEADER_START = "# ===== frame "


#: the longest header `frame_header` writes, leaving room for `record_artifact`'s ` [12 of 12]`:
#: a library frame's arguments run to 600 characters (x-transformers' `forward`, a resume
#: function of torchdiffeq's), and a stored line longer than 200 is one torch did not print
MAX_HEADER = 185
#: the last item of an argument list cut short: `forward(self, x, mask, ..., +25 more)`
ELIDED = re.compile(r"^\.\.\., \+(\d+) more$")


def frame_header(key: FrameKey, function: str | None) -> str:
    """The line that opens a frame compile's section; `function` as `CaptureLog.frame_signatures`
    writes it, its arguments cut after as many as fit in `MAX_HEADER` characters (`..., +N more`;
    `compare.arguments` pairs only the arguments a header names)."""
    start = f"# ===== frame {key.frame_id} compile {key.compile_id}"
    line = f"{start}: {function} =====" if function else f"{start} ====="
    if len(line) <= MAX_HEADER or not function or not function.endswith(")") or "(" not in function:
        return line
    name, listed = function[:-1].split("(", 1)
    arguments = listed.split(", ")
    for kept in range(len(arguments) - 1, -1, -1):
        shown = [*arguments[:kept], f"..., +{len(arguments) - kept} more"]
        line = f"{start}: {name}({', '.join(shown)}) ====="
        if len(line) <= MAX_HEADER:
            return line
    return line


def record_artifact(log: CaptureLog, name: str) -> str:
    """All payloads of one artifact, frame by frame; '' when none was produced."""
    names = log.frame_signatures()
    sections = []
    for key in log.frames():
        payloads = log.payloads(name, key)
        for index, payload in enumerate(payloads):
            suffix = f" [{index + 1} of {len(payloads)}]" if len(payloads) > 1 else ""
            sections.append(
                f"{frame_header(key, names.get(key))}{suffix}\n{payload.strip(chr(10))}\n"
            )
    return "\n".join(sections)


@dataclass(frozen=True, order=True)
class GraphKey:
    """One frame compile (a Dynamo graph), and which of its payloads (forward/backward)."""

    frame: int
    compile: int
    part: int = 1

    def label(self) -> str:
        part = f" #{self.part}" if self.part > 1 else ""
        return f"frame {self.frame}/{self.compile}{part}"


def split_sections(text: str) -> dict[GraphKey, str]:
    """The text of each frame compile; a text without headers is one section, frame 0/0."""
    sections: dict[GraphKey, list[str]] = {}
    current = GraphKey(0, 0)
    for line in text.splitlines():
        match = SECTION_HEADER.match(line)
        if match:
            current = GraphKey(int(match[1]), int(match[2]), int(match[4] or 1))
            sections.setdefault(current, [])
            continue
        sections.setdefault(current, []).append(line)
    return {
        key: "\n".join(lines)
        for key, lines in sections.items()
        if any(line.strip() for line in lines)
    }


def split_at_headers(text: str) -> list[str]:
    """The text cut before each line that starts a section (an empty first piece when the
    text starts with one), found with `str.find`: a regex would try every position."""
    cuts = [0] if text.startswith(_HEADER_START) else []
    at = text.find("\n" + _HEADER_START)
    while at >= 0:
        cuts.append(at + 1)
        at = text.find("\n" + _HEADER_START, at + 1)
    pieces, previous = [], 0
    for cut in cuts:
        pieces.append(text[previous:cut])
        previous = cut
    pieces.append(text[previous:])
    return pieces


def per_frame_section(rule: Callable[[str], str]) -> Callable[[str], str]:
    """Apply `rule` to each `# ===== frame F compile C` section of an artifact on its own.

    Each section is one frame compile: its graph's names, its guards. A rule
    that numbers things per section gives a recompile the same numbers as the
    first compile, and a change in one frame does not renumber the next.
    """

    def apply(text: str) -> str:
        return "".join(rule(section) for section in split_at_headers(text))

    apply.__name__ = getattr(rule, "__name__", "rule").lstrip("_")
    apply.__doc__ = rule.__doc__
    return apply
