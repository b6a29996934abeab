"""The `compile_model` fixture's object: compile, run, capture, compare.

`CompileModel` is the callable a test receives. Each call is one case: the
model is compiled with the marker's settings under the capture handler, run
on the inputs, run in eager on its own copies, and its numerics checked. The
snapshots of all cases are compared by `finish()` when the test function has
returned (the plugin calls it), so a mismatch is an ordinary failure.
Nothing here depends on pytest except the failure type.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import torch
from torch.utils._pytree import tree_flatten, tree_map_only

from . import artifacts as layout
from . import program
from .capture import CaptureLog, capturing, reset_dynamo
from .diagnose import compile_stage, first_line, innermost, user_frame
from .guards import GuardChecker, read_guards
from .normalize import Normalizer
from .numerics import compare_trees, flatten, format_mismatches
from .precompile import PrecompileFailure, RoundTrip
from .precompile import check as precompile_check
from .result import CompileResult, FrameResult
from .snapshot import Outcome, SnapshotStore, artifact_filename, safe_segment
from .spec import CompileSpec

SEED = 0


class CaseFailure(Exception):
    """A case could not run (eager failed, compile failed, numerics differ)."""


def clone_inputs(value: Any) -> Any:
    """Independent copies of every tensor, keeping requires_grad and strides."""
    return tree_map_only(torch.Tensor, lambda t: t.detach().clone().requires_grad_(t.requires_grad), value)


def copy_model(model: Any) -> Any:
    """A deep copy of a module (its parameters and buffers); functions as they are."""
    return copy.deepcopy(model) if isinstance(model, torch.nn.Module) else model


def run_seeded(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """Call `fn` with the global RNG seeded, restoring the caller's RNG state after."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(SEED)
        return fn(*args, **kwargs)


def wants_grads(spec: CompileSpec, model: Any, args: tuple[Any, ...], kwargs: dict[str, Any], output: Any) -> bool:
    """Backward runs when asked, or when anything requires grad and the output can flow it."""
    if spec.grads is not None:
        return spec.grads
    tensors = [t for t in tree_flatten((args, kwargs))[0] if isinstance(t, torch.Tensor)]
    params = list(model.parameters()) if isinstance(model, torch.nn.Module) else []
    return any(t.requires_grad for t in tensors + params) and bool(differentiable(output))


def differentiable(output: Any) -> list[torch.Tensor]:
    return [t for t in tree_flatten(output)[0] if isinstance(t, torch.Tensor) and t.requires_grad]


def backward(output: Any) -> None:
    """Backpropagate seeded upstream gradients (the same for eager and compiled)."""
    outs = differentiable(output)
    generator = torch.Generator().manual_seed(SEED)
    grads = [torch.randn(o.shape, generator=generator, dtype=o.dtype).to(o.device) for o in outs]
    torch.autograd.backward(outs, grads)


