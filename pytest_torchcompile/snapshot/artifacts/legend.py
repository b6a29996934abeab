"""The first line of every stored snapshot file: what it holds, and the notation that is ours.

A reviewer opens one file of a pull request on its own, without the plugin
or its docs. Everything in it is torch's own text except a few things the
plugin writes: the section header of each frame compile, the masks of what
varies between runs (`<N>`, `<id>`), a kernel's source as a digest, a
tensor's five dimension-mark guards as one line. The first line says which,
in under 200 characters. It is written with the file and dropped when the
file is read, so a file stored without it (an older version of the plugin)
compares as the same text, and rewording it never fails a test.
"""

from __future__ import annotations

import re

#: a section header whose argument list `sections.frame_header` cut short
CUT_HEADER = re.compile(r"^# ===== frame \d+ compile \d+: .*, \.\.\., \+\d+ more\) =====", re.M)
#: how every legend starts (and nothing else a snapshot holds does)
PREFIX = "# pytest-torchcompile "
#: where the section notation goes in a legend: `f(args)`, or, in a file where a header cut a
#: long argument list (`sections.frame_header`), `f(args, ..., +N more)`
_SECTIONS = "a section per frame compile (`# ===== frame F compile C: {function}`)"
_MASKS = "<N> masks numbers"

LEGENDS: dict[str, str] = {
    "summary": f"counters of this case's compile; frames listed as `frame F compile C`; {_MASKS}",
    "dynamo_graph": f"Dynamo's FX graph, {_SECTIONS}; names renumbered in order; {_MASKS}",
    "guards": f"Dynamo's guards, {_SECTIONS}; <id> masks ids, <N> numbers; `X has no a, b`: no attribute a, b",
    "aot_forward": f"AOTAutograd's forward graph, {_SECTIONS}; names renumbered in order",
    "aot_backward": f"AOTAutograd's backward graph, {_SECTIONS}; names renumbered in order",
    "aot_inference": f"AOTAutograd's inference graph, {_SECTIONS}; names renumbered in order",
    "post_grad_graph": f"Inductor's post-grad graph, {_SECTIONS}; names renumbered in order",
    "wrapper_code": (
        f"Inductor's wrapper, {_SECTIONS}; a kernel's source as `<L lines, sha256 H>`; {_MASKS}"
    ),
    "output_code": f"Inductor's output code, no module boilerplate, {_SECTIONS}; {_MASKS}",
    "runtime_wrapper": f"AOTAutograd's runtime wrappers, {_SECTIONS}; {_MASKS}",
    "transformed_code": f"Dynamo's rewritten bytecode as Python, {_SECTIONS}; {_MASKS}",
    "program": f"one Python file that runs what torch.compile ran (docs/program.md); {_MASKS}",
}


def legend(artifact: str, cut: bool = False) -> str | None:
    """The first line of `artifact`'s files; `cut` where one of its headers lists only the
    first arguments of its function (`f(args, ..., +N more)`). None for an artifact without one."""
    text = LEGENDS.get(artifact)
    if text is None:
        return None
    function = "f(args, ..., +N more)" if cut else "f(args)"
    return f"{PREFIX}{artifact}: {text.replace('{function}', function)}"


def with_legend(artifact: str, text: str) -> str:
    """`text` as stored: the artifact's legend first (an artifact without one: `text` itself)."""
    first = legend(artifact, cut=bool(CUT_HEADER.search(text)))
    return f"{first}\n{text}" if first else text


def without_legend(text: str) -> str:
    """A stored text as compared: its first line dropped where it is a legend (any wording)."""
    if not text.startswith(PREFIX):
        return text
    return text.partition("\n")[2]
