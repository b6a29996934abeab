"""The `compile_model` fixture's object: compile, run, capture, compare.

`CompileModel` is the callable a test receives. Each call is one case: the
model is compiled with the marker's settings under the capture handler, run
on the inputs, run in eager on its own copies, and its numerics checked. The
snapshots of all cases are compared by `finish()` when the test function has
returned (the plugin calls it), so a mismatch is an ordinary failure.
Nothing here depends on pytest except the failure type.
"""

from __future__ import annotations

import dataclasses
import functools
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import pytest
import torch

from .._torch import config, errors
from .._torch.tensors import tree_leaves
from .._torch.trace import trace_only_to
from .catalogue import ARTIFACTS, DEFAULT_ARTIFACTS, FRAME_ARTIFACTS
from .attribution import Attribution, attribute, bisect, can_bisect, random_ops
from ..common.capture import CaptureLog, capturing, reset_dynamo
from ..common.cases import CaseFailure, NamedCases, fail_test_on_case_failure
from ..common.compiling import check_backend, compile_call_failure, compiled_run_failure
from ..common.copies import clone_inputs, copy_model
from ..common.counters import Counters, counters
from ..common.diagnose import first_line, user_frame
from .guards import GuardChecker, read_guards
from .normalize import Normalizer
from .numerics import (
    Mismatch,
    Tolerance,
    argument_names,
    compare,
    flatten,
    format_mismatches,
    needs_fp64,
    observe,
    to_fp64,
    tolerate_with_fp64,
)
from .precompile import PrecompileFailure, RoundTrip
from .precompile import check as precompile_check
from .result import CompileResult, FrameResult
from .store import Outcome, SnapshotStore, artifact_filename, safe_segment
from .spec import MARKER, CompileSpec

SEED = 0


