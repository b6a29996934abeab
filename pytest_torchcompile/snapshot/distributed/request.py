"""What a `compile_distributed` call asks for, checked before any rank starts, and what each rank gets.

`DistributedCall` holds the user's arguments once they are known to work:
a model factory (each rank builds its own model, and once more for the
eager reference: FSDP cannot copy a model), a wrapper, a world size this
machine can run, and everything that crosses into the ranks pickled (each
rank is a new process). A problem is a usage error that says how to fix it.
`RankRequest` is what every rank reads: the call and the marker's spec.
"""

from __future__ import annotations

import os
import pickle
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ...common.named_cases import CaseFailure
from ..spec import CompileSpec

#: the wrappers by name: DDP; FSDP2 over the whole model, compiled whole; FSDP2 with each layer
#: compiled, then sharded (as large training stacks do it)
WRAPPERS = ("ddp", "fsdp2", "fsdp2_per_layer")
#: the keywords of `compile_distributed` itself; any other keyword is the wrapper's
OWN_KEYWORDS = ("wrapper", "world_size", "timeout", "min_compiled_share")
#: seconds a case's ranks may run once they all joined the process group
DEFAULT_TIMEOUT_S = 300.0
#: below this share of the model's ops running compiled, the case fails (almost nothing compiled)
DEFAULT_MIN_SHARE = 0.1
#: the marker's settings a distributed case has no use for, and why
_NOT_HERE = {
    "precompile": "the precompile round trip runs one process",
    "run_program": "the program file is written for one process",
}
_FIXTURE = "compile_distributed"


def usage(message: str) -> CaseFailure:
    return CaseFailure(f"usage error: {_FIXTURE}(...): {message}")


@dataclass(frozen=True)
class DistributedCall:
    """One case's arguments, checked: `device` is where the ranks run (`cpu`: gloo, `cuda`: NCCL)."""

    factory: Callable[[], Any]
    inputs: tuple[Any, ...]
    wrapper: str | Callable[..., object]
    options: Mapping[str, object]
    world_size: int
    device: str
    timeout_s: float
    min_share: float

    @property
    def wrapper_name(self) -> str:
        if isinstance(self.wrapper, str):
            return self.wrapper
        return getattr(self.wrapper, "__name__", type(self.wrapper).__name__)


@dataclass(frozen=True)
class RankRequest:
    """What every rank reads: the call, the marker's spec, and where the run's files are."""

    call: DistributedCall
    spec: CompileSpec
    rootdir: str


def check_call(
    factory: object, inputs: tuple[Any, ...], keywords: dict[str, Any]
) -> DistributedCall:
    """The call's arguments as a `DistributedCall`, or a usage error naming what is wrong."""
    _check_factory(factory)
    own = {k: keywords.pop(k) for k in OWN_KEYWORDS if k in keywords}
    wrapper = own.get("wrapper", "ddp")
    _check_wrapper(wrapper)
    device = _device(inputs)
    world_size = own.get("world_size", 2)
    _check_world_size(world_size, device)
    timeout = own.get("timeout", DEFAULT_TIMEOUT_S)
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0:
        raise usage(f"timeout={timeout!r} must be a positive number of seconds, e.g. timeout=120")
    share = own.get("min_compiled_share", DEFAULT_MIN_SHARE)
    if isinstance(share, bool) or not isinstance(share, (int, float)) or not 0 <= share <= 1:
        raise usage(
            f"min_compiled_share={share!r} must be a number from 0 to 1 (the least share of the "
            "model's ops that must run compiled; 0 accepts a compile that covers nothing)"
        )
    return DistributedCall(
        factory,
        _on_cpu(inputs),
        wrapper,
        dict(keywords),
        world_size,
        device,
        float(timeout),
        float(share),
    )


def _on_cpu(inputs: tuple[Any, ...]) -> tuple[Any, ...]:
    """The inputs as they cross into the ranks: on the CPU (each rank moves them to its own GPU)."""
    from ..._torch.tensors import map_tensors

    return tuple(map_tensors(lambda t: t.detach().cpu().requires_grad_(t.requires_grad), inputs))


