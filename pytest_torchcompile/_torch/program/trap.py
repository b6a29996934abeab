"""Make torch.compile and Dynamo's frame conversion raise: the proof that a program file runs without them.

In the fresh process that runs a program file (`run_program=True`),
`trap_compilation` replaces `torch.compile`, `torch._dynamo.optimize`, the
callables Dynamo converts frames with and the hook that installs them by
functions that raise `CompilationTrapped`. Setting the frame hook to None
(what `torch._dynamo.disable` does inside Inductor's runtime) stays allowed:
it compiles nothing.
"""

from __future__ import annotations

from typing import Any


class CompilationTrapped(RuntimeError):
    """Something tried to compile while the program file ran."""


def _refuse(what: str) -> Any:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise CompilationTrapped(
            f"{what} was called while the program file ran: the file must run without torch.compile"
        )

    return refuse


def trap_compilation() -> None:
    """From now on, in this process, anything that would compile a frame raises."""
    import torch._dynamo
    import torch._dynamo.convert_frame as convert_frame
    import torch._dynamo.eval_frame as eval_frame

    torch.compile = _refuse("torch.compile")  # type: ignore[assignment]
    torch._dynamo.optimize = _refuse("torch._dynamo.optimize")  # type: ignore[assignment]
    for name in ("ConvertFrame", "ConvertFrameAssert", "CatchErrorsWrapper"):
        cls = getattr(convert_frame, name, None)
        if cls is not None:
            cls.__call__ = _refuse(f"Dynamo's frame conversion ({name})")
    for name in ("convert_frame", "convert_frame_assert", "catch_errors_wrapper"):
        if hasattr(convert_frame, name):
            setattr(convert_frame, name, _refuse(f"Dynamo's frame conversion ({name})"))
    install = eval_frame.set_eval_frame

    def set_eval_frame(callback: Any) -> Any:
        if callback not in (None, False):
            raise CompilationTrapped(
                "Dynamo tried to install its frame hook while the program file ran"
            )
        return install(callback)

    eval_frame.set_eval_frame = set_eval_frame
