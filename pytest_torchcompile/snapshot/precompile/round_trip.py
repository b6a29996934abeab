"""The precompile round trip: aot_compile, save, load in a fresh process, run, compare with eager.

On a case's first call, `PrecompileCheck.after_call` compiles the model once
with `aot_compile` (always fullgraph: a saved artifact holds one graph and
cannot fall back to Python) on that call's inputs and saves it to its
temporary folder. On each call it hands the artifact, the model (for a
module's `forward`, which `aot_compile` traces with `self` as an argument:
the module is pickled, so its class must be importable there) and the
inputs to a fresh Python process (`child.py`), which loads the artifact
with `torch.compiler.load_compiled_function` and calls it under the
caller's switches and RNG seed, and sends the outputs back; they are
compared with eager's. The payload, the switches and the failures of the
fresh process itself are `fresh_process/check.py`'s, shared with the
program run.

Times (compile, save, load) and the artifact's size go to `PrecompileReport`
and the end-of-run table, never into a snapshot: they vary between runs.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

import torch

from ..._torch import aot, errors
from ..._torch.trace import trace_only_to
from ...common.counters import counters
from ...common.diagnose import first_line, innermost
from ..artifacts.normalize import Normalizer
from ..fresh_process.check import After, Before, FreshCheck, FreshCheckFailed
from ..fresh_process.servers import FreshProcesses
from ..numerics.calls import SEED
from ..numerics.check import Tolerance, compare_trees, format_mismatches
from ..spec import CompileSpec

CHILD_TIMEOUT_S = 600


@dataclass
class PrecompileReport:
    """What the round trip measured: artifact size and seconds (not snapshotted)."""

    artifact_bytes: int
    compile_seconds: float
    save_seconds: float
    load_seconds: list[float] = field(default_factory=list)  # one per call, in the fresh process
    #: per call, how its fresh process started: "forked" (from the session's server) or "new interpreter"
    started: list[str] = field(default_factory=list)


def fullgraph_required(break_reasons: tuple[str, ...]) -> FreshCheckFailed:
    listed = "\n".join(f"  - {reason}" for reason in break_reasons)
    return FreshCheckFailed(
        "precompile=True requires fullgraph: aot_compile saves one graph, but Dynamo had to break this "
        f"model's graph {len(break_reasons)} time(s):\n{listed}"
    )


class PrecompileCheck(FreshCheck):
    """One saved artifact of a case, loaded and called in a fresh process per call."""

    label = "precompile"
    does = "loads the artifact"
    prefix = "precompile: "
    child = "pytest_torchcompile.snapshot.precompile.child"
    kind = "precompile"
    doing = "precompile round trip (aot_compile, save, load, run)"
    result_field = "precompile"
    starts_from = "eager"
    timeout_s = CHILD_TIMEOUT_S

    def __init__(
        self, processes: FreshProcesses, spec: CompileSpec, normalizer: Normalizer
    ) -> None:
        super().__init__(processes)
        self.spec, self.normalizer = spec, normalizer
        self.artifact: Path | None = None
        self.method = False  # a module's forward: the module is passed as `self`
        self._report: PrecompileReport | None = None

    def after_call(self, before: Before, after: After) -> None:
        """Load the artifact (saved on the first call) in a fresh process, call it, compare with eager.

        The loaded artifact passes where it is within tolerance of eager, or of
        the live compile, which has passed the full numerics check (fp64
        reference included).
        """
        if self.artifact is None:
            self._save(before, after)
        assert self.artifact is not None and self._report is not None
        entries = {"model": before.model if self.method else None, "seed": SEED}
        answer = self.fresh(before, [str(self.artifact)], entries)
        self._report.load_seconds.append(answer["load_seconds"])
        if not self.spec.numerics:
            return
        spec, out = self.spec, answer["output"]
        tolerance = Tolerance(spec.rtol, spec.atol, fp64=False, check_stride=spec.check_stride)
        mismatches = compare_trees(out, after.eager, "output", tolerance)
        if mismatches and compare_trees(out, after.compiled, "output", tolerance):
            header = f"compiled ({spec.backend_name}, precompiled and loaded in a fresh process) differs from eager:"
            raise FreshCheckFailed("\n".join([header, *format_mismatches(mismatches)]))

    def report(self) -> PrecompileReport | None:
        return self._report

    def _save(self, before: Before, after: After) -> None:
        """aot_compile the model (fullgraph) on the first call's inputs and save it."""
        cannot = aot.unsupported()
        if cannot is not None:
            raise FreshCheckFailed(f"precompile=True: {cannot}")
        breaks = tuple(self.normalizer(b).strip() for b in counters(after.log).break_reasons)
        if breaks:
            raise fullgraph_required(breaks)
        model, (args, kwargs) = before.model, before.inputs
        self.method = isinstance(model, torch.nn.Module)
        target = model.forward if self.method else model
        started = time.perf_counter()
        try:
            with trace_only_to(None):
                compiled = aot.aot_compile(target, self.spec.compile_kwargs(), args, kwargs)
        except aot.Unsupported as exc:
            raise FreshCheckFailed(f"precompile=True: {exc}") from exc
        except Exception as exc:
            if errors.is_graph_break(exc):
                raise fullgraph_required((first_line(exc),)) from exc
            raise FreshCheckFailed(
                f"precompile: aot_compile failed: {first_line(innermost(exc))}"
            ) from exc
        compile_seconds = time.perf_counter() - started
        artifact = self.folder / "compiled.pt2"
        started = time.perf_counter()
        try:
            aot.save(compiled, artifact)
        except Exception as exc:
            raise FreshCheckFailed(
                f"precompile: save_compiled_function failed: {first_line(innermost(exc))}"
            ) from exc
        self._report = PrecompileReport(
            artifact.stat().st_size,
            compile_seconds,
            time.perf_counter() - started,
            started=self.started,
        )
        self.artifact = artifact