def run_seeded(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """Call `fn` with the global RNG seeded, restoring the caller's RNG state after."""
    devices = list(range(torch.cuda.device_count())) if torch.cuda.is_initialized() else []
    with torch.random.fork_rng(devices=devices):
        torch.manual_seed(SEED)
        return fn(*args, **kwargs)


def wants_grads(spec: CompileSpec, model: Any, args: tuple[Any, ...], kwargs: dict[str, Any], output: Any) -> bool:
    """Backward runs when asked, or when anything requires grad and the output can flow it."""
    if spec.grads is not None:
        return spec.grads and bool(differentiable(output))
    tensors = [t for t in tree_leaves((args, kwargs)) if isinstance(t, torch.Tensor)]
    params = list(model.parameters()) if isinstance(model, torch.nn.Module) else []
    return any(t.requires_grad for t in tensors + params) and bool(differentiable(output))


def differentiable(output: Any) -> list[torch.Tensor]:
    return [t for _, t in flatten(output, "") if isinstance(t, torch.Tensor) and t.requires_grad]


def backward(output: Any) -> None:
    """Backpropagate seeded upstream gradients (the same for eager and compiled).

    They are drawn in float32 and cast, so an fp64 reference run receives
    the same values as the run it checks.
    """
    outs = differentiable(output)
    generator = torch.Generator().manual_seed(SEED)
    grads = [torch.randn(o.shape, generator=generator).to(dtype=o.dtype, device=o.device) for o in outs]
    torch.autograd.backward(outs, grads)


Inputs = tuple[tuple[Any, ...], dict[str, Any]]


@dataclass
class CompileCase:
    """One model compiled once, called one or more times, captured throughout.

    `pristine` (the model before the first call) and `calls` (a copy of every
    call's inputs) let a failing case be replayed from its start with another
    backend or in float64, which only happens after a mismatch.
    """

    spec: CompileSpec
    name: str
    model: Any
    normalizer: Normalizer
    log: CaptureLog = field(default_factory=CaptureLog)
    compiled: Any = None
    eager_model: Any = None
    pristine: Any = None
    calls: list[Inputs] = field(default_factory=list)
    compile_seconds: float = 0.0
    result: CompileResult | None = None
    guard_checker: GuardChecker | None = None
    round_trip: RoundTrip | None = None
    references: dict[tuple[bool, int], dict[str, Any]] = field(default_factory=dict, repr=False)

    @property
    def tolerance(self) -> Tolerance:
        spec = self.spec
        return Tolerance(spec.rtol, spec.atol, spec.fp64_reference, spec.fp64_multiplier, spec.check_stride)

    def start(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> CompileResult:
        reset_dynamo()
        self.pristine = copy_model(self.model)
        self.eager_model = copy_model(self.model)
        try:
            self.compiled = torch.compile(self.model, **self.spec.compile_kwargs())
        except Exception as exc:  # torch.compile checks its arguments before compiling anything
            raise CaseFailure(compile_call_failure(exc, MARKER)) from exc
        return self.call(*args, **kwargs)

    def call(self, *args: Any, **kwargs: Any) -> CompileResult:
        """Run eager then compiled on independent copies, compare, re-derive artifacts."""
        self.calls.append(clone_inputs((args, kwargs)))
        eager_inputs = clone_inputs((args, kwargs))
        before = (copy_model(self.eager_model), clone_inputs((args, kwargs))) if self.spec.precompile else None
        eager_out, eager_seen = self._run_eager(eager_inputs)
        started = time.perf_counter()
        out, seen = self._run_compiled((args, kwargs))
        self.compile_seconds += time.perf_counter() - started
        self.result = self._result(out, eager_out)
        if self.spec.numerics:
            mismatches = self._mismatches(seen, eager_seen)
            if mismatches:
                raise CaseFailure(self._numerics_failure(mismatches))
        if before is not None:
            self._precompiled(*before, (eager_out, out))
        return self.result

    def _precompiled(self, model: Any, inputs: Any, reference: tuple[Any, Any]) -> None:
        """The precompile round trip on this call's inputs and model state (precompile.py)."""
        breaks = tuple(self.normalizer(b).strip() for b in counters(self.log).break_reasons)
        try:
            self.round_trip = precompile_check(self.round_trip, self.spec, model, inputs, reference, breaks, SEED)
        except PrecompileFailure as exc:
            raise CaseFailure(self.normalizer(str(exc))) from exc
        if self.result is not None:
            self.result.precompile = self.round_trip.report

    def close(self) -> None:
        if self.round_trip is not None:
            self.round_trip.close()

    def _observe(self, fn: Any, module: Any, inputs: Inputs) -> tuple[Any, dict[str, Any]]:
        """Call seeded, backpropagate when the case has gradients, observe everything."""
        args, kwargs = inputs
        out = run_seeded(fn, args, kwargs)
        grads = wants_grads(self.spec, module, args, kwargs, out)
        if grads:
            backward(out)
        return out, observe(out, module, argument_names(module, args, kwargs), grads)

    def _run_eager(self, inputs: Inputs) -> tuple[Any, dict[str, Any]]:
        try:
            return self._observe(self.eager_model, self.eager_model, inputs)
        except Exception as exc:
            raise CaseFailure(f"eager run failed (the model itself raised, before any compile):\n{user_frame(exc)}{first_line(exc)}") from exc

    def _run_compiled(self, inputs: Inputs) -> tuple[Any, dict[str, Any]]:
        try:
            with capturing(self.log), config.patched(config.FALLBACK_RANDOM if self.spec.fallback_random else None):
                observed = self._observe(self.compiled, self.model, inputs)
            read_guards(self.log)
            return observed
        except Exception as exc:
            raise CaseFailure(self._compile_failure(exc)) from exc

    def _compile_failure(self, exc: Exception) -> str:
        if self.spec.fullgraph and errors.is_graph_break(exc):
            reason = self.normalizer(str(exc)).strip()
            return f"fullgraph=True but Dynamo had to break the graph:\n{reason}"
        return compiled_run_failure(exc, self.spec.backend_name, self.normalizer)

    # --- numerics --------------------------------------------------------------

    def _mismatches(self, seen: dict[str, Any], eager_seen: dict[str, Any]) -> list[Mismatch]:
        """Mismatches beyond tolerance, less those an fp64 reference excuses."""
        tolerance = self.tolerance
        mismatches = compare(seen, eager_seen, tolerance)
        if not needs_fp64(mismatches, tolerance):
            return mismatches
        try:
            reference = self._reference(fp64=True)
        except Exception as exc:  # e.g. an op without a float64 kernel: keep the plain verdict, say why
            note = f"; no fp64 reference ({type(exc).__name__}: {first_line(exc)})"
            return [dataclasses.replace(m, detail=m.detail + note) if m.tensors is not None else m for m in mismatches]
        return tolerate_with_fp64(mismatches, reference, tolerance)

    def _numerics_failure(self, mismatches: list[Mismatch]) -> str:
        if not any(m.comparable for m in mismatches):  # nothing diverged: no stage to blame
            return "\n".join(
                [f"numerics: cannot compare compiled's results with eager's (set {MARKER}(numerics=False) to skip the check):"]
                + format_mismatches(mismatches)
            )
        lines = [f"compiled ({self.spec.backend_name}) differs from eager:"]
        random = [] if self.spec.fallback_random else random_ops(self._graph_texts())
        if random and self._passes_with_fallback_random():
            lines.append(
                f"the compiled graph draws random numbers ({', '.join(random)}) from another random stream than "
                "eager, so this comparison is meaningless (with fallback_random=True it passes): set "
                "compile_snapshot(fallback_random=True) to make compiled code call eager's random ops, or use model.eval()"
            )
        else:
            lines.extend(self._attribution(fallback_random=bool(random)).lines())
            if random:
                lines.append(f"(random ops {', '.join(random)}: stages re-run with fallback_random=True; it does not explain the divergence)")
        return "\n".join(lines + format_mismatches(mismatches))

    def _passes_with_fallback_random(self) -> bool:
        try:
            return self._replay(self.spec.compile_kwargs(), fallback_random=True) is None
        except Exception:  # the replay could not run: it explains nothing
            return False

    def _graph_texts(self) -> list[str]:
        """AOT graphs where there are any (eval-mode dropout is gone there), else Dynamo's."""
        aot = [t for name in ("aot_forward", "aot_inference", "aot_backward") for t in self.log.payloads(name)]
        return aot or self.log.payloads("dynamo_graph")

    def _attribution(self, fallback_random: bool) -> Attribution:
        backend, is_name = self.spec.backend_name, isinstance(self.spec.backend, str)

        def stage(stage_backend: str) -> str | None:
            kwargs = {"backend": stage_backend, "fullgraph": self.spec.fullgraph, "dynamic": self.spec.dynamic}
            return self._replay(kwargs, fallback_random, self._requested_config(stage_backend))

        found = attribute(backend, is_name, stage)
        if self.spec.bisect and can_bisect(found, backend, is_name):
            found = dataclasses.replace(found, bisected=bisect(stage))
        return found

    def _replay(self, compile_kwargs: dict[str, Any], fallback_random: bool, inductor: dict[str, Any] | None = None) -> str | None:
        """Re-run the case from its start with other compile settings; describe the first mismatch, if any."""
        reference = self._reference(fp64=False)
        reset_dynamo()
        module = copy_model(self.pristine)
        compiled = torch.compile(module, **compile_kwargs)
        random = config.FALLBACK_RANDOM if fallback_random or self.spec.fallback_random else None
        with trace_only_to(None), config.patched(config.HOST_PINNED_CONFIG, inductor, random):
            for inputs in self.calls:
                _, seen = self._observe(compiled, module, clone_inputs(inputs))
        mismatches = [m for m in self._mismatches(seen, reference) if m.comparable]
        return str(mismatches[0]) if mismatches else None

    def _reference(self, fp64: bool) -> dict[str, Any]:
        """Eager's observation of the last call, replayed from the case's start (in float64 if asked).

        It depends only on the calls so far, so every stage replay and every
        run of the bisector shares one.
        """
        key = (fp64, len(self.calls))
        if key not in self.references:
            self.references[key] = self._replay_eager(to_fp64 if fp64 else lambda value: value)
        return self.references[key]

    def _replay_eager(self, convert: Callable[[Any], Any]) -> dict[str, Any]:
        """Eager from the case's start (converted, e.g. to float64); the last call's observation."""
        module = convert(copy_model(self.pristine))
        seen: dict[str, Any] = {}
        for inputs in self.calls:
            _, seen = self._observe(module, module, convert(clone_inputs(inputs)))
        return seen

    def _requested_config(self, backend: str) -> dict[str, Any]:
        """The requested mode and options as Inductor config, for the bisector's Inductor replays."""
        if backend != self.spec.backend_name or not isinstance(self.spec.backend, str):
            return {}
        return {**config.mode_options(self.spec.mode, self.spec.dynamic), **dict(self.spec.options or {})}

    # --- results and artifacts ---------------------------------------------------

    def _result(self, out: Any, eager_out: Any) -> CompileResult:
        counted = counters(self.log)
        return CompileResult(
            output=out,
            eager_output=eager_out,
            graph_count=counted.graph_count,
            graph_break_count=counted.graph_break_count,
            recompile_count=counted.recompile_count,
            kernel_count=counted.kernel_count,
            artifacts=self.artifact_texts(),
            compile_seconds=self.compile_seconds,
            _call=lambda *args, **kwargs: fail_test_on_case_failure(self.name, lambda: self.call(*args, **kwargs)),
            _frames=functools.partial(self._frames, counted),
            _check_guards=self.check_guards,
        )

    def check_guards(self, *args: Any, **kwargs: Any) -> bool:
        """The first frame compile's guards, as emitted in the program, on new inputs."""
        if self.guard_checker is None:
            self.guard_checker = GuardChecker(self.log, self.model)
        return self.guard_checker(*args, **kwargs)

    def artifact_texts(self) -> dict[str, str]:
        """Normalized artifacts as snapshotted: the requested ones, or all produced."""
        names = self.spec.artifacts
        wanted = [ARTIFACTS[n] for n in names] if names is not None else [a for a in DEFAULT_ARTIFACTS if a.produced(self.log)]
        return {a.name: a.text(self.log, self.spec.backend_name, self.normalizer) for a in wanted}

    def _frames(self, counted: Counters) -> tuple[FrameResult, ...]:
        frames = []
        for fc in counted.frames:
            log = _only(self.log, fc.key)
            # the common rules only: a frame's text as Dynamo printed it, not the stored (compact) form
            texts = {a.name: self.normalizer(a.build(log, self.spec.backend_name)) for a in FRAME_ARTIFACTS if a.produced(log)}
            frames.append(FrameResult(fc.key.frame_id, fc.key.compile_id, self.normalizer(fc.name), texts))
        return tuple(frames)


def _only(log: CaptureLog, key: Any) -> CaptureLog:
    return CaptureLog([r for r in log.records if r.key == key], [b for b in log.bytecode if b.key == key])


@dataclass
class CompileModel(NamedCases[CompileResult]):
    """The object behind the `compile_model` fixture: one per test."""

    spec: CompileSpec | None
    spec_error: str | None
    normalizer: Normalizer
    cases: list[CompileCase] = field(default_factory=list)
    fixture_name: ClassVar[str] = "compile_model"

    def _run(self, name: str, model: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> CompileResult:
        if self.spec is None:
            pytest.fail(f"usage error: {self.spec_error}", pytrace=False)
        check_backend(self.spec, MARKER)
        case = CompileCase(self.spec, name, model, self.normalizer)
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

    def check_snapshots(self, store: SnapshotStore, test_dir: Path) -> list[Outcome]:
        """Compare every case's artifacts with the stored files (or write them)."""
        outcomes = []
        finished = [c for c in self.cases if c.result is not None]
        for case in finished:
            case_dir = test_dir if len(self.cases) == 1 else test_dir / safe_segment(case.name)
            for artifact, text in case.result.artifacts.items():  # as of the case's last call
                outcomes.append(store.check(case_dir / artifact_filename(artifact), text))
        return outcomes

