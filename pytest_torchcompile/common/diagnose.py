"""Name the pipeline stage a compile error came from, for the failure text.

torch wraps backend errors in `BackendCompilerFailed`; the innermost
exception's type and the torch modules on its traceback tell the stage:
Dynamo tracing, AOTAutograd, Inductor lowering, or the C++/Triton compile of
generated kernels. A user-supplied backend is named as itself.
"""

from __future__ import annotations

import traceback

DYNAMO = "Dynamo tracing"
AOT = "AOTAutograd"
LOWERING = "Inductor lowering"
KERNEL_COMPILE = "C++/Triton compile"

_KERNEL_COMPILE_TYPES = ("CppCompileError", "CompilationError", "InductorError")
_KERNEL_COMPILE_FILES = ("_inductor/cpp_builder.py", "_inductor/codecache.py", "_inductor/async_compile.py", "triton/compiler")


def innermost(exc: BaseException) -> BaseException:
    """Follow `inner_exception`, `__cause__` and `__context__` to the original error."""
    seen = set()
    while id(exc) not in seen:
        seen.add(id(exc))
        nxt = getattr(exc, "inner_exception", None) or exc.__cause__ or exc.__context__
        if nxt is None:
            break
        exc = nxt
    return exc


def compile_stage(exc: BaseException, backend_name: str, user_backend: bool) -> str:
    """The stage that raised `exc` while compiling with `backend_name`."""
    inner = innermost(exc)
    files = [frame.filename.replace("\\", "/") for frame in traceback.extract_tb(inner.__traceback__)]
    if type(inner).__name__ in _KERNEL_COMPILE_TYPES or _touches(files, _KERNEL_COMPILE_FILES):
        return KERNEL_COMPILE
    if type(inner).__name__ == "LoweringException" or _touches(files, ("_inductor/",)):
        return LOWERING
    if _touches(files, ("_functorch/",)):
        return AOT
    if user_backend and type(exc).__name__ == "BackendCompilerFailed":
        return f"backend {backend_name}"
    return DYNAMO


def _touches(files: list[str], markers: tuple[str, ...]) -> bool:
    return any(marker in f for f in files for marker in markers)


def first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0] if text else ''}"


def user_frame(exc: BaseException) -> str:
    """`  File "model.py", line 12, in forward` for the innermost frame, or ''."""
    frames = traceback.extract_tb(exc.__traceback__)
    if not frames:
        return ""
    frame = frames[-1]
    code = f"\n    {frame.line}" if frame.line else ""
    return f'  File "{frame.filename}", line {frame.lineno}, in {frame.name}{code}\n'
