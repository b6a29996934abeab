"""The precompile round trip: aot_compile, save, load in a fresh process, run.

`RoundTrip.prepare` compiles the model once with `aot_compile` (always
fullgraph: a saved artifact holds one graph and cannot fall back to Python)
and saves it to a temporary file. `RoundTrip.run` hands the artifact, the
model and the inputs to a fresh Python process (this module's `main`), which
loads the artifact with `torch.compiler.load_compiled_function`, calls it under
the caller's grad mode and RNG seed and sends the outputs back; the caller
compares them with eager. For a module, `aot_compile` traces `forward` with
`self` as an argument, so the fresh process gets the module itself (pickled:
its class must be importable there) and passes it first.

Times (compile, save, load) and the artifact's size go to `PrecompileReport`
and the end-of-run table, never into a snapshot: they vary between runs.
"""

from __future__ import annotations

import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from ..._torch import aot, errors
from ..._torch.formats import rejected_guards
from ..._torch.tensors import map_tensors
from ..._torch.trace import trace_only_to
from ...common.diagnose import first_line, innermost
from ..fresh_process.call import (
    FreshProcesses,
    FreshProcessFailed,
    Unpicklable,
    call_fresh_process,
)
from ..spec import CompileSpec

CHILD_TIMEOUT_S = 600


class PrecompileFailure(Exception):
    """The round trip could not run, or the loaded artifact refused the inputs."""


@dataclass
class PrecompileReport:
    """What the round trip measured: artifact size and seconds (not snapshotted)."""

    artifact_bytes: int
    compile_seconds: float
    save_seconds: float
    load_seconds: list[float] = field(default_factory=list)  # one per call, in the fresh process


def fullgraph_required(break_reasons: tuple[str, ...]) -> PrecompileFailure:
    listed = "\n".join(f"  - {reason}" for reason in break_reasons)
    return PrecompileFailure(
        "precompile=True requires fullgraph: aot_compile saves one graph, but Dynamo had to break this "
        f"model's graph {len(break_reasons)} time(s):\n{listed}"
    )


@dataclass
class RoundTrip:
    """One saved artifact of a case, loaded and called in a fresh process per call."""

    artifact: Path
    method: bool  # a module's forward: the module is passed as `self`
    report: PrecompileReport
    workdir: tempfile.TemporaryDirectory[str]
    processes: FreshProcesses

    @classmethod
    def prepare(
        cls,
        spec: CompileSpec,
        model: Any,
        inputs: tuple[tuple[Any, ...], dict[str, Any]],
        processes: FreshProcesses,
    ) -> RoundTrip:
        """aot_compile the model (fullgraph) on these inputs and save it."""
        args, kwargs = inputs
        method = isinstance(model, torch.nn.Module)
        target = model.forward if method else model
        started = time.perf_counter()
        try:
            with trace_only_to(None):
                compiled = aot.aot_compile(target, spec.compile_kwargs(), args, kwargs)
        except aot.Unsupported as exc:
            raise PrecompileFailure(f"precompile=True: {exc}") from exc
        except Exception as exc:
            if errors.is_graph_break(exc):
                raise fullgraph_required((first_line(exc),)) from exc
            raise PrecompileFailure(
                f"precompile: aot_compile failed: {first_line(innermost(exc))}"
            ) from exc
        compile_seconds = time.perf_counter() - started
        workdir = tempfile.TemporaryDirectory(prefix="torchcompile_precompile_")
        artifact = Path(workdir.name) / "compiled.pt2"
        started = time.perf_counter()
        try:
            aot.save(compiled, artifact)
        except Exception as exc:
            workdir.cleanup()
            raise PrecompileFailure(
                f"precompile: save_compiled_function failed: {first_line(innermost(exc))}"
            ) from exc
        report = PrecompileReport(
            artifact.stat().st_size, compile_seconds, time.perf_counter() - started
        )
        return cls(artifact, method, report, workdir, processes)

    def run(self, model: Any, args: tuple[Any, ...], kwargs: dict[str, Any], seed: int) -> Any:
        """Load the artifact in a fresh process, call it on the inputs, return its outputs."""
        folder = Path(self.workdir.name)
        payload = {
            "model": model if self.method else None,
            "args": tuple(args),
            "kwargs": dict(kwargs),
        }
        payload.update(grad_enabled=torch.is_grad_enabled(), seed=seed)
        try:
            answer = call_fresh_process(
                self.processes,
                "pytest_torchcompile.snapshot.numerics.precompile",
                [str(self.artifact)],
                payload,
                folder,
                CHILD_TIMEOUT_S,
            )
        except Unpicklable as exc:
            raise PrecompileFailure(
                "precompile: the model and inputs must be picklable to reach the fresh process that loads the "
                f"artifact, and the model's class importable there (defined at module level): {exc}"
            ) from exc
        except FreshProcessFailed as exc:
            raise PrecompileFailure(
                f"precompile: the fresh process that loads the artifact failed {exc}"
            ) from None
        if answer["error"]:
            raise PrecompileFailure(answer["error"])
        self.report.load_seconds.append(answer["load_seconds"])
        return answer["output"]

    def close(self) -> None:
        self.workdir.cleanup()


