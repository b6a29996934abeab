"""Independent copies of a model and its inputs, so eager and compiled runs cannot see each other.

In-place updates (a buffer, an input) and autograd state stay with the copy
that made them; both fixtures run eager and compiled on copies of their own.
"""

from __future__ import annotations

import copy
from typing import Any

import torch

from .._torch.tensors import map_tensors
from .diagnose import first_line
from .named_cases import CaseFailure


def clone_inputs(value: Any) -> Any:
    """Independent copies of every tensor, keeping requires_grad and strides."""
    return map_tensors(lambda t: t.detach().clone().requires_grad_(t.requires_grad), value)


def copy_model(model: Any) -> Any:
    """A deep copy of a module (its parameters and buffers, no `.grad`); functions as they are.

    Gradients a module already holds (a backward step before the test, an
    earlier call) are left out, so every copy starts where a fresh model does
    and a run on it accumulates only its own.

    An attribute that cannot be deep-copied (a `threading.Lock`, an open
    file) is shared between the copies rather than failing the test: eager
    and compiled then share that one object, as the model's own callers would.
    """
    if not isinstance(model, torch.nn.Module):
        return model
    return _without_grads(_deep_copy(model))


def copy_with_grads(model: Any) -> Any:
    """`copy_model`, its parameters' gradients as the model holds them now (cloned): a later call's
    backward adds to what the earlier ones left, so a copy that replays that call must start there."""
    copied = copy_model(model)
    if isinstance(model, torch.nn.Module):
        held = dict(model.named_parameters())
        for name, parameter in copied.named_parameters():
            grad = held[name].grad if name in held else None
            parameter.grad = None if grad is None else grad.detach().clone()
    return copied


def _deep_copy(model: torch.nn.Module) -> torch.nn.Module:
    try:
        return copy.deepcopy(model)
    except Exception as exc:
        try:
            return copy.deepcopy(model, _uncopyable_attributes(model))
        except Exception:
            raise CaseFailure(
                f"cannot copy the model ({first_line(exc)}): eager and compiled each run on a deep copy, so that "
                "in-place updates do not leak from one into the other; make the module deep-copyable "
                "(define __deepcopy__, or keep such objects outside the module)"
            ) from exc


def _without_grads(model: torch.nn.Module) -> torch.nn.Module:
    for parameter in model.parameters():
        parameter.grad = None
    return model


def _uncopyable_attributes(model: torch.nn.Module) -> dict[int, object]:
    """A deepcopy memo that maps each module attribute that cannot be deep-copied to itself."""
    memo: dict[int, object] = {}
    for module in model.modules():
        for name, value in vars(module).items():
            if name in ("_parameters", "_buffers", "_modules"):
                continue
            try:
                copy.deepcopy(value)
            except Exception:
                memo[id(value)] = value
    return memo
