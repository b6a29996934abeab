"""`run_program=True`: run the program file in a fresh process and compare it with the compiled run, bitwise.

After each compiled call of a case, `ProgramCheck.run` writes the program
file as of that call (every compile so far, newest first, as Dynamo's cache
held them), hands it, the model as it was before the call and the call's
inputs to a fresh Python process (`program_child.py`) in which torch.compile and
Dynamo's frame conversion raise, and gets back what that process observed:
outputs, gradients after the same seeded backward, buffers and inputs after
the call. Any difference from the compiled run, bit for bit (NaN equals
NaN), fails the case naming the stage `program` and what differed; so does
a file the process could not load or whose guards refused the inputs.
Load and call times go to `ProgramReport` (never into a snapshot).
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from ....common.capture_log import CaptureLog
from ...fresh_process import FreshProcessFailed, Unpicklable, call_fresh_process
from ...numerics.check import Mismatch, Tolerance, compare_leaf, format_mismatches
from ..layout.refusals import ProgramRefused
from ..layout.writer import write_program

CHILD_TIMEOUT_S = 900
STAGE = "program"
BITWISE = Tolerance(rtol=0.0, atol=0.0, fp64=False, check_stride=False)


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
    report: ProgramReport = field(default_factory=ProgramReport)
    workdir: tempfile.TemporaryDirectory[str] = field(
        default_factory=lambda: tempfile.TemporaryDirectory(prefix="torchcompile_program_")
    )

    def run(
        self,
        log: CaptureLog,
        model: Any,
        inputs: tuple[tuple[Any, ...], dict[str, Any]],
        grads: bool | None,
        reference: dict[str, Any],
    ) -> None:
        """Write the file as of this call, run it fresh on `model` (as before the call) and `inputs`, compare."""
        folder = Path(self.workdir.name)
        program = folder / f"program_{len(self.report.load_seconds)}.py"
        try:
            write_program(log, self.backend, program)
        except ProgramRefused as exc:
            raise ProgramMismatch(f"run_program=True: {exc}") from None
        self.report.file_bytes = program.stat().st_size
        answer = self._child(folder, program, model, inputs, grads)
        self.report.load_seconds.append(answer["load_seconds"])
        self.report.call_seconds.append(answer["call_seconds"])
        self.report.ran.append(answer["ran"])
        mismatches = bitwise_mismatches(answer["seen"], reference)
        if mismatches:
            lines = [
                f"the program file run in a fresh process (torch.compile trapped) differs from the compiled run ({self.backend}):"
            ]
            lines.append(f"diverges at stage: {STAGE}")
            lines.append(f"ran: {', '.join(answer['ran']) or 'nothing compiled'}")
            raise ProgramMismatch("\n".join(lines + format_mismatches(mismatches)))

    def _child(
        self, folder: Path, program: Path, model: Any, inputs: Any, grads: bool | None
    ) -> dict[str, Any]:
        args, kwargs = inputs
        payload = {
            "model": model,
            "args": tuple(args),
            "kwargs": dict(kwargs),
            "grads": grads,
        }
        payload.update(grad_enabled=torch.is_grad_enabled(), num_threads=torch.get_num_threads())
        try:
            answer = call_fresh_process(
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


def bitwise_mismatches(program: dict[str, Any], compiled: dict[str, Any]) -> list[Mismatch]:
    """Every result of the program that is not bit for bit the compiled run's (NaN equals NaN)."""
    found = [
        Mismatch(p, "the compiled run has it, the program's run does not")
        for p in compiled
        if p not in program
    ]
    found += [
        Mismatch(p, "the program's run has it, the compiled run does not")
        for p in program
        if p not in compiled
    ]
    for path, value in program.items():
        if path in compiled and not _identical(value, compiled[path]):
            found.append(
                compare_leaf(path, value, compiled[path], BITWISE)
                or Mismatch(path, f"{value!r} here, {compiled[path]!r} compiled")
            )
    return found


def _identical(a: Any, b: Any) -> bool:
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        if a.dtype != b.dtype or a.shape != b.shape or a.device != b.device or a.layout != b.layout:
            return False
        if a.layout != torch.strided:
            a, b = a.to_dense(), b.to_dense()
        same = a == b
        if a.is_floating_point() or a.is_complex():
            same |= a.isnan() & b.isnan()
        return bool(same.all())
    try:
        return bool(a == b) or (a != a and b != b)
    except Exception:  # values without a usable ==: their reprs decide
        return repr(a) == repr(b)