def gradients(model: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
    """Gradients of inputs and parameters, keyed by a readable name."""
    grads: dict[str, Any] = {}
    for path, leaf in flatten((args, kwargs), "input"):
        if isinstance(leaf, torch.Tensor) and leaf.requires_grad:
            grads[path] = leaf.grad
    if isinstance(model, torch.nn.Module):
        grads.update({name: p.grad for name, p in model.named_parameters() if p.requires_grad})
    return grads


@dataclass
class CompileCase:
    """One model compiled once, called one or more times, captured throughout."""

    spec: CompileSpec
    name: str
    model: Any
    normalizer: Normalizer
    log: CaptureLog = field(default_factory=CaptureLog)
    compiled: Any = None
    eager_model: Any = None
    compile_seconds: float = 0.0
    result: CompileResult | None = None
    guard_checker: GuardChecker | None = None
    round_trip: RoundTrip | None = None

    def start(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> CompileResult:
        reset_dynamo()
        self.eager_model = copy_model(self.model)
        self.compiled = torch.compile(self.model, **self.spec.compile_kwargs())
        return self.call(*args, **kwargs)

    def call(self, *args: Any, **kwargs: Any) -> CompileResult:
        """Run eager then compiled on independent copies, compare, re-derive artifacts."""
        eager_args, eager_kwargs = clone_inputs((args, kwargs))
        pristine = (copy_model(self.eager_model), clone_inputs((args, kwargs))) if self.spec.precompile else None
        eager_out = self._run_eager(eager_args, eager_kwargs)
        started = time.perf_counter()
        out = self._run_compiled(args, kwargs)
        self.compile_seconds += time.perf_counter() - started
        self.result = self._result(out, eager_out)
        if self.spec.numerics:
            self._check(out, eager_out, (args, kwargs), (eager_args, eager_kwargs))
        if pristine is not None:
            self._precompiled(*pristine, eager_out)
        return self.result

    def _precompiled(self, model: Any, inputs: Any, eager_out: Any) -> None:
        """The precompile round trip on this call's inputs and model state (precompile.py)."""
        breaks = tuple(self.normalizer(b).strip() for b in layout.counters(self.log).break_reasons)
        try:
            self.round_trip = precompile_check(self.round_trip, self.spec, model, inputs, eager_out, breaks, SEED)
        except PrecompileFailure as exc:
            raise CaseFailure(self.normalizer(str(exc))) from exc
        if self.result is not None:
            self.result.precompile = self.round_trip.report

    def close(self) -> None:
        if self.round_trip is not None:
            self.round_trip.close()

    def _run_eager(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        try:
            out = run_seeded(self.eager_model, args, kwargs)
            if wants_grads(self.spec, self.eager_model, args, kwargs, out):
                backward(out)
            return out
        except Exception as exc:
            raise CaseFailure(f"eager run failed (the model itself raised, before any compile):\n{user_frame(exc)}{first_line(exc)}") from exc

    def _run_compiled(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        try:
            with capturing(self.log):
                out = run_seeded(self.compiled, args, kwargs)
                if wants_grads(self.spec, self.model, args, kwargs, out):
                    backward(out)
            read_guards(self.log)
            return out
        except Exception as exc:
            raise CaseFailure(self._compile_failure(exc)) from exc

    def _compile_failure(self, exc: Exception) -> str:
        if self.spec.fullgraph and type(exc).__name__ in ("Unsupported", "UserError"):
            reason = self.normalizer(str(exc)).strip()
            return f"fullgraph=True but Dynamo had to break the graph:\n{reason}"
        stage = compile_stage(exc, self.spec.backend_name, not isinstance(self.spec.backend, str))
        message = self.normalizer(first_line(innermost(exc)))
        return f"compile failed in stage: {stage} (backend {self.spec.backend_name})\n{message}"

    def _check(self, out: Any, eager_out: Any, inputs: Any, eager_inputs: Any) -> None:
        rtol, atol = self.spec.rtol, self.spec.atol
        mismatches = compare_trees(out, eager_out, "output", rtol, atol)
        if wants_grads(self.spec, self.model, *inputs, out):
            mismatches += compare_trees(
                gradients(self.model, *inputs), gradients(self.eager_model, *eager_inputs), "grad of ", rtol, atol
            )
        if mismatches:
            raise CaseFailure(format_mismatches(self.spec.backend_name, mismatches))

    def _result(self, out: Any, eager_out: Any) -> CompileResult:
        counters = layout.counters(self.log)
        texts = self.artifact_texts()
        return CompileResult(
            output=out,
            eager_output=eager_out,
            graph_count=counters.graph_count,
            graph_break_count=counters.graph_break_count,
            recompile_count=counters.recompile_count,
            kernel_count=counters.kernel_count,
            frames=self._frames(counters),
            artifacts=texts,
            compile_seconds=self.compile_seconds,
            _call=lambda *args, **kwargs: fail_test_on_case_failure(self.name, lambda: self.call(*args, **kwargs)),
            _check_guards=self.check_guards,
        )

    def check_guards(self, *args: Any, **kwargs: Any) -> bool:
        """The first frame compile's guards, as emitted in the program, on new inputs."""
        if self.guard_checker is None:
            self.guard_checker = GuardChecker(self.log, self.model)
        return self.guard_checker(*args, **kwargs)

    def artifact_texts(self) -> dict[str, str]:
        """Normalized artifacts as snapshotted: the requested ones, or all produced."""
        raw = layout.build(self.log, self.spec.backend_name)
        raw["program"] = program.build(self.log, self.spec.backend_name) if self.log.bytecode else ""
        wanted = self.spec.artifacts or tuple(name for name, text in raw.items() if text)
        return {
            name: self.normalizer.artifact(name, raw[name]) if raw[name] else f"# {name} was not produced by backend {self.spec.backend_name}\n"
            for name in wanted
        }

    def _frames(self, counters: layout.Counters) -> tuple[FrameResult, ...]:
        frames = []
        for fc in counters.frames:
            texts = {name: self.normalizer(layout.record_artifact(_only(self.log, fc.key), name)) for name in layout.RECORD_ARTIFACTS}
            frames.append(FrameResult(fc.key.frame_id, fc.key.compile_id, fc.name, {k: v for k, v in texts.items() if v}))
        return tuple(frames)


def _only(log: CaptureLog, key: Any) -> CaptureLog:
    return CaptureLog([r for r in log.records if r.key == key], [b for b in log.bytecode if b.key == key])


@dataclass
class CompileModel:
    """The object behind the `compile_model` fixture: one per test."""

    spec: CompileSpec | None
    spec_error: str | None
    normalizer: Normalizer
    cases: list[CompileCase] = field(default_factory=list)

    def __call__(self, model: Any, *args: Any, **kwargs: Any) -> CompileResult:
        return self._run(f"case_{len(self.cases)}", model, args, kwargs)

    def case(self, name: str) -> Callable[..., CompileResult]:
        """`compile_model.case("small")(model, x)`: a case with a chosen folder name."""
        if any(c.name == name for c in self.cases):
            pytest.fail(f"compile_model.case({name!r}) is used twice in this test; give each case its own name", pytrace=False)
        return lambda model, *args, **kwargs: self._run(name, model, args, kwargs)

    def _run(self, name: str, model: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> CompileResult:
        if self.spec is None:
            pytest.fail(f"usage error: {self.spec_error}", pytrace=False)
        check_backend(self.spec)
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
            for artifact, text in case.artifact_texts().items():
                outcomes.append(store.check(case_dir / artifact_filename(artifact), text))
        return outcomes


def fail_test_on_case_failure(name: str, run: Callable[[], CompileResult]) -> CompileResult:
    """A failing case (first call or `CompileResult.call`) fails the test with its message alone."""
    try:
        return run()
    except CaseFailure as exc:
        failure = f"[{name}] {exc}"
    pytest.fail(failure, pytrace=False)  # outside `except`: no chained traceback in the report


def check_backend(spec: CompileSpec) -> None:
    """A backend name must be registered; say which names are."""
    if not isinstance(spec.backend, str):
        return
    from torch._dynamo.backends.registry import list_backends

    known = sorted(set(list_backends(exclude_tags=())) | {"eager", "aot_eager", "inductor"})
    if spec.backend not in known:
        pytest.fail(f"usage error: compile_snapshot(backend={spec.backend!r}) is not a registered backend; known: {', '.join(known)}", pytrace=False)
