"""How each wrapper wraps a rank's model, and where torch.compile goes (run in the ranks).

- `ddp`: `DistributedDataParallel(model, **options)`, and the DDP module compiled
  (Dynamo's DDP optimizer splits its graph at the bucket boundaries);
- `fsdp2`: FSDP2's `fully_shard(layer, **options)` on each layer, then on the
  model, and the whole model compiled;
- `fsdp2_per_layer`: each layer compiled, then sharded, then the model
  sharded: compile-then-shard, as large training stacks do it;
- a function: `wrapper(model, **options)` returns the module, which is compiled.

The eager reference is wrapped the same way with no compile. A model's layers
are the modules of its first `nn.ModuleList` (or the model's own, when it is
an `nn.Sequential`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from ..._torch import distributed
from ...common.named_cases import CaseFailure
from .request import DistributedCall

#: what compiles one module (torch.compile with the marker's settings), or None for eager
Compile = Callable[[Any], Any] | None

#: what a layer's compiled copy adds to its parameters' names (stripped so both runs name them alike)
COMPILED_PREFIX = "_orig_mod."


@dataclass(frozen=True)
class Wrapped:
    """A rank's wrapped model: `module` holds the parameters, `run` is what is called."""

    module: torch.nn.Module
    run: Any


def wrap(model: torch.nn.Module, call: DistributedCall, compile: Compile) -> Wrapped:
    """`model` wrapped as `call.wrapper` says, compiled where it says (`compile` None: eager)."""
    options = dict(call.options)
    if callable(call.wrapper):
        module = call.wrapper(model, **options)
        if not isinstance(module, torch.nn.Module):
            raise CaseFailure(
                f"usage error: compile_distributed(wrapper={call.wrapper_name}) returned "
                f"{type(module).__name__}, not the wrapped nn.Module"
            )
        return _compiled(module, compile)
    if call.wrapper == "ddp":
        return _compiled(distributed.ddp(model, call.device, options), compile)
    for layer in layers(model, required=call.wrapper == "fsdp2_per_layer"):
        if call.wrapper == "fsdp2_per_layer" and compile is not None:
            layer = _replace(model, layer, compile(layer))
        distributed.fully_shard(layer, options)
    distributed.fully_shard(model, options)
    return _compiled(model, compile if call.wrapper == "fsdp2" else None)


def _compiled(module: torch.nn.Module, compile: Compile) -> Wrapped:
    return Wrapped(module, module if compile is None else compile(module))


def layers(model: torch.nn.Module, required: bool) -> list[torch.nn.Module]:
    """The model's layers: its first `nn.ModuleList`'s modules, or an `nn.Sequential`'s own."""
    if isinstance(model, torch.nn.Sequential):
        return list(model)
    found = next((m for m in model.modules() if isinstance(m, torch.nn.ModuleList)), None)
    if found is None and required:
        raise CaseFailure(
            f"usage error: compile_distributed(wrapper='fsdp2_per_layer') compiles and shards each "
            f"layer, and found none in {type(model).__name__}: keep the layers in an nn.ModuleList "
            "(as model.layers), make the model an nn.Sequential, or pass wrapper=<a function "
            "(model, **options) -> module> that shards it your way"
        )
    return list(found) if found is not None else []


def _replace(model: torch.nn.Module, layer: torch.nn.Module, compiled: Any) -> torch.nn.Module:
    """Put the compiled layer where the layer was, in its container."""
    for container in model.modules():
        for name, child in container.named_children():
            if child is layer:
                container.register_module(name, compiled)
                return compiled
    raise AssertionError("the layer is the model's")
