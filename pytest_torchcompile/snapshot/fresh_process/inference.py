"""Inference tensors: which of a call's tensors were made under inference mode, made so again in the fresh process.

A tensor made under `torch.inference_mode()` (the copies the case makes of
the model and inputs inside the user's `with torch.inference_mode():`) has
other dispatch keys than an ordinary one, and Dynamo's tensor guards hold
them. Pickling keeps the values and loses that: `marks` notes, before the
call is saved, which input tensors (in the order the inputs' leaves come)
and which parameters and buffers of the model (by name) are inference
tensors, and `restore` in the fresh process replaces each with a copy made
under inference mode, a tensor passed or held twice by one copy.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from ..._torch.tensors import map_tensors, tree_leaves


@dataclass(frozen=True)
class InferenceMarks:
    """Per input tensor (in leaf order) whether it is an inference tensor; the model's by name."""

    inputs: tuple[bool, ...] = ()
    model: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return any(self.inputs) or bool(self.model)


def marks(model: Any, inputs: Any) -> InferenceMarks:
    """Which tensors of the call are inference tensors (none, nearly always)."""
    flags = tuple(t.is_inference() for t in tree_leaves(inputs) if isinstance(t, torch.Tensor))
    return InferenceMarks(flags, tuple(name for name, t in _state(model) if t.is_inference()))


def restore(found: InferenceMarks, model: Any, inputs: Any) -> Any:
    """The inputs with the marked tensors made again under inference mode; the model's, in place."""
    if not found:
        return inputs
    copies: dict[int, torch.Tensor] = {}
    flags = iter(found.inputs)

    def again(tensor: torch.Tensor) -> torch.Tensor:
        if id(tensor) not in copies:
            copies[id(tensor)] = tensor.clone()
        return copies[id(tensor)]

    with torch.inference_mode():
        inputs = map_tensors(lambda t: again(t) if next(flags, False) else t, inputs)
        held = dict(_state(model))
        for name in found.model:
            owner, _, leaf = name.rpartition(".")
            module = model.get_submodule(owner)
            old = held[name]
            if leaf in module._parameters:
                if id(old) not in copies:
                    copies[id(old)] = torch.nn.Parameter(old.clone(), old.requires_grad)
                module._parameters[leaf] = copies[id(old)]
            else:
                module._buffers[leaf] = again(old)
    return inputs


def _state(model: Any) -> list[tuple[str, torch.Tensor]]:
    """Every parameter and buffer of a module by name, shared ones under each name."""
    if not isinstance(model, torch.nn.Module):
        return []
    return [
        *model.named_parameters(remove_duplicate=False),
        *model.named_buffers(remove_duplicate=False),
    ]