def check(
    trip: RoundTrip | None,
    spec: CompileSpec,
    model: Any,
    inputs: tuple[tuple[Any, ...], dict[str, Any]],
    reference: tuple[Any, Any],
    break_reasons: tuple[str, ...],
    seed: int,
    processes: FreshProcesses,
) -> RoundTrip:
    """One call of the round trip (preparing the artifact on the first); raises on any failure.

    `reference` is (eager output, live compiled output). The loaded artifact
    passes where it is within tolerance of eager, or of the live compile,
    which has passed the full numerics check (fp64 reference included).
    """
    from .check import Tolerance, compare_trees, format_mismatches

    args, kwargs = inputs
    if trip is None:
        cannot = aot.unsupported()
        if cannot is not None:
            raise PrecompileFailure(f"precompile=True: {cannot}")
        if break_reasons:
            raise fullgraph_required(break_reasons)
        trip = RoundTrip.prepare(spec, model, inputs, processes)
    out = trip.run(model, args, kwargs, seed)
    if not spec.numerics:
        return trip
    eager_out, compiled_out = reference
    tolerance = Tolerance(spec.rtol, spec.atol, fp64=False, check_stride=spec.check_stride)
    mismatches = compare_trees(out, eager_out, "output", tolerance)
    if mismatches and compare_trees(out, compiled_out, "output", tolerance):
        header = f"compiled ({spec.backend_name}, precompiled and loaded in a fresh process) differs from eager:"
        raise PrecompileFailure("\n".join([header, *format_mismatches(mismatches)]))
    return trip


# --- the fresh process ---------------------------------------------------------


def main(argv: list[str]) -> int:
    """`python -m pytest_torchcompile.snapshot.numerics.precompile ARTIFACT CALL RESULT`."""
    artifact, call_path, result_path = argv
    call = torch.load(call_path, weights_only=False)
    started = time.perf_counter()
    compiled = aot.load(Path(artifact))
    load_seconds = time.perf_counter() - started
    args = ((call["model"],) if call["model"] is not None else ()) + call["args"]
    answer: dict[str, Any] = {"error": None, "load_seconds": load_seconds}
    try:
        with torch.set_grad_enabled(call["grad_enabled"]):
            torch.manual_seed(call["seed"])
            output = compiled(*args, **call["kwargs"])
        answer["output"] = map_tensors(lambda t: t.detach(), output)
    except Exception as exc:
        answer["error"] = _call_failure(exc)
    torch.save(answer, result_path)
    return 0


def _call_failure(exc: Exception) -> str:
    """A guard rejection names the guard; anything else its first line."""
    failed = rejected_guards(str(exc))
    if failed is None:
        return f"precompile: the loaded artifact raised {type(exc).__name__}: {first_line(innermost(exc))}"
    guards = "\n".join(f"  {part}" for part in failed)
    return (
        "precompile: the loaded artifact rejected these inputs (a precompiled artifact cannot recompile); "
        f"the guard that failed:\n{guards}"
    )


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
