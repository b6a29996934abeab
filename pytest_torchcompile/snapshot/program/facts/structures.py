"""An argument of a registered pytree container (a tensorclass, a TensorDict) as data the script
makes it again from.

`python program.py` calls the model on random inputs of the recorded layouts.
A tensor is its layout and a number its literal; a container that torch's
pytree knows how to flatten (tensordict registers its classes there, as
Dynamo reads them) is its type, its context (what its type's unflatten
needs besides the children: keys, batch size, the class) as Python source,
and its children, each again one of the three. Where a part has no form the
file can write, the argument stays unmade and the script says to call
`load()` with real inputs.
"""

from __future__ import annotations

import torch

from ...._torch.tensors import pytree_parts
from ...emit.values import import_path, literal
from .data import StructureSpec, TensorSpec
from .module_tree import attribute_source, tensor_spec

#: how deep containers may nest in one argument
_DEPTH = 8


def structure_spec(value: object, depth: int = 0) -> StructureSpec | None:
    """The container `value` as its type, context source and children; None where any part has no
    form the file can write (or `value` is no registered container)."""
    parts = pytree_parts(value)
    type_path = import_path(type(value))
    if parts is None or type_path is None or depth > _DEPTH:
        return None
    children, context = parts
    context_source = attribute_source(context)
    made = [_child(child, depth) for child in children]
    if context_source is None or None in made:
        return None
    return StructureSpec(type_path, context_source, tuple(made))  # type: ignore[arg-type]


def _child(value: object, depth: int) -> TensorSpec | StructureSpec | str | None:
    if isinstance(value, torch.Tensor):
        return tensor_spec("", value, by_value=True)
    text = literal(value)
    return text if text is not None else structure_spec(value, depth + 1)