def _check_factory(factory: object) -> None:
    import torch

    if isinstance(factory, torch.nn.Module):
        name = type(factory).__name__
        raise usage(
            f"the first argument is a model ({name}), and a distributed case takes a model factory: "
            f"each rank builds its own model, and one more for the eager reference (FSDP cannot copy a "
            f"model); pass the class or a function that builds it, e.g. {_FIXTURE}({name}, x) or "
            f"{_FIXTURE}(make_model, x) with `def make_model(): return {name}(...)` at module level"
        )
    if not callable(factory):
        raise usage(
            f"the first argument must be a model factory (a class or a function that returns the "
            f"model), got {type(factory).__name__}"
        )


def _check_wrapper(wrapper: object) -> None:
    if callable(wrapper) and not isinstance(wrapper, str):
        return
    if wrapper not in WRAPPERS:
        raise usage(
            f"wrapper={wrapper!r} is not a wrapper: use one of {', '.join(map(repr, WRAPPERS))}, or a "
            "function (model, **options) -> module that wraps the model on each rank"
        )


def _device(inputs: tuple[Any, ...]) -> str:
    """`cuda` when an input tensor is on a GPU (each rank then runs on its own), else `cpu`."""
    import torch

    from ..._torch.tensors import tree_leaves

    tensors = [t for t in tree_leaves(list(inputs)) if isinstance(t, torch.Tensor)]
    return "cuda" if any(t.device.type == "cuda" for t in tensors) else "cpu"


def _check_world_size(world_size: object, device: str) -> None:
    from ..._torch.distributed import gpus

    if isinstance(world_size, bool) or not isinstance(world_size, int) or world_size < 1:
        raise usage(f"world_size={world_size!r} must be a whole number of ranks, 1 or more")
    if device == "cuda":
        have = gpus()
        if world_size > have:
            raise usage(
                f"world_size={world_size} with inputs on a GPU needs a GPU per rank (NCCL), and this "
                f"machine has {have}: use world_size<={have}, or CPU inputs (gloo)"
            )
        return
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    have = max(cpus or 1, 2)
    if world_size > have:
        raise usage(
            f"world_size={world_size} needs {world_size} rank processes, and this machine runs "
            f"{cpus} at a time: ranks that share a CPU wait on each other's collectives until the "
            f"case times out; use world_size<={have}, or skip the test on smaller machines "
            f"(pytest.mark.skipif((os.cpu_count() or 1) < {world_size}, reason=...))"
        )


def pickled(request: RankRequest) -> bytes:
    """The request as the ranks read it; a usage error names what cannot cross into a new process."""
    call = request.call
    parts: list[tuple[str, object, str]] = [
        ("the model factory", call.factory, _FACTORY_FIX),
        ("the wrapper", call.wrapper, _FUNCTION_FIX),
        ("the backend", request.spec.backend, _FUNCTION_FIX),
        ("the wrapper's options", call.options, "pass values that pickle"),
        ("the inputs", call.inputs, "pass tensors and plain values"),
    ]
    for what, value, fix in parts:
        try:
            pickle.dumps(value)
        except (pickle.PicklingError, AttributeError, TypeError, RecursionError) as exc:
            raise usage(
                f"{what} cannot be pickled ({type(exc).__name__}: {exc}), and each rank is a new "
                f"process that receives it pickled: {fix}"
            ) from None
    return pickle.dumps(request)


_FACTORY_FIX = (
    "define it at module level, `def make_model(): return Net()` (a lambda or a function "
    "defined inside the test cannot be pickled), or pass the class itself, or "
    "functools.partial(Net, width=64)"
)
_FUNCTION_FIX = (
    "define it at module level of an importable module (not a lambda or a local function)"
)


def check_spec(spec: CompileSpec) -> None:
    """The marker's settings that a distributed case cannot honour: a usage error, never ignored."""
    for name, why in _NOT_HERE.items():
        if getattr(spec, name):
            raise usage(f"compile_snapshot({name}=True) is not for distributed cases: {why}")
    if spec.artifacts is not None and "program" in spec.artifacts:
        raise usage(
            "compile_snapshot(artifacts=(..., 'program')) is not for distributed cases: the "
            "program file is written for one process"
        )
