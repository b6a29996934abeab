"""The tensor constants a compiled graph reads, found behind Dynamo's compiled function, as Python source.

A tensor built inside the compiled function (`torch.tensor(range(n))`, a
numpy scalar) becomes a constant of the graph: AOTAutograd's FX graph reads
it from its GraphModule (`self._tensor_constant0`), Inductor's output code
from a module global its loader sets. Neither trace record holds the values.
Right after the compile they are reachable from the compiled function Dynamo
installed in the frame's module, through the closures and objects torch
keeps behind it (the FX GraphModules, Inductor's `CompiledFxGraph`); `find`
walks those references without naming them (they change between releases),
and `tensor_source` writes each value as the expression the file rebuilds it
with, exactly (every element as its Python number).
"""

from __future__ import annotations

import gc
import sys
import types
from typing import Any

import torch

#: the most elements a constant written into the file as its values may have.
MAX_ELEMENTS = 100_000
#: the most objects the walk visits behind one compiled function.
_BUDGET = 50_000


class ConstantProblem(Exception):
    """A constant the file cannot hold; the message says which and why."""


def find(compiled_fn: object, names: set[str]) -> dict[str, torch.Tensor]:
    """The tensors behind `compiled_fn` that its graphs read under `names` (a name Inductor folded into
    its kernels is not found); ConstantProblem when two graphs read different tensors under one name."""
    found: dict[str, torch.Tensor] = {}
    for owner in _owners(compiled_fn):
        for name, value in _constants_of(owner):
            if name not in names:
                continue
            if name in found and found[name] is not value and not _same(found[name], value):
                raise ConstantProblem(f"two of its graphs read different tensors as {name}")
            found[name] = value
    return found


def tensor_source(name: str, t: torch.Tensor) -> str:
    """`constant_tensor([...values...], dtype, shape, stride, device)`: the file's expression for `t`."""
    if t.numel() > MAX_ELEMENTS:
        raise ConstantProblem(
            f"its graph reads a tensor constant {name} of {t.numel()} elements; the file holds "
            f"constants of up to {MAX_ELEMENTS} elements, written as their values"
        )
    if t.is_complex() or t.layout != torch.strided or t.is_quantized:
        raise ConstantProblem(
            f"its graph reads a tensor constant {name} ({t.dtype}, {t.layout}) the file cannot write"
        )
    values = t.detach().cpu().contiguous().reshape(-1).tolist()
    return (
        f"constant_tensor({values!r}, {str(t.dtype)!r}, {list(t.shape)!r}, "
        f"{list(t.stride())!r}, {str(t.device)!r})"
    )


def _same(a: torch.Tensor, b: torch.Tensor) -> bool:
    return (
        a.dtype == b.dtype
        and a.shape == b.shape
        and bool(torch.equal(a.detach().cpu(), b.detach().cpu()))
    )


def _owners(root: object) -> list[object]:
    """FX GraphModules and Inductor's compiled graphs reachable from `root` (modules' namespaces,
    classes and modules themselves are not followed: they lead everywhere). The one kind of class
    followed is an autograd Function's own: a training graph's compiled forward and backward are
    attributes of the Function class AOTAutograd makes for that compile."""
    namespaces = {id(vars(m)) for m in list(sys.modules.values()) if m is not None}
    seen: set[int] = set()
    owners: list[object] = []
    pending = [root]
    while pending and len(seen) < _BUDGET:
        item = pending.pop()
        if id(item) in seen or id(item) in namespaces:
            continue
        seen.add(id(item))
        if isinstance(item, torch.fx.GraphModule) or type(item).__name__ == "CompiledFxGraph":
            owners.append(item)
        if _own_function_class(item):
            pending.extend(vars(item).values())  # type: ignore[arg-type]
            continue
        if isinstance(item, (type, types.ModuleType, torch.Tensor, str, bytes)):
            continue
        pending.extend(gc.get_referents(item))
    return owners


def _own_function_class(item: object) -> bool:
    """A subclass of `torch.autograd.Function` (not torch's own bases): one compile's, or a user's."""
    return (
        isinstance(item, type)
        and issubclass(item, torch.autograd.Function)
        and not item.__module__.startswith("torch.autograd")
    )


def _constants_of(owner: Any) -> list[tuple[str, torch.Tensor]]:
    if isinstance(owner, torch.fx.GraphModule):
        targets = {n.target for n in owner.graph.nodes if n.op == "get_attr"}
        values = [(t, getattr(owner, t, None)) for t in targets if isinstance(t, str)]
    else:  # Inductor's CompiledFxGraph: its constants, else the globals of its output code's module
        values = list((getattr(owner, "constants", None) or _loaded_globals(owner)).items())
    return [(name, v) for name, v in values if isinstance(v, torch.Tensor)]


def _loaded_globals(owner: Any) -> dict[str, Any]:
    """The namespace of the output code Inductor loaded (its loader set the constants there): the
    globals of the function it calls, a bound method's (`Runner.call`) or a plain one's."""
    call = getattr(owner, "current_callable", None)
    call = getattr(call, "__func__", call)
    return getattr(call, "__globals__", None) or {}
