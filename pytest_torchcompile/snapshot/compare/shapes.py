"""Inputs, parameters and buffers whose shape, dtype or layout moved, said by the model's own names.

A model change a reviewer decides on (heads 2 -> 4, a norm turned on) shows
first in the arguments of Dynamo's graph: `L_self_modules_layers_modules_0_
modules_to_q_parameters_weight_: "f32[128, 32][32, 1]cpu"`. Read back as
`layers.0.to_q.weight f32[128, 32]`, and the same change in every layer
folded into one (`layers.*.*.to_q.weight [128, 32] -> [256, 32] (x2)`),
it is the one fact a reviewer needs where the graphs' diffs show hundreds of
lines. A tensor of the same shape and dtype whose strides moved is a layout
change, said with the memory format its strides match (`strides: x [3072,
1024, 32, 1] -> [3072, 1, 96, 3] (channels_last)`): one `.to(memory_format=
torch.channels_last)` otherwise shows only as other kernels. Pure text.
"""

from __future__ import annotations

import re
from collections import Counter

from ..artifacts.sections import split_sections
from .findings import Finding
from .reading.readers import parse_signature

#: `f32[128, 32][32, 1]cpu` -> dtype `f32`, shape `[128, 32]`, strides `[32, 1]` (device follows)
_TENSOR = re.compile(r"^(\w+)(\[[^\]]*\])")
_STRIDES = re.compile(r"^\w+\[[^\]]*\](\[[^\]]*\])")
#: the separators of Dynamo's source names: `L_self_modules_a_parameters_w_`
_PARTS = re.compile(r"(?:^|_)(?:modules|parameters|buffers)_")
#: characters of a readable path before its middle is elided
_LONG_PATH = 40
#: changed shapes a headline names at most (the finding's message names them all); strides: one
_NAMED = 3


def shape_findings(old: str, new: str) -> list[Finding]:
    """A finding for the arguments of Dynamo's graphs that changed shape or dtype, came or went,
    and one for those whose strides alone moved."""
    before, after = split_sections(old), split_sections(new)
    changes: Counter[str] = Counter()
    layouts: Counter[str] = Counter()
    for key in sorted(set(before) & set(after)):
        signatures = parse_signature(before[key]), parse_signature(after[key])
        changes.update(_changes(*signatures))
        layouts.update(_stride_changes(*signatures))
    found = []
    if changes:
        found.append(_finding("shapes", "arguments", changes, "", _NAMED))
    if layouts:
        formats = {change.rpartition(" (")[2] for change in layouts}
        common = f" (all to {formats.pop().rstrip(')')})" if len(formats) == 1 else ""
        found.append(_finding("strides", "argument strides", layouts, common, 1))
    return found


def _finding(topic: str, what: str, changes: Counter[str], common: str, named: int) -> Finding:
    """`topic: a, b, c and N more` (`named` of them named, each counted `(xN)` when repeated)."""
    said = [f"{change} (x{n})" if n > 1 else change for change, n in changes.items()]
    shown = ", ".join(said[:named]) + (
        f" and {len(said) - named} more{common}" if len(said) > named else ""
    )
    message = f"dynamo_graph {what}: {', '.join(said)}"
    return Finding(True, topic, message, ("dynamo_graph",), f"{topic}: {shown}")


def _stride_changes(old: dict[str, str], new: dict[str, str]) -> list[str]:
    """`x [3072, 1024, 32, 1] -> [3072, 1, 96, 3] (channels_last)` for each argument of the same
    dtype and shape on both sides whose strides moved."""
    inputs_first = sorted((n for n in new if n in old), key=lambda n: n.startswith("L_self_"))
    found = []
    for name in inputs_first:
        a, b = old[name], new[name]
        if _tensor(a) != _tensor(b) or _strides(a) is None or _strides(a) == _strides(b):
            continue
        shape = _TENSOR.match(b)
        layout = memory_format(shape[2] if shape else "", _strides(b) or "")
        found.append(f"{readable(name)} {_strides(a)} -> {_strides(b)} ({layout})")
    return found


def _strides(annotation: str) -> str | None:
    match = _STRIDES.match(annotation)
    return match[1] if match else None


def memory_format(shape: str, strides: str) -> str:
    """The memory format whose strides these are: `contiguous`, `channels_last` (4-D),
    `channels_last_3d` (5-D), else `other strides` (a transpose, a slice, a broadcast)."""
    try:
        sizes = [int(n) for n in shape.strip("[]").split(",") if n.strip()]
        steps = [int(n) for n in strides.strip("[]").split(",") if n.strip()]
    except ValueError:  # a symbolic size or stride (`s0`): no format is certain
        return "other strides"
    orders = {"contiguous": list(range(len(sizes)))}
    if len(sizes) in (4, 5):
        last = "channels_last" if len(sizes) == 4 else "channels_last_3d"
        orders[last] = [0, *range(2, len(sizes)), 1]
    for name, order in orders.items():
        if _dense_strides(sizes, order) == steps:
            return name
    return "other strides"


def _dense_strides(sizes: list[int], order: list[int]) -> list[int]:
    """The strides of a dense tensor of `sizes` whose dimensions lie in memory in `order`
    (outermost first)."""
    strides, step = [0] * len(sizes), 1
    for dim in reversed(order):
        strides[dim] = step
        step *= max(sizes[dim], 1)
    return strides


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
