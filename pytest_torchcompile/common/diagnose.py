"""Name the pipeline stage a compile error came from, for the failure text.

torch wraps backend errors; the innermost exception's type and the torch
modules on its traceback tell the stage (`_torch/errors.py` knows both):
Dynamo tracing, AOTAutograd, Inductor lowering, or the C++/Triton compile of
generated kernels. A user-supplied backend is named as itself.
"""

from __future__ import annotations

import traceback

from .._torch import errors
from .._torch.errors import innermost

__all__ = ["compile_stage", "first_line", "innermost", "user_frame"]

DYNAMO = "Dynamo tracing"
AOT = "AOTAutograd"
LOWERING = "Inductor lowering"
KERNEL_COMPILE = "C++/Triton compile"

_STAGES = {errors.KERNEL_COMPILE: KERNEL_COMPILE, errors.LOWERING: LOWERING, errors.AOT_AUTOGRAD: AOT}


def compile_stage(exc: BaseException, backend_name: str, user_backend: bool) -> str:
    """The stage that raised `exc` while compiling with `backend_name`."""
    where = errors.raised_in(exc)
    if where is not None:
        return _STAGES[where]
    if user_backend and errors.is_backend_failure(exc):
        return f"backend {backend_name}"
    return DYNAMO


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
