"""What a user could see change after a call, flattened into `path -> leaf`.

`observe` reads outputs, gradients of inputs and parameters, buffers and
tensor inputs after the call, with paths a reader finds in the model
(`output['logits']`, `grad of fc1.weight`, `buffer bn.running_mean`),
through mappings, sequences, NamedTuples, dataclasses and plain objects
(`check.py` compares two such observations).
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import torch

#: what a call changed, by path (`output['logits']`, `grad of fc1.weight`): its leaves
Observed = dict[str, object]

MAX_DEPTH = 32


# --- flattening ---------------------------------------------------------------


def flatten(value: object, root: str) -> list[tuple[str, object]]:
    """(path, leaf) pairs; each path starts with `root` (`output`, `grad of`)."""
    return list(_walk(value, root, 0, set()))


def _walk(value: object, path: str, depth: int, active: set[int]) -> Iterator[tuple[str, object]]:
    children = None if depth >= MAX_DEPTH or id(value) in active else _children(value)
    if children is None:
        yield path, value
        return
    active.add(id(value))
    for suffix, child in children:
        yield from _walk(child, path + suffix, depth + 1, active)
    active.discard(id(value))


def _children(value: object) -> list[tuple[str, object]] | None:
    """A container's (path suffix, child) pairs, or None for a leaf."""
    if isinstance(value, torch.Tensor) or isinstance(
        value, (str, bytes, int, float, complex, bool, type(None))
    ):
        return None
    if isinstance(value, Mapping):
        return [(f"[{key!r}]", child) for key, child in value.items()]
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        return [(f".{name}", getattr(value, name)) for name in value._fields]
    if isinstance(value, (list, tuple)):
        return [(f"[{i}]", child) for i, child in enumerate(value)]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return [(f".{f.name}", getattr(value, f.name)) for f in dataclasses.fields(value)]
    if _compares_by_identity(value):
        return [
            (f".{name}", child) for name, child in vars(value).items() if not name.startswith("_")
        ]
    return None


def _compares_by_identity(value: object) -> bool:
    """A plain object (a KV cache, say): `==` between two copies is always False."""
    return (
        type(value).__eq__ is object.__eq__ and hasattr(value, "__dict__") and not callable(value)
    )


def argument_names(
    fn: Callable[..., object], args: tuple[Any, ...], kwargs: dict[str, Any]
) -> dict[str, Any]:
    """Inputs by the name the model gives them (`x`), else `args[0]`, `kwargs['y']`."""
    target = fn.forward if isinstance(fn, torch.nn.Module) else fn
    try:
        bound = inspect.signature(target).bind(*args, **kwargs)
    except (TypeError, ValueError):
        return {
            **{f"args[{i}]": a for i, a in enumerate(args)},
            **{f"kwargs[{k!r}]": v for k, v in kwargs.items()},
        }
    named: dict[str, Any] = {}
    for name, value in bound.arguments.items():
        kind = bound.signature.parameters[name].kind
        if kind is inspect.Parameter.VAR_POSITIONAL:
            named.update({f"{name}[{i}]": v for i, v in enumerate(value)})
        elif kind is inspect.Parameter.VAR_KEYWORD:
            named.update({f"{name}[{k!r}]": v for k, v in value.items()})
        else:
            named[name] = value
    return named


def observe(output: object, model: Any, inputs: dict[str, Any], grads: bool) -> Observed:
    """Everything one call produced, as `path -> leaf`, in a fixed order."""
    seen = dict(flatten(output, "output"))
    if grads:
        for name, leaf in _input_tensors(inputs):
            if leaf.requires_grad:
                seen[f"grad of {name}"] = leaf.grad
        if isinstance(model, torch.nn.Module):
            seen.update(
                {
                    f"grad of {name}": p.grad
                    for name, p in model.named_parameters()
                    if p.requires_grad
                }
            )
    if isinstance(model, torch.nn.Module):
        seen.update({f"buffer {name}": b for name, b in model.named_buffers()})
    for name, leaf in _input_tensors(inputs):
        if not leaf.requires_grad:
            seen[f"input {name} after the call"] = leaf
    return seen


def _input_tensors(inputs: dict[str, Any]) -> Iterator[tuple[str, torch.Tensor]]:
    for name, value in inputs.items():
        for path, leaf in flatten(value, name):
            if isinstance(leaf, torch.Tensor):
                yield path, leaf
