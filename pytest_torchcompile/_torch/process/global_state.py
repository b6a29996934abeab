"""The process-wide switches a compiled call runs under, read here and set again in a fresh process.

Dynamo's GLOBAL_STATE guard holds grad mode, autocast (per device: on, dtype;
its cache), whether `__torch_function__` is disabled, deterministic
algorithms (and warn-only), the default dtype, the intra-op thread count and
cuBLAS's TF32 and reduced-precision reductions (2.15 also the CUDA matmul
precision); a tensor guard holds the dispatch keys that inference mode
changes. A call checked in a fresh process (the program file's run, the
precompile round trip) must run under the same switches, or its guards
refuse it and its numbers may differ.

`read()` takes them from this process through torch's own getters, with
the guard's record of them; `set_process_wide` (before anything loads) and
`around_call` (the scoped ones, around the call) set them in the fresh
process, and `around_call` then compares Dynamo's record there with the one
read here, naming any switch that still differs (`NotCarried`). A torch
function or dispatch mode on the stack (`with torch.device(...)`, a
`TorchDispatchMode`) is an object, not a switch: `read` names it in
`modes`, and the caller refuses the check by name.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass

import torch

#: the device types autocast keeps a switch and a dtype for (those this torch knows are read)
AUTOCAST_DEVICES = ("cpu", "cuda", "xpu", "hpu", "mps", "ipu", "xla", "mtia", "maia")
#: cuBLAS's switches, as `torch.backends.cuda.matmul` spells them (those this torch has are read)
CUBLAS_SWITCHES = (
    "allow_tf32",
    "allow_fp16_reduced_precision_reduction",
    "allow_fp16_reduced_precision_reduction_split_k",
    "allow_bf16_reduced_precision_reduction",
    "allow_bf16_reduced_precision_reduction_split_k",
)


class NotCarried(Exception):
    """The fresh process could not be given a switch of the compiled call; the message names it."""


@dataclass(frozen=True)
class GlobalState:
    """The switches of one call, as torch's getters return them (picklable: it travels to the child)."""

    #: Dynamo's GLOBAL_STATE record of them (JSON): what the fresh process must match
    guard: str
    grad: bool
    inference: bool
    torch_function: bool
    torch_function_all_disabled: bool
    autocast: tuple[tuple[str, bool, torch.dtype], ...]
    autocast_cache: bool
    deterministic: bool
    deterministic_warn_only: bool
    default_dtype: torch.dtype
    num_threads: int
    matmul_precision: str
    cublas: tuple[tuple[str, bool], ...]
    #: torch function and dispatch modes on the stack, by class name: objects no fresh process gets
    modes: tuple[str, ...]


def read() -> GlobalState:
    """This process's switches now."""
    matmul = torch.backends.cuda.matmul
    return GlobalState(
        guard=_guard_record(),
        grad=torch.is_grad_enabled(),
        inference=torch.is_inference_mode_enabled(),
        torch_function=torch._C._is_torch_function_enabled(),
        torch_function_all_disabled=torch._C._is_torch_function_all_disabled(),
        autocast=tuple(
            (d, torch.is_autocast_enabled(d), torch.get_autocast_dtype(d)) for d in _devices()
        ),
        autocast_cache=torch.is_autocast_cache_enabled(),
        deterministic=torch.are_deterministic_algorithms_enabled(),
        deterministic_warn_only=torch.is_deterministic_algorithms_warn_only_enabled(),
        default_dtype=torch.get_default_dtype(),
        num_threads=torch.get_num_threads(),
        matmul_precision=torch.get_float32_matmul_precision(),
        cublas=tuple((name, bool(getattr(matmul, name))) for name in _cublas_switches()),
        modes=_modes(),
    )


#: the switches of Dynamo's record that the matmul precision and cuBLAS's switches set
_MATMUL_RECORD = ("allow_tf32", "allow_fp16_reduce", "allow_bf16_reduce", "cuda_matmul_precision")


