"""The fresh process of `run_program=True`: load a program file with compilation trapped, call it, observe.

`python -m pytest_torchcompile.snapshot.program.run.child PROGRAM CALL RESULT`
(through `fresh_process/child.py`): CALL holds the model (as before the
call, with the gradients earlier calls' backwards left in it, which a pickled
parameter drops), the inputs, the switches the compiled call ran under, the case's
`grads` and the function that observes the call (the compiled run's own,
`check.Observe`: seeded, the same backward); RESULT receives what the call
observed, the compiles that ran, load and call seconds, or the error that
stopped it.
"""

from __future__ import annotations

import copy
import runpy
import sys
import time
import traceback
from typing import Any

import torch

from ...._torch.program.runtime_guards import fill_einops_registry
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
        fill_einops_registry(tree_leaves((call["args"], call["kwargs"])))
        with around_call(call):
            _run_eagerly_first(model, call["args"], call["kwargs"])
        for name, grad in call.get("grads_before", {}).items():
            model.get_parameter(name).grad = grad  # as earlier calls' backwards left them
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


def _run_eagerly_first(model: Any, args: Any, kwargs: Any) -> None:
    """Call a copy of the model eagerly once, as the compiling process did before it compiled (the
    eager reference): a library fills its process-wide registries on first use (tensordict's memo
    of the classes it has seen), and the guards check the keys the compiled call found there,
    by what they hold (`emit/unordered.py`). Copies: the program's call sees the model as it was."""
    if not isinstance(model, torch.nn.Module):
        return
    copy.deepcopy(model)(*copy.deepcopy(args), **copy.deepcopy(kwargs))


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
