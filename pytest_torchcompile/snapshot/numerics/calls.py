"""One call of a case, run the same way for eager, compiled and every replay.

Seeded (the global RNG is forked, so the caller's state is untouched),
backpropagated with seeded upstream gradients when the case has gradients,
and observed: everything a user could see change, as `path -> leaf`
(`numerics.observe`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from ..._torch.tensors import tree_leaves
from .observe import Observed, argument_names, flatten, observe

SEED = 0

#: one call's positional and keyword arguments.
Inputs = tuple[tuple[Any, ...], dict[str, Any]]


def run_seeded(fn: Callable[..., object], args: tuple[Any, ...], kwargs: dict[str, Any]) -> object:
    """Call `fn` with the global RNG seeded, restoring the caller's RNG state after."""
    devices = list(range(torch.cuda.device_count())) if torch.cuda.is_initialized() else []
    with torch.random.fork_rng(devices=devices):
        torch.manual_seed(SEED)
        return fn(*args, **kwargs)


def wants_grads(
    grads: bool | None, model: Any, args: tuple[Any, ...], kwargs: dict[str, Any], output: object
) -> bool:
    """Backward runs when asked (`grads`), or when anything requires grad and the output can flow it."""
    if grads is not None:
        return grads and bool(differentiable(output))
    tensors = [t for t in tree_leaves((args, kwargs)) if isinstance(t, torch.Tensor)]
    params = list(model.parameters()) if isinstance(model, torch.nn.Module) else []
    return any(t.requires_grad for t in tensors + params) and bool(differentiable(output))


def differentiable(output: object) -> list[torch.Tensor]:
    return [t for _, t in flatten(output, "") if isinstance(t, torch.Tensor) and t.requires_grad]


def backward(output: object) -> None:
    """Backpropagate seeded upstream gradients (the same for eager and compiled).

    They are drawn in float32 and cast, so an fp64 reference run receives
    the same values as the run it checks.
    """
    outs = differentiable(output)
    generator = torch.Generator().manual_seed(SEED)
    grads = [
        torch.randn(o.shape, generator=generator).to(dtype=o.dtype, device=o.device) for o in outs
    ]
    torch.autograd.backward(outs, grads)


def observed_call(
    fn: Callable[..., object], module: Any, inputs: Inputs, grads: bool | None
) -> tuple[object, Observed]:
    """Call seeded, backpropagate when the case has gradients, observe everything."""
    args, kwargs = inputs
    out = run_seeded(fn, args, kwargs)
    with_grads = wants_grads(grads, module, args, kwargs, out)
    if with_grads:
        backward(out)
    return out, observe(out, module, argument_names(module, args, kwargs), with_grads)
