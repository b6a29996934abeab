"""The `compile_benchmark` fixture's object: one per test, each call one case.

Each call measures one case (`case.py`; with `compile_time=True` also its
cold and warm compiles in fresh processes, `compile_time/`) and, under
`--torchcompile-perf-gate`, judges it against its baseline, measuring again
before a FAIL or an INCONCLUSIVE stands (two more passes, pooled; three more
cold/warm pairs for compile CPU time). Nothing here depends on pytest: a failing
case raises `FixtureFailure`, which the plugin turns into the test's failure.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from ..common.capture import reset_dynamo
from ..common.compiling import check_backend
from ..common.named_cases import FixtureFailure, NamedCases, fail_test_on_case_failure
from ..common.terminal import Progress
from .case import BenchmarkCase, pinned_threads
from .compile_time.runner import FreshCompiles
from .facts.block import CompileRuns
from .gate import Baseline, Gate
from .record import COMPILE_TIMES
from .result import BenchmarkResult
from .spec import BenchmarkSpec
from .timing import TimingSettings

#: passes a re-measurement adds (its rounds are pooled with the first pass's).
REMEASURE_PASSES = 2
#: cold/warm pairs a re-measurement of compile CPU time adds (pooled with the first ones)
REMEASURE_PAIRS = 3


@dataclass
class CompileBenchmark(NamedCases[BenchmarkResult]):
    """The object behind the `compile_benchmark` fixture: one per test."""

    nodeid: str
    spec: BenchmarkSpec | None
    spec_error: str | None
    timing: TimingSettings
    threads: int
    gate: Gate | None = None
    baseline: Callable[[str], Baseline | None] | None = None
    passes: int = 1
    progress: Progress = field(default_factory=Progress)
    compiles: FreshCompiles | None = None
    compile_pairs: int = 5
    cases: list[BenchmarkCase] = field(default_factory=list)
    fixture_name: ClassVar[str] = "compile_benchmark"

    def key(self, case: BenchmarkCase) -> str:
        """The case's name in baselines and reports: `<node id>::<case>`."""
        return f"{self.nodeid}::{case.name}"

    def _run(
        self, name: str, model: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> BenchmarkResult:
        if self.spec is None:
            raise FixtureFailure(f"usage error: {self.spec_error}")
        check_backend(self.spec)
        case = BenchmarkCase(name, self.spec, self.timing, self.threads)
        self.cases.append(case)
        self._take_hints(case)

        progress = self.progress.named(f"{self.progress.label} {name}".strip())
        passes = f"{self.passes} pass{'es' if self.passes > 1 else ''}"
        doing = f"compiling with {self.spec.backend_name}, then timing eager against compiled ({passes})"

        def measure() -> BenchmarkResult:
            with pinned_threads(self.threads):
                with progress.stage(doing):
                    case.start(model, args, kwargs, self.passes)
            if self.spec is not None and self.spec.compile_time:
                case.compile_runs = CompileRuns()
                self._compile(case, self.compile_pairs)
            with pinned_threads(self.threads):
                self._judge(case, progress)
            case.final = case.result()
            return case.final

        return fail_test_on_case_failure(name, measure)

    def _take_hints(self, case: BenchmarkCase) -> None:
        """From the baseline: its calls per block, so both measure the same
        thing, and its noise between passes, the least uncertainty of ours."""
        found = self.baseline(self.key(case)) if self.baseline else None
        settings = found.record.settings if found else {}
        iterations, noise = settings.get("iterations"), settings.get("noise")
        case.iterations_hint = iterations if isinstance(iterations, int) else None
        if isinstance(noise, dict):
            case.noise_hint = {k: float(v) for k, v in noise.items() if isinstance(v, (int, float))}

    def _compile(self, case: BenchmarkCase, pairs: int) -> None:
        """Add `pairs` cold/warm compiles of `case` in fresh processes (the cases before it
        are answered there with their results here, so the test reaches it as it did)."""
        assert self.compiles is not None and case.compile_runs is not None
        index = self.cases.index(case)
        earlier = [c.final for c in self.cases[:index]]
        self.compiles.measure(index, case.name, earlier, pairs, case.compile_runs)

    def _judge(self, case: BenchmarkCase, progress: Progress) -> None:
        """Judge against the baseline; a FAIL or INCONCLUSIVE is measured again first."""
        if self.gate is None:
            return
        case.verdict = self.gate.judge(self.key(case), case.record())
        again = case.verdict.to_remeasure
        if not again:
            return
        if again - set(COMPILE_TIMES):
            with progress.stage(
                f"re-measuring ({REMEASURE_PASSES} more passes) before the verdict"
            ):
                case.measure(REMEASURE_PASSES)
        if again & set(COMPILE_TIMES) and case.compile_runs is not None:
            self._compile(case, REMEASURE_PAIRS)
        case.verdict = self.gate.judge(self.key(case), case.record(), remeasured=True)

    def threshold(self, default: float) -> float:
        """The threshold this test's cases are judged by: the marker's, else `default` (the run's)."""
        given = self.spec.threshold if self.spec is not None else None
        return default if given is None else given

    def release(self) -> None:
        """Drop Dynamo's caches of this test's code when the test ends (see CompileModel.release)."""
        if self.cases:
            reset_dynamo()

    def finished(self) -> list[tuple[str, BenchmarkCase]]:
        """(key, case) of every case that was measured to the end."""
        return [(self.key(c), c) for c in self.cases if c.final is not None]
