"""How torch walks nested values (pytree), how close `assert_close` calls close, and which
tensors are subclasses AOTAutograd unwraps."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch.testing._comparison import default_tolerances as _default_tolerances
from torch.utils._python_dispatch import is_traceable_wrapper_subclass
from torch.utils._pytree import SUPPORTED_NODES, tree_flatten, tree_map_only


def tree_leaves(value: Any) -> list[Any]:
    """Every leaf of a nested value (tuples, lists, dicts, registered containers)."""
    return tree_flatten(value)[0]


def map_tensors(fn: Callable[[torch.Tensor], Any], value: Any) -> Any:
    """`value` with every tensor replaced by `fn(tensor)`, containers rebuilt."""
    return tree_map_only(torch.Tensor, fn, value)


def default_tolerances(*tensors: torch.Tensor) -> tuple[float, float]:
    """(rtol, atol) that `torch.testing.assert_close` uses for these tensors' dtypes."""
    rtol, atol = _default_tolerances(*tensors)
    return rtol, atol


def is_tensor_subclass(t: torch.Tensor) -> bool:
    """Whether `t` is a wrapper subclass (`__tensor_flatten__`), as a quantized weight is: the
    program file cannot make one from random values and AOTAutograd passes its inner tensors."""
    return bool(is_traceable_wrapper_subclass(t))


def subclass_parts(t: torch.Tensor) -> tuple[dict[str, torch.Tensor], object]:
    """A wrapper subclass's inner tensors by name and its metadata, as `__tensor_flatten__` gives
    them: what `__tensor_unflatten__` makes the same kind of tensor again from."""
    names, metadata = t.__tensor_flatten__()  # type: ignore[attr-defined]
    return {name: getattr(t, name) for name in names}, metadata


def pytree_parts(value: object) -> tuple[list[Any], object] | None:
    """One level of a value of a container type registered with torch's pytree (a tensorclass, a
    TensorDict, a tuple): its children and the context its type's unflatten makes it again
    from; None for anything else."""
    node = SUPPORTED_NODES.get(type(value))
    if node is None:
        return None
    children, context = node.flatten_fn(value)
    return list(children), context
