"""The runtime's guard prelude: the helpers Dynamo's guard code calls, and the global state.

Copied into every program file after `runtime.py`'s part, from the marker
below on (`writer.RUNTIME_PARTS`); the plugin's own guard checker runs the
same text (`formats.PRELUDE` reads this file from the marker on). The
dispatch keys and the torch_function state have no public getter: the
helpers reach into `torch._C` for them, as Dynamo's guards do.
"""

from __future__ import annotations

import collections
import json
import sys

import torch

# --- the guard prelude: what Dynamo's guard code calls ----------------------

#: c10::ScalarType numbers of the dtypes that can be the default dtype.
_DEFAULT_DTYPES = {
    torch.float16: 5,
    torch.float32: 6,
    torch.float64: 7,
    torch.bfloat16: 15,
}


#: the switches of the last GLOBAL_STATE check that failed, for its guard's line (`first_failing`)
_GLOBAL_STATE_DIFFERS: list[str] = []


def global_state_matches(recorded: str) -> bool:
    """GLOBAL_STATE: the process-wide settings the graph was traced under (those a test changes)."""
    _GLOBAL_STATE_DIFFERS[:] = global_state_differences(json.loads(recorded))
    return not _GLOBAL_STATE_DIFFERS


def global_state_differences(state: dict) -> list[str]:
    """Each recorded switch that differs here, as `name: recorded X, here Y`."""
    autocast = state.get("autocast_state", {})
    now = {
        "grad_mode": torch.is_grad_enabled(),
        # torch_function state has no public getter
        "torch_function": torch._C._is_torch_function_enabled(),
        "torch_function_all_disabled": torch._C._is_torch_function_all_disabled(),
        "deterministic_algorithms": torch.are_deterministic_algorithms_enabled(),
        "deterministic_algorithms_warn_only": torch.is_deterministic_algorithms_warn_only_enabled(),
        "default_dtype": _DEFAULT_DTYPES.get(torch.get_default_dtype()),
        "num_threads": torch.get_num_threads(),
        "allow_tf32": torch.backends.cuda.matmul.allow_tf32,
    }
    autocast_on = any(torch.is_autocast_enabled(d) for d in ("cpu", "cuda", "xpu", "mps", "hpu"))
    now["autocast"], state = autocast_on, {**state, "autocast": any(autocast.get("enabled", []))}
    return [
        f"{name}: recorded {_switch(name, state[name])}, here {_switch(name, value)}"
        for name, value in now.items()
        if name in state and state[name] != value
    ]


def _switch(name: str, value):
    if name == "default_dtype":
        return next((str(d) for d, n in _DEFAULT_DTYPES.items() if n == value), value)
    return json.dumps(value)


def recorded_global_state(frames: list):
    """The settings the first compile was traced under, read from its GLOBAL_STATE guard."""
    for frame in frames:
        for compiled in frame["compiles"]:
            for text in _strings(compiled[1].__code__):
                if text.startswith("{") and '"grad_mode"' in text:
                    return json.loads(text)
    return None


def _strings(code):
    for const in code.co_consts:
        if isinstance(const, str):
            yield const
        elif hasattr(const, "co_consts"):
            yield from _strings(const)


def apply_global_state(state: dict) -> None:
    """Set the recorded grad mode, deterministic algorithms and default dtype in this process."""
    torch.set_grad_enabled(bool(state.get("grad_mode", torch.is_grad_enabled())))
    if "deterministic_algorithms" in state:
        torch.use_deterministic_algorithms(
            bool(state["deterministic_algorithms"]),
            warn_only=bool(state.get("deterministic_algorithms_warn_only", False)),
        )
    dtype = next((d for d, n in _DEFAULT_DTYPES.items() if n == state.get("default_dtype")), None)
    if dtype is not None:
        torch.set_default_dtype(dtype)


def as_torch_compile_leaves_the_process() -> None:
    """What torch.compile sets for the whole process the first time it runs, and Dynamo's guards and code
    were made under: Dynamo's patcher (`TorchPatcher.patch`, on 2.11 to 2.15) switches
    torch.distributions' argument validation off, so a compiled `Normal(...)` guards on
    `Distribution._validate_args == False`. The file, never running torch.compile, does the same."""
    torch.distributions.Distribution.set_default_validate_args(False)


def fill_einops_registry(tensors: list) -> None:
    """einops fills its backend registry (`_type2backend`) on first use, and Dynamo guards the
    registry's first key: where the model uses einops, fill it as the compiling process had it
    (torch's backend first), so that the guards see the same registry, not an empty one."""
    backends = sys.modules.get("einops._backends")
    tensor = next((t for t in tensors if isinstance(t, torch.Tensor)), None)
    if backends is not None and tensor is not None and not backends._type2backend:
        backends.get_backend(tensor)


def dispatch_keys(t: torch.Tensor) -> str:
    """The tensor's dispatch keys as Dynamo's TENSOR_MATCH sees them (no public API reads them)."""
    keys = torch._C._dispatch_keys(t) | torch._C._dispatch_tls_local_include_set()
    return repr(keys - torch._C._dispatch_tls_local_exclude_set())


def saved_tensors_hooks_ids():
    """ids of the innermost saved-tensors hooks when AOTAutograd inlines them, else None (AOT's own check)."""
    utils = torch._functorch._aot_autograd.utils
    hooks = utils.top_saved_tensors_hooks()
    return tuple(map(id, hooks)) if utils.saved_tensors_hooks_are_inlineable(hooks) else None


def check_no_aliasing(*tensors) -> bool:
    return len({id(t) for t in tensors}) == len(tensors)


def ___dict_contains(key, d) -> bool:
    return dict.__contains__(d, key)


def ___set_contains(s, item) -> bool:
    """SET_CONTAINS: Dynamo checks with C's `PySet_Contains`, which takes a set or a frozenset; the
    `set.__contains__` its guard code prints refuses a frozenset (einops' `keyword.iskeyword.__self__`)."""
    return (frozenset.__contains__ if isinstance(s, frozenset) else set.__contains__)(s, item)


def ___dict_key(d, held):
    """The key of `d` that is `held`: a key of a process-wide registry by what it holds, where
    Dynamo's guard reads it by position (which says what the process did before)."""
    for key in d:
        if key is held:
            return key
    raise KeyError(held)


def ___dict_key_with_id(d, key_id):
    """The key of `d` whose id is `key_id` (the object an identity guard compares, found again)."""
    for key in d:
        if key_id == id(key):
            return key
    raise KeyError(key_id)


def ___dict_key_equal(d, value):
    """The key of `d` equal to `value` (a constant key: a registry's class name)."""
    for key in d:
        if key == value:
            return key
    raise KeyError(value)


def ___from_numpy(a):
    """Dynamo checks a numpy value (an array, or a numpy integer a module holds as a size) as the
    tensor `torch.as_tensor` makes of it, and passes anything else through (guards.py's
    `from_numpy`); numpy is only looked up, since a value cannot be numpy's unless it is loaded."""
    numpy = sys.modules.get("numpy")
    if numpy is not None and isinstance(a, (numpy.generic, numpy.ndarray)):
        with torch.overrides._enable_torch_function():
            return torch.as_tensor(a)
    return a


def ___odict_getitem(d, key):
    return collections.OrderedDict.__getitem__(d, key)


def ___namedtuple_fields(x):
    return x._fields
