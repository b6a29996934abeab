"""The `compile_distributed` fixture's object: each call one case, run on several ranks.

`compile_distributed(make_model, *inputs, wrapper="ddp", world_size=2,
**wrapper_options)` under `compile_snapshot` (whose compile keywords it
keeps). Its cases join the test's `compile_model` cases (one list, one
numbering), so the session stores and compares rank 0's artifacts as any
case's once the test has returned.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol

from ...common.compiling import check_backend
from ...common.named_cases import FixtureFailure, NamedCase, NamedCases, fail_test_on_case_failure
from ...common.terminal import Progress
from ..spec import CompileSpec
from .case import DistributedCase
from .request import check_call
from .result import DistributedResult


class CaseList(Protocol):
    """The test's cases, shared with `compile_model` (one numbering, one snapshot check)."""

    spec: CompileSpec | None
    spec_error: str | None
    cases: list[Any]


@dataclass
class CompileDistributed(NamedCases[DistributedResult]):
    """The object behind the `compile_distributed` fixture: one per test."""

    model: CaseList
    rootdir: str
    progress: Progress = field(default_factory=Progress)
    full_diff: bool = False
    fixture_name: ClassVar[str] = "compile_distributed"

    @property
    def cases(self) -> Sequence[NamedCase]:  # type: ignore[override]
        return self.model.cases

    def _checked_run(
        self, name: str, model: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> DistributedResult:
        """A class is a factory here, so `compile_model`'s check of the model does not apply."""
        return self._run(name, model, args, kwargs)

    def _run(
        self, name: str, model: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> DistributedResult:
        spec = self.model.spec
        if spec is None:
            raise FixtureFailure(f"usage error: {self.model.spec_error}")

        def run() -> DistributedResult:
            check_backend(spec)
            call = check_call(model, args, dict(kwargs))
            progress = self.progress.named(f"{self.progress.label} {name}".strip())
            case = DistributedCase(spec, name, call, self.rootdir, progress, self.full_diff)
            self.model.cases.append(case)
            return case.start()

        return fail_test_on_case_failure(name, run)
