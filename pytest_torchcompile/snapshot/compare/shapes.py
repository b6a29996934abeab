"""Inputs, parameters and buffers whose shape or dtype moved, said by the model's own names.

A model change a reviewer decides on (heads 2 -> 4, a norm turned on) shows
first in the arguments of Dynamo's graph: `L_self_modules_layers_modules_0_
modules_to_q_parameters_weight_: "f32[128, 32][32, 1]cpu"`. Read back as
`layers.0.to_q.weight f32[128, 32]`, and the same change in every layer
folded into one (`layers.*.*.to_q.weight [128, 32] -> [256, 32] (x2)`),
it is the one fact a reviewer needs where the graphs' diffs show hundreds of
lines. Pure text.
"""

from __future__ import annotations

import re
from collections import Counter

from ..artifacts.sections import split_sections
from .findings import Finding
from .readers import parse_signature

#: `f32[128, 32][32, 1]cpu` -> dtype `f32`, shape `[128, 32]` (strides and device follow)
_TENSOR = re.compile(r"^(\w+)(\[[^\]]*\])")
#: the separators of Dynamo's source names: `L_self_modules_a_parameters_w_`
_PARTS = re.compile(r"(?:^|_)(?:modules|parameters|buffers)_")
#: characters of a readable path before its middle is elided
_LONG_PATH = 40
#: facts a headline names at most (the finding's message names them all)
_NAMED = 3


def shape_findings(old: str, new: str) -> list[Finding]:
    """One finding for the arguments of Dynamo's graphs that changed shape or dtype, came or went."""
    before, after = split_sections(old), split_sections(new)
    changes: Counter[str] = Counter()
    for key in sorted(set(before) & set(after)):
        changes.update(_changes(parse_signature(before[key]), parse_signature(after[key])))
    if not changes:
        return []
    said = [f"{change} (x{n})" if n > 1 else change for change, n in changes.items()]
    shown = ", ".join(said[:_NAMED]) + (
        f" and {len(said) - _NAMED} more" if len(said) > _NAMED else ""
    )
    message = f"dynamo_graph arguments: {', '.join(said)}"
    return [Finding(True, "shapes", message, ("dynamo_graph",), f"shapes: {shown}")]


def _changes(old: dict[str, str], new: dict[str, str]) -> list[str]:
    """`name [128, 32] -> [256, 32]`, `+name f32[32]`, `-name f32[32]`; a layer index folded as `*`."""
    found = []
    for name in dict.fromkeys([*old, *new]):
        a, b = _tensor(old.get(name)), _tensor(new.get(name))
        if a == b:
            continue
        said = readable(name)
        if a is None or b is None:
            found.append(f"+{said} {b}" if a is None else f"-{said} {a}")
        elif "[" in a and "[" in b and a.split("[")[0] == b.split("[")[0]:  # the dtype stayed
            found.append(f"{said} {a[a.index('[') :]} -> {b[b.index('[') :]}")
        else:
            found.append(f"{said} {a} -> {b}")
    return found


def _tensor(annotation: str | None) -> str | None:
    """`f32[128, 32]` of a tensor argument's annotation; a SymInt's (`Sym(s0)`) as it is."""
    if annotation is None:
        return None
    match = _TENSOR.match(annotation)
    return f"{match[1]}{match[2]}" if match else annotation


def readable(name: str) -> str:
    """A Dynamo source name as the model says it, layer indices as `*`, long paths elided:
    `L_self_modules_layers_modules_0_modules_to_q_parameters_weight_` -> `layers.*.to_q.weight`,
    `...` for the middle of a path longer than `_LONG_PATH`; `L_x_` -> `x`."""
    bare = name.removeprefix("L_").removesuffix("_")
    if bare.startswith("self_"):
        parts = [p for p in _PARTS.split(bare.removeprefix("self_")) if p]
    else:
        parts = [bare]
    parts = ["*" if p.isdigit() else p for p in parts] or [bare]
    path = ".".join(parts)
    if len(path) <= _LONG_PATH:
        return path
    named = [p for p in parts if p != "*"]
    return f"{named[0]}...{'.'.join(named[-2:])}" if len(named) > 2 else path
