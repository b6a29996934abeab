"""Independent copies of a model and its inputs, so eager and compiled runs cannot see each other.

In-place updates (a buffer, an input) and autograd state stay with the copy
that made them; both fixtures run eager and compiled on copies of their own.
"""

from __future__ import annotations

import copy
from typing import Any

import torch

from .._torch.tensors import map_tensors


def clone_inputs(value: Any) -> Any:
    """Independent copies of every tensor, keeping requires_grad and strides."""
    return map_tensors(lambda t: t.detach().clone().requires_grad_(t.requires_grad), value)


def copy_model(model: Any) -> Any:
    """A deep copy of a module (its parameters and buffers); functions as they are."""
    return copy.deepcopy(model) if isinstance(model, torch.nn.Module) else model
