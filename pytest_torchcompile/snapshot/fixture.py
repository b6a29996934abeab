"""The `compile_model` fixture's object: one per test, each call one case.

`CompileModel` is the callable a test receives. Each call is one case
(`case.py`): the model is compiled with the marker's settings under the
capture, run on the inputs, run in eager on its own copies, and its numerics
checked. The snapshots of all cases (`snapshot_texts`) are compared by the
session's `pytest_pyfunc_call` hook (`session.py`) once the test function
has returned, so a mismatch is an ordinary failure. Nothing here depends on pytest: a failing case raises
`FixtureFailure`, which the plugin turns into the test's failure.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from ..common.capture import reset_dynamo
from ..common.compiling import check_backend
from ..common.named_cases import FixtureFailure, NamedCases, fail_test_on_case_failure
from ..common.terminal import Progress
from .artifacts.normalize import Normalizer
from .case import CompileCase
from .distributed.case import DistributedCase
from .fresh_process.servers import FreshProcesses
from .result import CompileResult
from .spec import CompileSpec


@dataclass
class CompileModel(NamedCases[CompileResult]):
    """The object behind the `compile_model` fixture: one per test."""

    spec: CompileSpec | None
    spec_error: str | None
    normalizer: Normalizer
    progress: Progress = field(default_factory=Progress)
    processes: FreshProcesses = field(default_factory=FreshProcesses)
    #: its cases, and those of `compile_distributed` in the same test (one numbering)
    cases: list[CompileCase | DistributedCase] = field(default_factory=list)
    fixture_name: ClassVar[str] = "compile_model"

    def _run(
        self, name: str, model: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> CompileResult:
        if self.spec is None:
            raise FixtureFailure(f"usage error: {self.spec_error}")
        check_backend(self.spec)
        progress = self.progress.named(f"{self.progress.label} {name}".strip())
        case = CompileCase(
            self.spec, name, model, self.normalizer, progress=progress, processes=self.processes
        )
        self.cases.append(case)
        return fail_test_on_case_failure(name, lambda: case.start(args, kwargs))

    def release(self) -> None:
        """Drop Dynamo's caches of this test's code objects when the test ends.

        They would otherwise outlive the test module (pytester unloads it,
        and Dynamo's cache entries on freed code objects crash the process).
        """
        if self.cases:
            reset_dynamo()
        for case in self.cases:
            case.close()

    def finished(self) -> list[CompileCase | DistributedCase]:
        """The cases whose calls all ran (a failing case has no result to snapshot)."""
        return [c for c in self.cases if c.result is not None]

    def snapshot_texts(
        self, finished: Sequence[CompileCase | DistributedCase] | None = None
    ) -> list[tuple[str, Mapping[str, str]]]:
        """(case name, artifact name -> text) of every case that finished (`finished`, when the
        caller holds them already), as of its last call."""
        cases = self.finished() if finished is None else finished
        return [(c.name, c.result.artifacts) for c in cases if c.result is not None]
