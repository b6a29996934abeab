"""Which argument of an ATen op is a dimension, so that `dim=-1` and `dim=1` of a 2-d tensor read alike.

AOTAutograd prints the dimensions as the model's code wrote them on one torch
(`aten.sum.dim_IntList(x, [-1], True)` on 2.13) and as positive indices on
another (`[1]` on 2.15, the same reduction). Counting from the end or from the
start names the same dimension once the rank of the tensor is known, and the
printed graph says it (`"f32[4, 8][8, 1]cpu"`). Ops not in the table keep
their arguments as printed: reading them otherwise is a difference, never an
excuse.
"""

from __future__ import annotations

import re
from collections.abc import Callable

#: op -> (positions of its dimension arguments, rank added to the input's: `unsqueeze`
#: and `stack` index the result's dimensions). The input is the first argument (of a
#: list's first element for `cat` and `stack`).
DIM_ARGUMENTS: dict[str, tuple[tuple[int, ...], int]] = {
    **{
        op: ((1,), 0)
        for op in (
            "aten.sum.dim_IntList",
            "aten.mean.dim",
            "aten.amax.default",
            "aten.amin.default",
            "aten.argmax.default",
            "aten.argmin.default",
            "aten.max.dim",
            "aten.min.dim",
            "aten.prod.dim_int",
            "aten.any.dim",
            "aten.any.dims",
            "aten.all.dim",
            "aten.var.correction",
            "aten.std.correction",
            "aten.var_mean.correction",
            "aten.logsumexp.default",
            "aten._softmax.default",
            "aten._log_softmax.default",
            "aten.squeeze.dim",
            "aten.squeeze.dims",
            "aten.select.int",
            "aten.slice.Tensor",
            "aten.narrow.default",
            "aten.cumsum.default",
            "aten.flip.default",
            "aten.index_select.default",
            "aten.gather.default",
            "aten.sort.default",
            "aten.cat.default",
        )
    },
    "aten._softmax_backward_data.default": ((2,), 0),
    "aten._log_softmax_backward_data.default": ((2,), 0),
    "aten.split.Tensor": ((2,), 0),
    "aten.split_with_sizes.default": ((2,), 0),
    "aten.topk.default": ((2,), 0),
    "aten.transpose.int": ((1, 2), 0),
    "aten.unsqueeze.default": ((1,), 1),
    "aten.stack.default": ((1,), 1),
}

#: `f32[4, 8][8, 1]cpu` -> `4, 8`; `f32[][]cpu` (a scalar) -> ``
_SHAPE = re.compile(r"^\w+\[([^\]]*)\]")
_INT = re.compile(r"^-?\d+$")


def rank(annotation: str) -> int | None:
    """The number of dimensions an FX annotation gives a tensor (`f32[4, s0][...]cpu`: 2)."""
    match = _SHAPE.match(annotation)
    if match is None:
        return None
    return len([d for d in match[1].split(",") if d.strip()])


def with_dims_counted_from_the_start(
    op: str, arguments: list[str], rank_of: Callable[[str], int | None]
) -> list[str]:
    """`arguments` (as printed, positional first) with each negative dimension of `op`
    written from the start; unchanged where the op, the input's rank or a value is not known."""
    positions, extra = DIM_ARGUMENTS.get(op, ((), 0))
    if not positions or not arguments:
        return arguments
    first = arguments[0].strip()
    if first.startswith("["):
        first = first[1:].split(",")[0].strip(" ]")
    known = rank_of(first)
    if known is None:
        return arguments
    out = list(arguments)
    for position in positions:
        if position < len(out) and "=" not in out[position]:
            out[position] = _from_start(out[position], known + extra)
    return out


def _from_start(value: str, dims: int) -> str:
    text = value.strip()
    if _INT.match(text):
        return str(_index(int(text), dims))
    if text.startswith("[") and text.endswith("]"):
        items = [i.strip() for i in text[1:-1].split(",") if i.strip()]
        if all(_INT.match(i) for i in items):
            return "[" + ", ".join(str(_index(int(i), dims)) for i in items) + "]"
    return value


def _index(dim: int, dims: int) -> int:
    return dim + dims if dim < 0 and dims > 0 else dim
