"""One call in a fresh process: the call saved in, the answer saved out.

The precompile round trip and the program file are both checked where
nothing of this process's compiles can help them: a process that never
compiled anything (`servers.py`: forked from a server that imported torch
once, or a new interpreter).
"""

from __future__ import annotations

import functools
import importlib
import pickle
import signal
import sys
import types
from pathlib import Path
from typing import Any

import torch

from ...common.diagnose import first_line
from .servers import Call, FreshProcesses, FreshProcessFailed

__all__ = ["FreshProcessFailed", "FreshProcesses", "Unpicklable", "call_fresh_process"]


class Unpicklable(Exception):
    """The call cannot be saved for the fresh process (a model or input that does not pickle)."""


class _Pickler(pickle.Pickler):
    """pickle's own, which also saves a method bound over a callable that is not a function
    (torchao binds a `functools.partial` to each quantized Linear as its `extra_repr`): pickle
    names a method by its function's `__name__`, which a partial has not; and a member of an
    extension's enum whose class its own name does not import (torch's `SDPBackend` says it is
    `torch.nn.attention._SDPBackend`, which is not there; denoising-diffusion-pytorch keeps a list
    of them on its attention modules)."""

    def reducer_override(self, obj: object) -> Any:
        if isinstance(obj, types.MethodType) and not isinstance(obj.__func__, types.FunctionType):
            return bind, (obj.__func__, obj.__self__)
        place = _enum_home(type(obj)) if hasattr(type(obj), "__members__") else None
        if place is not None and getattr(obj, "name", None) in type(obj).__members__:
            return member, (*place, obj.name)  # type: ignore[attr-defined]
        return NotImplemented


def bind(function: Any, instance: object) -> types.MethodType:
    """`function` bound to `instance` again (`types.MethodType` itself pickles by no name)."""
    return types.MethodType(function, instance)


def member(module: str, name: str, member_name: str) -> object:
    """The enum member `member_name` of the class at `module`'s attribute `name`."""
    return getattr(getattr(importlib.import_module(module), name), member_name)


@functools.cache
def _enum_home(cls: type) -> tuple[str, str] | None:
    """(module, attribute) where a loaded module holds `cls`, for a class whose own
    `__module__` and `__qualname__` do not import it; None where they do (pickle's own way)."""
    if getattr(sys.modules.get(cls.__module__), cls.__qualname__, None) is cls:
        return None
    for name, module in list(sys.modules.items()):
        for attribute, value in list(getattr(module, "__dict__", {}).items()):
            if value is cls and not attribute.startswith("__"):
                return name, attribute
    return None


#: `torch.save`'s pickle module, with `_Pickler`
_PICKLE = types.ModuleType("pickle")
_PICKLE.__dict__.update(vars(pickle))
_PICKLE.Pickler = _Pickler  # type: ignore[attr-defined]


def call_fresh_process(
    processes: FreshProcesses,
    module: str,
    leading: list[str],
    payload: dict[str, Any],
    folder: Path,
    timeout_s: float,
) -> dict[str, Any]:
    """Run `module.main([*leading, CALL, RESULT])` fresh on `payload`, return the answer it saved
    (with `started`: how its process started, `servers.FORKED` or `servers.NEW_INTERPRETER`)."""
    call, result = folder / "call.pt", folder / "result.pt"
    result.unlink(missing_ok=True)
    try:
        torch.save(payload, call, pickle_module=_PICKLE)
    except (pickle.PicklingError, AttributeError, TypeError, RuntimeError) as exc:
        raise Unpicklable(first_line(exc)) from exc
    fresh = Call(module, [*leading, str(call), str(result)], folder, timeout_s)
    code = processes.run(fresh)
    if code != 0 or not result.is_file():
        raise FreshProcessFailed(f"({_exit(code)}):\n{fresh.stderr_tail()}")
    try:
        answer = torch.load(result, weights_only=False)
    except Exception as exc:  # a child that wrote something else there
        raise FreshProcessFailed(f"(its answer could not be read: {first_line(exc)})") from None
    finally:
        result.unlink()
    answer["started"] = processes.last
    return answer


def _exit(code: int) -> str:
    """`exit 3`, or `killed by SIGSEGV` for a signal."""
    if code >= 0:
        return f"exit {code}"
    try:
        return f"killed by {signal.Signals(-code).name}"
    except ValueError:
        return f"killed by signal {-code}"
