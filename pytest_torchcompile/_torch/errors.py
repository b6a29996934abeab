"""torch's exception types, and where in torch an error was raised.

torch marks its compile failures: every one of them is, or wraps, a
`torch._dynamo.exc.TorchDynamoException` (`BackendCompilerFailed` and
`InductorError` hold the original in `inner_exception`); code that compiled
and then raises at run time raises its own exception unwrapped. The torch
files on the tracebacks then tell the stage. Matched by type name and by
file, never by importing the types: the classes moved between modules
across releases, and a name match needs no torch import.
`common/diagnose.py` turns the answers into the stage names and texts a
failure message shows.
"""

from __future__ import annotations

import traceback
from collections.abc import Iterator

#: Dynamo's errors for code it cannot trace in one graph (a graph break under fullgraph).
GRAPH_BREAK_ERRORS = ("Unsupported", "UserError")
#: the wrapper Dynamo puts around any error raised by a backend.
BACKEND_FAILURE = "BackendCompilerFailed"
#: the base class of every error torch raises while compiling.
COMPILE_ERROR_BASE = "TorchDynamoException"
#: errors of compiling generated kernels (C++ or Triton).
KERNEL_COMPILE_ERRORS = (
    "CppCompileError",
    "CUDACompileError",
    "CompilationError",
    "InvalidCxxCompiler",
)
KERNEL_COMPILE_FILES = (
    "_inductor/cpp_builder.py",
    "_inductor/codecache.py",
    "_inductor/async_compile.py",
    "triton/compiler",
)
LOWERING_ERRORS = ("LoweringException",)
LOWERING_FILES = ("_inductor/",)
AOT_AUTOGRAD_FILES = ("_functorch/",)
#: where torch.compile checks its own arguments.
ARGUMENT_CHECK_FILES = ("torch/__init__.py", "torch/_dynamo/backends/registry.py")

#: where `raised_in` says an error came from.
KERNEL_COMPILE, LOWERING, AOT_AUTOGRAD = "kernel compile", "lowering", "aot_autograd"


def chain(exc: BaseException) -> Iterator[BaseException]:
    """`exc`, then what it wraps (`inner_exception`, `__cause__`, `__context__`), outermost first."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = (
            getattr(current, "inner_exception", None) or current.__cause__ or current.__context__
        )


def innermost(exc: BaseException) -> BaseException:
    """Follow `inner_exception` (torch's wrappers), `__cause__` and `__context__` to the original error."""
    return list(chain(exc))[-1]


def is_graph_break(exc: BaseException) -> bool:
    """Dynamo refused to trace part of the code in one graph."""
    return type(exc).__name__ in GRAPH_BREAK_ERRORS


def is_backend_failure(exc: BaseException) -> bool:
    """Dynamo's wrapper around an error a backend raised, anywhere in the chain."""
    return any(type(e).__name__ == BACKEND_FAILURE for e in chain(exc))


def is_compile_error(exc: BaseException) -> bool:
    """Whether torch raised `exc` while compiling (its exception classes)."""
    return any(
        cls.__name__ == COMPILE_ERROR_BASE and cls.__module__.startswith("torch.")
        for e in chain(exc)
        for cls in type(e).__mro__
    )


def raised_in(exc: BaseException) -> str | None:
    """KERNEL_COMPILE, LOWERING or AOT_AUTOGRAD from the chain's types and files; None otherwise.

    A kernel compile failure is one whether or not torch wrapped it; lowering
    and AOTAutograd only count for a compile error (code that compiled and
    raises at run time passes through Inductor's files too).
    """
    errors = list(chain(exc))
    names = {type(e).__name__ for e in errors}
    files = [
        frame.filename.replace("\\", "/")
        for e in errors
        for frame in traceback.extract_tb(e.__traceback__)
    ]
    if names & set(KERNEL_COMPILE_ERRORS) or _touches(files, KERNEL_COMPILE_FILES):
        return KERNEL_COMPILE
    if not is_compile_error(exc):
        return None
    if names & set(LOWERING_ERRORS) or _touches(files, LOWERING_FILES):
        return LOWERING
    if _touches(files, AOT_AUTOGRAD_FILES):
        return AOT_AUTOGRAD
    return None


def raised_by_argument_check(exc: BaseException) -> bool:
    """Whether `exc` was raised where `torch.compile` checks its own arguments."""
    frames = traceback.extract_tb(exc.__traceback__)
    return bool(frames) and _touches([frames[-1].filename.replace("\\", "/")], ARGUMENT_CHECK_FILES)


def compiler_output(exc: BaseException) -> str | None:
    """The compiler's output held by Inductor's kernel compile error (`CppCompileError.output`), or None."""
    output = getattr(exc, "output", None)
    if type(exc).__name__ not in KERNEL_COMPILE_ERRORS or not isinstance(output, str):
        return None
    return output


def _touches(files: list[str], markers: tuple[str, ...]) -> bool:
    return any(marker in f for f in files for marker in markers)
