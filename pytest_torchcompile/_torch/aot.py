"""Precompile: `aot_compile`, then save and load the compiled function.

`torch.compile(fn, fullgraph=True).aot_compile(((args), kwargs))` returns an
object with `save_compiled_function(path)`; `torch.compiler.load_compiled_function`
loads it back in any process. Detected by feature: the method exists from
torch 2.10, behind `torch._dynamo.config.enable_aot_compile` until 2.12, so
the flag is turned on for the compile; a torch without it is told so
(`unsupported`), naming the first release that has it, and so is a backend
those early releases cannot save.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import torch
import torch._dynamo.config as dynamo_config

#: the first torch release with `aot_compile` and `torch.compiler.load_compiled_function`.
SINCE = "2.10"
_FLAG = "enable_aot_compile"
#: what an `aot_compile` that cannot save this backend's output raises (2.11: `aot_eager`
#: fails in AOTAutograd's cache bundling, `eager` is no SerializableCallable). Matched on text: the exception types are generic.
_BACKEND_NOT_SAVED = ("expected OutputCode", "does not implement SerializableCallable")


class Unsupported(Exception):
    """This torch cannot precompile; the message says since which release torch can."""


def unsupported() -> str | None:
    """Why the installed torch cannot precompile, or None when it can."""
    if hasattr(torch.compiler, "load_compiled_function") and (
        hasattr(dynamo_config, _FLAG) or _has_method()
    ):
        return None
    return _message()


def _message() -> str:
    return (
        f"the installed torch {torch.__version__} cannot precompile: it has no "
        f"torch.compile(...).aot_compile / torch.compiler.load_compiled_function (torch has them since {SINCE})"
    )


def _has_method() -> bool:
    return hasattr(torch.compile(lambda: None), "aot_compile")


@contextlib.contextmanager
def _enabled() -> Iterator[None]:
    """`enable_aot_compile` on where torch has the flag (its releases before 2.12 default it to off)."""
    if not hasattr(dynamo_config, _FLAG):
        yield
        return
    with dynamo_config.patch(**{_FLAG: True}):
        yield


def aot_compile(
    fn: Any, compile_kwargs: dict[str, object], args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """Compile `fn` ahead of time on these inputs (always fullgraph); `Unsupported` on a torch without it."""
    reason = unsupported()
    if reason is not None:
        raise Unsupported(reason)
    with _enabled():
        compiled = torch.compile(fn, **{**compile_kwargs, "fullgraph": True})
        method = getattr(compiled, "aot_compile", None)
        if method is None:
            raise Unsupported(_message())
        try:
            return method((tuple(args), dict(kwargs)))
        except (AssertionError, RuntimeError) as exc:
            if any(text in str(exc) for text in _BACKEND_NOT_SAVED):
                raise Unsupported(_backend_message(compile_kwargs.get("backend"), exc)) from exc
            raise


def _backend_message(backend: object, exc: BaseException) -> str:
    name = backend if isinstance(backend, str) else getattr(backend, "__name__", repr(backend))
    first = (str(exc).splitlines() or [""])[0]
    return (
        f"the installed torch {torch.__version__} cannot precompile backend {name!r}: its aot_compile "
        f"cannot save what this backend compiled ({type(exc).__name__}: {first}); "
        "use backend='inductor' with precompile=True on this torch (torch 2.13 and later also save aot_eager's)"
    )


def save(compiled: Any, path: Path) -> None:
    compiled.save_compiled_function(str(path))


def load(path: Path) -> Any:
    with _enabled(), open(path, "rb") as handle:
        return torch.compiler.load_compiled_function(handle)
