"""The fresh process of `run_program=True`: load a program file with compilation trapped, call it, observe.

`python -m pytest_torchcompile.snapshot.program.run.child PROGRAM CALL RESULT`
(through `fresh_process/child.py`): CALL holds the model (as before the
call), the inputs, the switches the compiled call ran under, the case's
`grads` and the function that observes the call (the compiled run's own,
`check.Observe`: seeded, the same backward); RESULT receives what the call
observed, the compiles that ran, load and call seconds, or the error that
stopped it.
"""

from __future__ import annotations

import runpy
import sys
import time
import traceback
from typing import Any

import torch

from ...._torch.program.trap import trap_compilation
from ...._torch.tensors import tree_leaves
from ....common.diagnose import first_line
from ...fresh_process.child import NotCarried, answer_call, around_call


def main(argv: list[str]) -> int:
    return answer_call(argv, run)


def run(call: dict[str, Any], leading: list[str]) -> dict[str, Any]:
    """Load the program file, bind it to the model, make the call as the compiled run made it."""
    (program_path,) = leading
    trap_compilation()
    answer: dict[str, Any] = {
        "error": None,
        "load_seconds": 0.0,
        "call_seconds": 0.0,
        "ran": [],
        "seen": {},
    }
    try:
        started = time.perf_counter()
        namespace = runpy.run_path(program_path)
        model = call["model"]
        _fill_einops_registry(call["args"], call["kwargs"])
        program = (
            namespace["load"](model) if isinstance(model, torch.nn.Module) else namespace["load"]()
        )
        answer["load_seconds"] = time.perf_counter() - started
        started = time.perf_counter()
        with around_call(call):
            _, seen = call["observe"](program, model, (call["args"], call["kwargs"]), call["grads"])
        answer["call_seconds"] = time.perf_counter() - started
        answer["ran"], answer["seen"] = list(program.ran), seen
    except NotCarried:
        raise
    except Exception as exc:
        answer["error"] = _failure(exc)
    return answer


def _fill_einops_registry(args: Any, kwargs: Any) -> None:
    """einops fills its backend registry (`_type2backend`) on first use, and Dynamo guards the
    registry's first key: where the model uses einops, fill it here as the compiling process had
    it (torch's backend first), so that the guards see the same registry, not an empty one."""
    backends = sys.modules.get("einops._backends")
    leaves = tree_leaves((args, kwargs))
    tensor = next((t for t in leaves if isinstance(t, torch.Tensor)), None)
    if backends is not None and tensor is not None and not backends._type2backend:
        backends.get_backend(tensor)


def _failure(exc: BaseException) -> str:
    """A guard failure as the file words it; anything else with the line of the file that raised."""
    if type(exc).__name__ == "GuardFailure":
        return f"the program file's guards refused the inputs the compiled model ran:\n{exc}"
    frames = [
        f
        for f in traceback.extract_tb(exc.__traceback__)
        if f.filename.endswith(".py") and "program_" in f.filename
    ]
    where = f" (program file line {frames[-1].lineno}: {frames[-1].line})" if frames else ""
    return f"the program file raised {type(exc).__name__}{where}: {first_line(exc)}"


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
