"""The fresh process's side of a call: the payload read, the caller's switches set, the answer saved.

`python -m <a check's child module> *LEADING CALL RESULT`: each check's child
module (`program/run/child.py`, `precompile/child.py`) hands its `run` to
`answer_call`. CALL holds what `check.FreshCheck.fresh` saved: the inputs,
the model where the check sends one, the caller's `GlobalState`, which
tensors were inference tensors (made so again here, `inference.py`) and the
check's own entries. The process-wide switches (threads, deterministic
algorithms, default dtype, matmul precision) are set before `run` loads
anything; `run` puts the call itself inside `around_call(call)` (grad and
inference mode, autocast, `__torch_function__`). A switch the process could
not take is answered as `not_carried`, never as the model's failure.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

import torch

from ..._torch.process import global_state
from ..._torch.process.global_state import NotCarried
from .inference import restore

__all__ = ["NotCarried", "answer_call", "around_call"]

#: (the saved call, the leading arguments) -> the answer (a dict with at least `error`)
Run = Callable[[dict[str, Any], list[str]], dict[str, Any]]


def answer_call(argv: list[str], run: Run) -> int:
    """Read the call, set the caller's process-wide switches, `run` it, save the answer."""
    *leading, call_path, result_path = argv
    call = torch.load(call_path, weights_only=False)
    global_state.set_process_wide(call["state"])
    inputs = restore(call["inference"], call.get("model"), (call["args"], call["kwargs"]))
    call["args"], call["kwargs"] = inputs
    try:
        answer = run(call, leading)
    except NotCarried as exc:
        answer = {"error": None, "not_carried": str(exc)}
    torch.save(answer, result_path)
    return 0


def around_call(call: dict[str, Any]) -> AbstractContextManager[None]:
    """The caller's scoped switches around the call (NotCarried when one could not be set)."""
    return global_state.around_call(call["state"])
