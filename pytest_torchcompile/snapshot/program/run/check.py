"""`run_program=True`: run the program file in a fresh process and compare it with the compiled run, bitwise.

After each compiled call of a case, `ProgramRun.after_call` writes the
program file as of that call (every compile so far, newest first, as
Dynamo's cache held them), hands it, the model as it was before the call
and the call's inputs to a fresh Python process (`child.py`) in which
torch.compile and Dynamo's frame conversion raise, and gets back what that
process observed: outputs, gradients after the same seeded backward,
buffers and inputs after the call. Any difference from the compiled run,
bit for bit (NaN equals NaN), fails the case naming the stage `program` and
what differed; so does a file the process could not load or whose guards
refused the inputs. Load and call times go to `ProgramReport` (never into a
snapshot). The payload, the switches the call ran under and the failures of
the fresh process itself are `fresh_process/check.py`'s, shared with the
precompile round trip.

How a call is observed and how two observations compare are the numerics'
(the case passes them in: `Observe`, `Differences`): the program's run is
observed exactly as the compiled run it is held against.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import torch

from ...fresh_process.check import After, Before, FreshCheck, FreshCheckFailed, Inputs
from ...fresh_process.servers import FreshProcesses
from ..layout.refusals import ProgramRefused
from ..layout.writer import write_program
from .state import ProgramState

CHILD_TIMEOUT_S = 900
STAGE = "program"

__all__ = ["Inputs", "ProgramReport", "ProgramRun"]

#: runs one call seeded, backpropagates, observes: (callable, model, inputs, grads) -> (output,
#: path -> leaf). A module-level function: it reaches the fresh process pickled, by its name.
Observe = Callable[[object, object, Inputs, bool | None], tuple[object, dict[str, object]]]
#: (the program's observation, the compiled run's) -> one line per difference, [] when bit for bit equal.
Differences = Callable[[dict[str, object], dict[str, object]], list[str]]


@dataclass
class ProgramReport:
    """What the fresh processes measured: file size and seconds (not snapshotted: they vary)."""

    file_bytes: int = 0
    #: per call, run_path + load(): kernels compiled or read from cache
    load_seconds: list[float] = field(default_factory=list)
    call_seconds: list[float] = field(default_factory=list)
    ran: list[list[str]] = field(default_factory=list)  # per call, the compiles that ran
    #: per call, how its fresh process started: "forked" (from the session's server) or "new interpreter"
    started: list[str] = field(default_factory=list)


class ProgramRun(FreshCheck):
    """The program round trip of one case: one fresh process per call."""

    label = "run_program=True"
    does = "runs the program file"
    prefix = f"diverges at stage: {STAGE}\n"
    child = "pytest_torchcompile.snapshot.program.run.child"
    kind = "program"
    doing = "running the program file in a fresh process"
    result_field = "program_report"
    starts_from = "compiled"
    timeout_s = CHILD_TIMEOUT_S
    unpicklable_hint = "; the file itself is written (write_program), and runs with load(model) where the model is at hand"

    def __init__(
        self,
        processes: FreshProcesses,
        program: ProgramState,
        observe: Observe,
        differences: Differences,
        grads: bool | None,
    ) -> None:
        super().__init__(processes)
        self.program, self.observe, self.differences, self.grads = (
            program,
            observe,
            differences,
            grads,
        )
        self._report = ProgramReport(started=self.started)

    def after_call(self, before: Before, after: After) -> None:
        """Write the file as of this call, run it fresh on the model (as before the call) and inputs, compare."""
        path = self.folder / f"program_{len(self._report.load_seconds)}.py"
        try:
            write_program(after.log, self.program.frozen(), self.program.backend, path)
        except ProgramRefused as exc:
            raise FreshCheckFailed(f"{self.label}: {exc}") from None
        self._report.file_bytes = path.stat().st_size
        entries = {
            "model": before.model,
            "grads_before": _grads(before.model),
            "observe": self.observe,
            "grads": self.grads,
        }
        answer = self.fresh(before, [str(path)], entries)
        self._report.load_seconds.append(answer["load_seconds"])
        self._report.call_seconds.append(answer["call_seconds"])
        self._report.ran.append(answer["ran"])
        differences = self.differences(answer["seen"], after.seen)
        if differences:
            backend = self.program.backend
            raise FreshCheckFailed(
                "\n".join(
                    [
                        f"the program file run in a fresh process (torch.compile trapped) differs from the compiled run ({backend}):",
                        f"diverges at stage: {STAGE}",
                        f"ran: {', '.join(answer['ran']) or 'nothing compiled'}",
                        *differences,
                    ]
                )
            )

    def report(self) -> ProgramReport:
        return self._report


def _grads(model: object) -> dict[str, object]:
    """What earlier calls' backwards left in the gradients (a pickled parameter drops them)."""
    if not isinstance(model, torch.nn.Module):
        return {}
    return {name: p.grad for name, p in model.named_parameters() if p.grad is not None}
