"""One call in a fresh Python process: the call saved in, the answer saved out.

The precompile round trip and the program file are both checked where
nothing of this process's compiles can help them: a new interpreter that
imports only what the call needs.
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
from pathlib import Path
from typing import Any

import torch

from ..common.diagnose import first_line


class Unpicklable(Exception):
    """The call cannot be saved for the fresh process (a model or input that does not pickle)."""


class FreshProcessFailed(Exception):
    """The fresh process exited without an answer; the message has its exit status and stderr."""


def call_fresh_process(
    module: str, leading: list[str], payload: dict[str, Any], folder: Path, timeout_s: float
) -> dict[str, Any]:
    """Run `python -m module *leading CALL RESULT` on `payload`, return the answer it saved."""
    call, result = folder / "call.pt", folder / "result.pt"
    try:
        torch.save(payload, call)
    except (pickle.PicklingError, AttributeError, TypeError, RuntimeError) as exc:
        raise Unpicklable(first_line(exc)) from exc
    done = subprocess.run(
        [sys.executable, "-m", module, *leading, str(call), str(result)],
        env=_child_env(),
        capture_output=True,
        text=True,
        timeout=timeout_s,
    )
    if done.returncode != 0 or not result.is_file():
        tail = "\n".join(done.stderr.strip().splitlines()[-15:])
        raise FreshProcessFailed(f"(exit {done.returncode}):\n{tail}")
    answer = torch.load(result, weights_only=False)
    result.unlink()
    return answer


def _child_env() -> dict[str, str]:
    """This process's environment, with its import path (pytest may have extended it)."""
    paths = [p for p in sys.path if isinstance(p, str) and p]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(dict.fromkeys(paths))}
