"""Dynamo's process state: reset, the backend registry, the bytecode and decline hooks.

`reset` forgets earlier compiles so frame ids do not depend on test order.
The bytecode hook sees each frame's code before and after Dynamo rewrote it
(the transformed code is not in the trace), together with the compile id
of the frame compile that produced it. The decline hook sees each frame
Dynamo chose not to compile, and whether it will run that code as Python
from then on.
"""

from __future__ import annotations

import contextlib
import inspect
import types
from collections.abc import Callable, Iterator
from typing import Any

import torch
from torch._dynamo import convert_frame
from torch._dynamo.backends.registry import list_backends, lookup_backend
from torch._dynamo.convert_frame import register_bytecode_hook
from torch._guards import CompileContext

#: backends Dynamo always accepts by name, whatever its registry lists.
BUILTIN_BACKENDS = ("eager", "aot_eager", "inductor")
#: attributes torch.compile sets on the module it compiles (2.13's `OptimizeContext.__call__` marks
#: the module it wraps), not the model's own: the program file's module layout leaves them out
COMPILE_MARKS = frozenset({"_is_torch_compile"})


def reset() -> None:
    """Forget earlier compiles (caches, frame counters) so frame ids do not depend on test order."""
    torch._dynamo.reset()


def registered_backends() -> list[str]:
    """Every backend name `torch.compile(backend=...)` accepts, sorted."""
    return sorted(set(list_backends(exclude_tags=())) | set(BUILTIN_BACKENDS))


def backend_parameters(name: str) -> tuple[str, ...]:
    """The named parameters of a registered backend's compiler function.

    `torch.compile` passes `mode`/`options` to a backend other than Inductor
    as keywords; torch's debug backends (`eager`, `aot_eager`, ...) swallow
    them in `**kwargs` and only log that they did.
    """
    try:
        parameters = inspect.signature(lookup_backend(name)).parameters.values()
    except (TypeError, ValueError):  # no signature to read: do not second-guess the backend
        return ("mode", "options")
    return tuple(p.name for p in parameters if p.kind is not inspect.Parameter.VAR_KEYWORD)


def current_compile_id() -> tuple[int, int] | None:
    """(frame id, compile id of that frame) of the compile in progress, or None outside one."""
    compile_id = CompileContext.current_compile_id()
    if compile_id is None or compile_id.frame_id is None:
        return None
    return compile_id.frame_id, compile_id.frame_compile_id or 0


#: receives (original code, transformed code) of each frame Dynamo compiles.
BytecodeCallback = Callable[[types.CodeType, types.CodeType], None]


@contextlib.contextmanager
def bytecode_hook(callback: BytecodeCallback) -> Iterator[None]:
    """Call `callback` for every frame Dynamo compiles while inside; removed afterwards, even on error."""
    handle = register_bytecode_hook(callback)
    try:
        yield
    finally:
        handle.remove()


#: receives (code, for_good) of each frame Dynamo declined to compile: `for_good` when it runs that
#: code as Python from then on, cache or not (its frame action SKIP, applied to the code), else
#: for this call only (RUN_ONLY: later calls still try the compiles it has)
DeclineCallback = Callable[[types.CodeType, bool], None]


@contextlib.contextmanager
def decline_hook(callback: DeclineCallback) -> Iterator[None]:
    """Call `callback` for every frame Dynamo's frame hook returns to run uncompiled while inside.

    Dynamo declines a frame whose compiles all refuse its inputs when the new
    compile fails and the error is suppressed, or finds nothing to compile (a
    frame without tensors): its `ConvertFrameReturn` then holds no code, and
    with `apply_to_code` and the action SKIP the code runs as Python ever
    after, even where an old compile's guards would pass. The hook wraps the
    callback `torch.compile` installs (`CatchErrorsWrapper`, the same on every
    torch this project supports; nothing public reports this) and is removed
    afterwards, even on error. Frames Dynamo never compiles (its skip lists)
    pass through here too: the caller keeps those it compiled.
    """
    wrapper = convert_frame.CatchErrorsWrapper
    original = wrapper.__call__

    def observed(self: object, frame: Any, *args: Any, **kwargs: Any) -> Any:
        result = original(self, frame, *args, **kwargs)  # type: ignore[arg-type]
        if getattr(result, "guarded_code", True) is None:
            strategy = result.frame_exec_strategy
            skip = strategy.cur_action == _FRAME_ACTION.SKIP
            callback(frame.f_code, skip and bool(result.apply_to_code))
        return result

    wrapper.__call__ = observed  # type: ignore[method-assign]
    try:
        yield
    finally:
        wrapper.__call__ = original  # type: ignore[method-assign]


_FRAME_ACTION = torch._C._dynamo.eval_frame._FrameAction


def module_call_frame(model: object, code: types.CodeType) -> types.FunctionType | None:
    """The function whose frame Dynamo compiled when it is its wrap of a module's call, else None.

    For a module whose `forward` Dynamo would skip (torch.nn's own layers), `torch.compile(module)`
    compiles `external_utils.wrap_inline(module)`: a frame `inner(*args, **kwargs)` that calls the
    module, its one free variable `fn` the module. That wrap, around `model`, is returned.
    """
    from torch._dynamo import external_utils

    if not isinstance(model, torch.nn.Module):
        return None
    wrapper = external_utils.wrap_inline(model)
    if wrapper.__code__ is not code or wrapper.__code__.co_freevars != ("fn",):
        return None
    return wrapper


def resume_code(value: object) -> types.CodeType | None:
    """The code of the resume function a global Dynamo installed as `__resume_at_<N>` runs, or None.

    A resume function without free variables is installed as itself. One with free variables (a
    closure, or a frame with cells) is installed as a factory (2.13 and 2.15's `_make_fn(closure)`
    in `OutputGraph.install_resume_function_global`) that the transformed code calls with the
    frame's cells; the code is the factory's free variable `code`. On 2.11 Dynamo installs the code
    object itself and the transformed code makes the function (MAKE_FUNCTION), which the file
    refuses.
    """
    if not isinstance(value, types.FunctionType):
        return None
    if not value.__code__.co_freevars:
        return value.__code__
    cells = dict(zip(value.__code__.co_freevars, value.__closure__ or ()))
    if value.__code__.co_name == "_make_fn" and "code" in cells:
        code = cells["code"].cell_contents
        return code if isinstance(code, types.CodeType) and code.co_freevars else None
    return None
