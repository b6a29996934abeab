"""One case of `compile_model`: a model compiled once, called one or more times, captured throughout.

Each call runs eager on its own copies, then the compiled model under the
capture (`common/compiling.py`, shared with the benchmark case), checks
numerics, then the checks in a fresh process the marker asks for
(`precompile=True`, `run_program=True`: each a `FreshCheck`, prepared before
the call and run after it). What a failure needs to explain itself is in
`replay.py`; the artifacts and frames are read lazily (`CaseArtifacts`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .._torch import config
from ..common.capture import reset_dynamo
from ..common.capture_log import CaptureLog
from ..common.compiling import MODEL_ERRORS, compile_with, compiling, eager_failed, unusable_output
from ..common.copies import clone_inputs, copy_model
from ..common.counters import counters
from ..common.named_cases import CaseFailure, fail_test_on_case_failure
from ..common.terminal import Progress
from .artifacts.case_artifacts import CaseArtifacts, frame_results
from .artifacts.catalogue import CaseCapture
from .artifacts.normalize import Normalizer
from .emit.guards import GuardChecker, read_guards
from .files.placeholders import case_device
from .fresh_process.check import After, FreshCheck, FreshCheckFailed
from .fresh_process.servers import FreshProcesses
from .numerics.calls import Inputs, observed_call
from .numerics.check import bitwise_differences
from .numerics.observe import Observed
from .numerics.replay import Replay
from .precompile.round_trip import PrecompileCheck, PrecompileReport
from .program.facts.reading import compile_settings
from .program.layout.writer import write_program
from .program.run.check import ProgramRun
from .program.run.state import ProgramState
from .result import CompileResult
from .spec import CompileSpec


@dataclass
class CompileCase:
    """One model compiled once, called one or more times, captured throughout.

    `calls` holds a copy of every call's inputs: with the model as it was
    before the first call, a failing case replays itself from its start
    (`replay`), which only happens after a mismatch.
    """

    spec: CompileSpec
    name: str
    model: Any
    normalizer: Normalizer
    log: CaptureLog = field(default_factory=CaptureLog)
    calls: list[Inputs] = field(default_factory=list)
    compiled: Callable[..., object] | None = None
    eager_model: Any = None
    replay: Replay | None = None
    compile_seconds: float = 0.0
    result: CompileResult | None = None
    guard_checker: GuardChecker | None = None
    progress: Progress = field(default_factory=Progress)
    #: the session's fresh processes (the program's runs, the precompile round trip)
    processes: FreshProcesses = field(default_factory=FreshProcesses)
    program: ProgramState = field(init=False)
    #: the checks in a fresh process the marker asks for, in the order they run after each call
    checks: list[FreshCheck] = field(init=False)

    def __post_init__(self) -> None:
        self.program = ProgramState(self.spec.backend_name)
        self.checks = fresh_checks(self.spec, self.program, self.normalizer, self.processes)

    def start(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> CompileResult:
        """Compile a copy of the user's model: their module keeps its parameters, buffers and
        `.grad` as they were, and a model used twice judges the same both times."""
        if self.checks:
            self.processes.prestart()  # its imports overlap this case's compile
        reset_dynamo()
        self.model = copy_model(self.model)
        self.replay = Replay(self.spec, copy_model(self.model), self.calls, self.log)
        self.eager_model = copy_model(self.model)
        self.compiled = compile_with(self.model, self.spec)
        return self.call(*args, **kwargs)

    def call(self, *args: Any, **kwargs: Any) -> CompileResult:
        """Run eager then compiled on independent copies and compare; artifacts are built when read."""
        assert self.replay is not None, "start() first"
        self.calls.append(clone_inputs((args, kwargs)))
        eager_inputs = clone_inputs((args, kwargs))
        before = [c.prepare(self.eager_model, self.model, (args, kwargs)) for c in self.checks]
        eager_out, eager_seen = self._run_eager(eager_inputs)
        first = len(self.calls) == 1
        doing = (
            f"compiling with {self.spec.backend_name}" if first else "calling the compiled model"
        )
        self.program.before_first_call(self.model)
        with self.progress.stage(doing):
            out, seen = self._run_compiled(clone_inputs((args, kwargs)))
        self.result = self._result(out, eager_out)
        if self.spec.numerics:
            mismatches = self.replay.mismatches(seen, eager_seen)
            if mismatches:
                with self.progress.stage("numerics differ: replaying the pipeline stage by stage"):
                    failure = self.replay.numerics_failure(mismatches)
                raise CaseFailure(failure)
        after = After(self.log.frozen(), eager_out, out, seen)
        for check, prepared in zip(self.checks, before):
            with self.progress.stage(check.doing):
                try:
                    check.after_call(prepared, after)
                except FreshCheckFailed as exc:
                    raise CaseFailure(self.normalizer(str(exc))) from exc
            setattr(self.result, check.result_field, check.report())
        return self.result

    def _run_eager(self, inputs: Inputs) -> tuple[object, Observed]:
        try:
            observed = observed_call(self.eager_model, self.eager_model, inputs, self.spec.grads)
        except MODEL_ERRORS as exc:
            raise eager_failed(exc) from exc
        unusable = unusable_output(observed[0])
        if unusable is not None:
            raise unusable
        return observed

    def _run_compiled(self, inputs: Inputs) -> tuple[object, Observed]:
        random = config.FALLBACK_RANDOM if self.spec.fallback_random else None
        with compiling(self.log, self.spec, random, normalize=self.normalizer) as spent:
            observed = observed_call(self.compiled, self.model, inputs, self.spec.grads)
            read_guards(self.log)
            settings = compile_settings(
                self.spec.fallback_random, self.spec.mode, self.spec.options
            )
            self.program.read(self.log, self.model, inputs, settings)
        self.compile_seconds += spent.seconds
        return observed

    def precompile_report(self) -> PrecompileReport | None:
        """What the precompile round trip measured so far (None: not asked for, or nothing saved)."""
        trip = next((c for c in self.checks if isinstance(c, PrecompileCheck)), None)
        return trip.report() if trip is not None else None

    def close(self) -> None:
        for check in self.checks:
            check.close()

    def _result(self, out: object, eager_out: object) -> CompileResult:
        log, backend = self.log.frozen(), self.spec.backend_name
        counted = counters(log)
        capture = CaseCapture(log, self.program.frozen(), counted)
        return CompileResult(
            output=out,
            eager_output=eager_out,
            graph_count=counted.graph_count,
            graph_break_count=counted.graph_break_count,
            recompile_count=counted.recompile_count,
            kernel_count=counted.kernel_count,
            artifacts=CaseArtifacts(capture, backend, self.spec.artifacts, self.normalizer),
            compile_seconds=self.compile_seconds,
            _call=lambda *args, **kwargs: fail_test_on_case_failure(
                self.name, lambda: self.call(*args, **kwargs)
            ),
            _frames=functools.partial(frame_results, log, counted, backend, self.normalizer),
            _check_guards=self.check_guards,
            _write_program=functools.partial(write_program, log, capture.program, backend),
        )

    def device_key(self) -> str:
        """The `{device}` of its snapshot folder: where its model and first call's inputs are."""
        return case_device(self.model, self.calls[:1])

    def check_guards(self, *args: Any, **kwargs: Any) -> bool:
        """The first frame compile's guards, as emitted in the program, on new inputs."""
        if self.guard_checker is None:
            self.guard_checker = GuardChecker(self.log, self.model)
        return self.guard_checker(*args, **kwargs)


def fresh_checks(
    spec: CompileSpec, program: ProgramState, normalizer: Normalizer, processes: FreshProcesses
) -> list[FreshCheck]:
    """The checks in a fresh process `spec` asks for: the precompile round trip, the program's run
    (observed and compared as the compiled run is, by the numerics)."""
    checks: list[FreshCheck] = []
    if spec.precompile:
        checks.append(PrecompileCheck(processes, spec, normalizer))
    if spec.run_program:
        checks.append(
            ProgramRun(processes, program, observed_call, bitwise_differences, spec.grads)
        )
    return checks