def set_process_wide(state: GlobalState) -> None:
    """Threads, deterministic algorithms, default dtype and matmul precision (before anything loads)."""
    torch.set_num_threads(state.num_threads)
    torch.use_deterministic_algorithms(state.deterministic, warn_only=state.deterministic_warn_only)
    torch.set_default_dtype(state.default_dtype)
    _set_matmul(state, again=False)
    # setting a precision is not idempotent on 2.15 (its record of "highest" set is not the
    # default's): set only what differs, then set it again where the record still differs
    differing = differences(state.guard, _guard_record())
    if any(line.split(":")[0] in _MATMUL_RECORD for line in differing):
        _set_matmul(state, again=True)


def _set_matmul(state: GlobalState, again: bool) -> None:
    with warnings.catch_warnings():  # TF32's legacy switches warn that a newer API exists
        warnings.simplefilter("ignore")
        if again or torch.get_float32_matmul_precision() != state.matmul_precision:
            torch.set_float32_matmul_precision(state.matmul_precision)
        matmul = torch.backends.cuda.matmul
        for name, value in state.cublas:
            if bool(getattr(matmul, name)) != value:
                try:
                    setattr(matmul, name, value)
                except (RuntimeError, TypeError):
                    pass  # the check in `around_call` names the switch


@contextmanager
def around_call(state: GlobalState) -> Iterator[None]:
    """Grad and inference mode, `__torch_function__` and autocast as the call had them; NotCarried when
    Dynamo's record of the switches here still differs from the call's."""
    with ExitStack() as stack:
        if state.inference:
            stack.enter_context(torch.inference_mode())
        stack.enter_context(torch.set_grad_enabled(state.grad))
        if state.torch_function_all_disabled:
            stack.enter_context(torch._C.DisableTorchFunction())
        elif not state.torch_function:
            stack.enter_context(torch._C.DisableTorchFunctionSubclass())
        _set_autocast(state)
        differing = differences(state.guard, _guard_record())
        if differing:
            raise NotCarried(
                "the fresh process could not be given these switches of the compiled call "
                f"(as Dynamo's GLOBAL_STATE guard records them): {'; '.join(differing)}"
            )
        yield


def differences(recorded: str, here: str) -> list[str]:
    """`name: recorded X, here Y` for each switch of Dynamo's record that differs."""
    old, new = _flat(json.loads(recorded)), _flat(json.loads(here))
    return [
        f"{name}: recorded {json.dumps(old.get(name))}, here {json.dumps(new.get(name))}"
        for name in sorted(old.keys() | new.keys())
        if old.get(name) != new.get(name)
    ]


def _flat(record: dict[str, object], prefix: str = "") -> dict[str, object]:
    flat: dict[str, object] = {}
    for key, value in record.items():
        if isinstance(value, dict):
            flat.update(_flat(value, f"{prefix}{key}."))
        else:
            flat[prefix + key] = value
    return flat


def _set_autocast(state: GlobalState) -> None:
    for device, enabled, dtype in state.autocast:
        torch.set_autocast_enabled(device, enabled)
        torch.set_autocast_dtype(device, dtype)
    torch.set_autocast_cache_enabled(state.autocast_cache)


def _guard_record() -> str:
    """What Dynamo's GLOBAL_STATE guard records of this process now (its pickled form, JSON)."""
    return torch._C._dynamo.guards.GlobalStateGuard().__getstate__()


def _devices() -> list[str]:
    devices = []
    for device in AUTOCAST_DEVICES:
        try:
            torch.is_autocast_enabled(device)
        except RuntimeError:  # a device type this torch does not know
            continue
        devices.append(device)
    return devices


def _cublas_switches() -> list[str]:
    matmul = torch.backends.cuda.matmul
    switches = []
    for name in CUBLAS_SWITCHES:
        try:
            getattr(matmul, name)
        except (AttributeError, RuntimeError):
            continue
        switches.append(name)
    return switches


def _modes() -> tuple[str, ...]:
    """The classes of the torch function and dispatch modes on the stack, innermost last."""
    functions = [
        torch._C._get_function_stack_at(i) for i in range(torch._C._len_torch_function_stack())
    ]
    dispatches = [
        torch._C._get_dispatch_stack_at(i) for i in range(torch._C._len_torch_dispatch_stack())
    ]
    return tuple(type(mode).__name__ for mode in [*functions, *dispatches])
