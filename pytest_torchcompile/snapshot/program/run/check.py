"""`run_program=True`: run the program file in a fresh process and compare it with the compiled run, bitwise.

After each compiled call of a case, `ProgramCheck.run` writes the program
file as of that call (every compile so far, newest first, as Dynamo's cache
held them), hands it, the model as it was before the call and the call's
inputs to a fresh Python process (`child.py`) in which torch.compile and
Dynamo's frame conversion raise, and gets back what that process observed:
outputs, gradients after the same seeded backward, buffers and inputs after
the call. Any difference from the compiled run, bit for bit (NaN equals
NaN), fails the case naming the stage `program` and what differed; so does
a file the process could not load or whose guards refused the inputs.
Load and call times go to `ProgramReport` (never into a snapshot).

How a call is observed and how two observations compare are the numerics'
(the case passes them in: `Observe`, `Differences`): the program's run is
observed exactly as the compiled run it is held against.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from ....common.capture_log import CaptureLog
from ...fresh_process.call import (
    FreshProcesses,
    FreshProcessFailed,
    Unpicklable,
    call_fresh_process,
)
from ..facts.data import ProgramFacts
from ..layout.refusals import ProgramRefused
from ..layout.writer import write_program

CHILD_TIMEOUT_S = 900
STAGE = "program"

#: one call's positional and keyword arguments.
Inputs = tuple[tuple[Any, ...], dict[str, Any]]
#: runs one call seeded, backpropagates, observes: (callable, model, inputs, grads) -> (output,
#: path -> leaf). A module-level function: it reaches the fresh process pickled, by its name.
Observe = Callable[[object, object, Inputs, bool | None], tuple[object, dict[str, Any]]]
#: (the program's observation, the compiled run's) -> one line per difference, [] when bit for bit equal.
Differences = Callable[[dict[str, Any], dict[str, Any]], list[str]]


class ProgramMismatch(Exception):
    """The program file could not run in a fresh process, or ran and differed from the compiled run."""


@dataclass
class ProgramReport:
    """What the fresh processes measured: file size and seconds (not snapshotted: they vary)."""

    file_bytes: int = 0
    load_seconds: list[float] = field(
        default_factory=list
    )  # run_path + load(): kernels compiled or read from cache
    call_seconds: list[float] = field(default_factory=list)
    ran: list[list[str]] = field(default_factory=list)  # per call, the compiles that ran


@dataclass
class ProgramCheck:
    """The program round trip of one case: one fresh process per call."""

    backend: str
    observe: Observe
    differences: Differences
    processes: FreshProcesses
    report: ProgramReport = field(default_factory=ProgramReport)
    workdir: tempfile.TemporaryDirectory[str] = field(
        default_factory=lambda: tempfile.TemporaryDirectory(prefix="torchcompile_program_")
    )

    def run(
        self,
        log: CaptureLog,
        facts: ProgramFacts,
        model: object,
        inputs: Inputs,
        grads: bool | None,
        reference: dict[str, Any],
    ) -> None:
        """Write the file as of this call, run it fresh on `model` (as before the call) and `inputs`, compare."""
        folder = Path(self.workdir.name)
        program = folder / f"program_{len(self.report.load_seconds)}.py"
        try:
            write_program(log, facts, self.backend, program)
        except ProgramRefused as exc:
            raise ProgramMismatch(f"run_program=True: {exc}") from None
        self.report.file_bytes = program.stat().st_size
        answer = self._child(folder, program, model, inputs, grads)
        self.report.load_seconds.append(answer["load_seconds"])
        self.report.call_seconds.append(answer["call_seconds"])
        self.report.ran.append(answer["ran"])
        differences = self.differences(answer["seen"], reference)
        if differences:
            lines = [
                f"the program file run in a fresh process (torch.compile trapped) differs from the compiled run ({self.backend}):"
            ]
            lines.append(f"diverges at stage: {STAGE}")
            lines.append(f"ran: {', '.join(answer['ran']) or 'nothing compiled'}")
            raise ProgramMismatch("\n".join(lines + differences))

    def _child(
        self, folder: Path, program: Path, model: object, inputs: Inputs, grads: bool | None
    ) -> dict[str, Any]:
        args, kwargs = inputs
        payload = {
            "observe": self.observe,
            "model": model,
            # what earlier calls' backwards left in the gradients (a pickled parameter drops them)
            "grads_before": {
                name: p.grad
                for name, p in (
                    model.named_parameters() if isinstance(model, torch.nn.Module) else ()
                )
                if p.grad is not None
            },
            "args": tuple(args),
            "kwargs": dict(kwargs),
            "grads": grads,
        }
        payload.update(
            grad_enabled=torch.is_grad_enabled(),
            num_threads=torch.get_num_threads(),
            deterministic=torch.are_deterministic_algorithms_enabled(),
            deterministic_warn_only=torch.is_deterministic_algorithms_warn_only_enabled(),
            default_dtype=torch.get_default_dtype(),
        )  # the settings Dynamo's GLOBAL_STATE guard holds the call to
        try:
            answer = call_fresh_process(
                self.processes,
                "pytest_torchcompile.snapshot.program.run.child",
                [str(program)],
                payload,
                folder,
                CHILD_TIMEOUT_S,
            )
        except Unpicklable as exc:
            raise ProgramMismatch(
                "run_program=True: the model and inputs must be picklable to reach the fresh process that runs the "
                f"program file, and the model's class importable there (defined at module level): {exc}; "
                "the file itself is written (write_program), and runs with load(model) where the model is at hand"
            ) from exc
        except FreshProcessFailed as exc:
            raise ProgramMismatch(
                f"diverges at stage: {STAGE}\nthe fresh process that runs the program file failed {exc}"
            ) from None
        if answer["error"]:
            raise ProgramMismatch(f"diverges at stage: {STAGE}\n{answer['error']}")
        return answer

    def close(self) -> None:
        self.workdir.cleanup()
