"""torch's exception types, and where in torch an error was raised.

Matched by type name and by the torch files on the traceback, never by
importing the types: the classes moved between modules across releases,
and a name match needs no torch import. `common/diagnose.py` turns the
answers into the stage names a failure message shows.
"""

from __future__ import annotations

import traceback

#: Dynamo's errors for code it cannot trace in one graph (a graph break under fullgraph).
GRAPH_BREAK_ERRORS = ("Unsupported", "UserError")
#: the wrapper Dynamo puts around any error raised by a backend.
BACKEND_FAILURE = "BackendCompilerFailed"
#: errors of compiling generated kernels (C++ or Triton).
KERNEL_COMPILE_ERRORS = ("CppCompileError", "CompilationError", "InductorError")
KERNEL_COMPILE_FILES = ("_inductor/cpp_builder.py", "_inductor/codecache.py", "_inductor/async_compile.py", "triton/compiler")
LOWERING_ERRORS = ("LoweringException",)
LOWERING_FILES = ("_inductor/",)
AOT_AUTOGRAD_FILES = ("_functorch/",)

#: where `raised_in` says an error came from.
KERNEL_COMPILE, LOWERING, AOT_AUTOGRAD = "kernel compile", "lowering", "aot_autograd"


def is_graph_break(exc: BaseException) -> bool:
    """Dynamo refused to trace part of the code in one graph."""
    return type(exc).__name__ in GRAPH_BREAK_ERRORS


def is_backend_failure(exc: BaseException) -> bool:
    """Dynamo's wrapper around an error a backend raised."""
    return type(exc).__name__ == BACKEND_FAILURE


def innermost(exc: BaseException) -> BaseException:
    """Follow `inner_exception` (torch's wrappers), `__cause__` and `__context__` to the original error."""
    seen = set()
    while id(exc) not in seen:
        seen.add(id(exc))
        nxt = getattr(exc, "inner_exception", None) or exc.__cause__ or exc.__context__
        if nxt is None:
            break
        exc = nxt
    return exc


def raised_in(exc: BaseException) -> str | None:
    """KERNEL_COMPILE, LOWERING or AOT_AUTOGRAD from the innermost error's type and files; None otherwise."""
    inner = innermost(exc)
    name = type(inner).__name__
    files = [frame.filename.replace("\\", "/") for frame in traceback.extract_tb(inner.__traceback__)]
    if name in KERNEL_COMPILE_ERRORS or _touches(files, KERNEL_COMPILE_FILES):
        return KERNEL_COMPILE
    if name in LOWERING_ERRORS or _touches(files, LOWERING_FILES):
        return LOWERING
    if _touches(files, AOT_AUTOGRAD_FILES):
        return AOT_AUTOGRAD
    return None


def _touches(files: list[str], markers: tuple[str, ...]) -> bool:
    return any(marker in f for f in files for marker in markers)
