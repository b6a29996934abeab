"""The fresh process of `precompile=True`: load the saved artifact, call it, send the outputs back.

`python -m pytest_torchcompile.snapshot.precompile.child ARTIFACT CALL RESULT`
(through `fresh_process/child.py`): CALL holds the inputs, the module for a
method (`self`, passed first) or None, the RNG seed and the switches the
compiled call ran under; RESULT receives the outputs and the load time, or
the error.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import torch

from ..._torch import aot
from ..._torch.formats import rejected_guards
from ..._torch.tensors import map_tensors
from ...common.diagnose import first_line, innermost
from ..fresh_process.child import NotCarried, answer_call, around_call


def main(argv: list[str]) -> int:
    return answer_call(argv, run)


def run(call: dict[str, Any], leading: list[str]) -> dict[str, Any]:
    """Load the artifact, call it seeded under the caller's switches, detach the outputs."""
    (artifact,) = leading
    answer: dict[str, Any] = {"error": None}
    args = ((call["model"],) if call["model"] is not None else ()) + call["args"]
    try:
        # loaded under the switches too: the loaded guards take the dispatch keys they expect then
        with around_call(call):
            started = time.perf_counter()
            try:
                compiled = aot.load(Path(artifact))
            except Exception as exc:
                answer["error"] = f"load_compiled_function failed: {first_line(innermost(exc))}"
                return answer
            answer["load_seconds"] = time.perf_counter() - started
            torch.manual_seed(call["seed"])
            output = compiled(*args, **call["kwargs"])
        answer["output"] = map_tensors(lambda t: t.detach(), output)
    except NotCarried:
        raise
    except Exception as exc:
        answer["error"] = _call_failure(exc)
    return answer


def _call_failure(exc: Exception) -> str:
    """A guard rejection names the guard; anything else its first line."""
    failed = rejected_guards(str(exc))
    if failed is None:
        return f"the loaded artifact raised {type(exc).__name__}: {first_line(innermost(exc))}"
    guards = "\n".join(f"  {part}" for part in failed)
    return (
        "the loaded artifact rejected these inputs (a precompiled artifact cannot recompile); "
        f"the guard that failed:\n{guards}"
    )


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
