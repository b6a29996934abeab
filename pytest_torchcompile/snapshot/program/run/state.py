"""The program's part of one case: its facts, read after each call.

`CompileCase` holds one `ProgramState`. Right after each compiled call,
`read` takes what the file needs from the live objects into the case's
`ProgramFacts` (a fact that cannot be read is kept as the reason the file
is refused, never a failure of the call); `frozen` hands out the facts as
of that call, for the artifacts, `CompileResult.write_program` and, with
`run_program=True`, the file `check.ProgramRun` runs in a fresh process.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from ....common.capture_log import CaptureLog
from ...fresh_process.check import Inputs
from ..facts.data import CompileSettings, ProgramFacts, SubmoduleLayout
from ..facts.module_tree import module_layout
from ..facts.reading import collect


@dataclass
class ProgramState:
    """The program of one case: the facts read so far, for the backend it was compiled with."""

    backend: str
    facts: ProgramFacts = field(default_factory=ProgramFacts)
    #: the model's module tree as it was before its first compiled call (`before_first_call`)
    layout: tuple[SubmoduleLayout, ...] | None = None

    def before_first_call(self, model: object) -> None:
        """Read the module tree before the first call: its guards hold for the attributes and buffers
        as they are now, and the call may change them (a cache and its length)."""
        if self.facts.case is None and self.layout is None:
            try:
                self.layout = module_layout(model) if isinstance(model, torch.nn.Module) else ()
            except Exception as exc:  # the file is refused, naming it; the call goes on
                self.facts.error = self.facts.error or f"{type(exc).__name__}: {exc}"

    def read(
        self, log: CaptureLog, model: object, inputs: Inputs, settings: CompileSettings
    ) -> None:
        """What the file needs from live objects, read while they exist (never fails the call)."""
        try:
            collect(self.facts, log, model, *inputs, settings, self.layout)
        except Exception as exc:  # a fact that cannot be read makes write_program refuse, naming it
            if self.facts.error is None:
                self.facts.error = f"{type(exc).__name__}: {exc}"

    def frozen(self) -> ProgramFacts:
        """The facts as of now (later calls add to the case's, not to these)."""
        return self.facts.frozen()
