"""The `compile_benchmark` fixture's object: compile, time eager against compiled, judge.

Each call is one case: the model is compiled with the marker's settings
(its first call timed as first-call latency, Dynamo's own metrics giving the
compile time, the plugin's capture giving the counters), eager and compiled
are timed interleaved with the thread count pinned, GPU figures are added
when the inputs live on a CUDA device, and, under `--perf-gate`, the case is
judged against its baseline and re-measured (two more passes, pooled) before
a FAIL or an INCONCLUSIVE stands. The compile and first call are the step
shared with `compile_model` (`common/compiling.py`). Nothing here depends on
pytest: a failing case raises `FixtureFailure`, which the plugin turns into
the test's failure.
"""

from __future__ import annotations

import functools
import math
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, ClassVar

import torch

from .._torch import config
from .._torch.kernels import settle_compile_workers
from .._torch.tensors import tree_leaves
from ..common.capture import reset_dynamo
from ..common.cases import CaseFailure, FixtureFailure, NamedCases, fail_test_on_case_failure
from ..common.compiling import check_backend, compile_with, compiling, eager_failed
from ..common.copies import clone_inputs, copy_model
from ..common.counters import counters
from ..common.diagnose import describe, user_frame
from ..common.records import CaptureLog
from .gate import Baseline, CaseVerdict, Gate
from .gpu import GpuMeasurement, GpuTimings, inductor_cudagraphs
from .record import CaseRecord
from .spec import BenchmarkSpec
from .stats import Summary, pass_noise, round_sig, widen
from .timing import PairedTiming, TimingSettings, interleave, no_sync

#: passes a re-measurement adds (its rounds are pooled with the first pass's).
REMEASURE_PASSES = 2


@dataclass(frozen=True)
class BenchmarkResult:
    """One case's figures; times are seconds per call, `speedup` is eager/compiled.

    `eager`, `compiled` and `speedup` are medians with min, quartiles and a
    confidence interval of the median (`Summary`). `gpu` holds the GPU
    metrics (empty on CPU, with the reason in `notes`), `kernel_times` the
    time of each Triton kernel. `verdict` is the gate's PASS, FAIL or
    INCONCLUSIVE under `--perf-gate`, else None.
    """

    case: str
    speedup: Summary
    eager: Summary
    compiled: Summary
    compile_seconds: float
    first_call_seconds: float
    threads: int
    rounds: int
    iterations: int
    graph_count: int
    graph_break_count: int
    recompile_count: int
    kernel_count: int
    gpu: dict[str, Summary]
    kernel_times: dict[str, Summary]
    notes: tuple[str, ...]
    verdict: str | None
    record: CaseRecord = field(repr=False)


@contextmanager
def pinned_threads(threads: int) -> Iterator[None]:
    """Compile and time with `threads` intra-op threads, restoring the old count."""
    previous = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        yield
    finally:
        torch.set_num_threads(previous)


def on_cuda(model: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    """Whether the inputs or the model's parameters live on a CUDA device."""
    tensors = [t for t in tree_leaves((args, kwargs)) if isinstance(t, torch.Tensor)]
    if isinstance(model, torch.nn.Module):
        tensors += list(model.parameters()) + list(model.buffers())
    return any(t.is_cuda for t in tensors)


@dataclass
class BenchmarkCase:
    """One model compiled once and timed against its eager copy."""

    name: str
    spec: BenchmarkSpec
    timing: TimingSettings
    threads: int
    eager: Callable[[], Any] = no_sync
    compiled: Callable[[], Any] = no_sync
    sync: Callable[[], Any] = no_sync
    passes: list[PairedTiming] = field(default_factory=list)
    counters: dict[str, int] = field(default_factory=dict)
    compile_seconds: float = 0.0
    first_call_seconds: float = 0.0
    output_code: str = ""
    gpu: GpuMeasurement | None = None
    notes: list[str] = field(default_factory=list)
    verdict: CaseVerdict | None = None
    iterations_hint: int | None = None
    noise_hint: dict[str, float] = field(default_factory=dict)
    final: BenchmarkResult | None = None

    def start(self, model: Any, args: tuple[Any, ...], kwargs: dict[str, Any], passes: int) -> None:
        reset_dynamo()
        gpu = on_cuda(model, args, kwargs)
        self.sync = torch.cuda.synchronize if gpu else no_sync
        eager_model, (eager_args, eager_kwargs) = copy_model(model), clone_inputs((args, kwargs))
        self.eager = lambda: eager_model(*eager_args, **eager_kwargs)
        self._run_eager_once()
        compiled_model, (compiled_args, compiled_kwargs) = (
            compile_with(model, self.spec),
            clone_inputs((args, kwargs)),
        )
        self.compiled = lambda: compiled_model(*compiled_args, **compiled_kwargs)
        self._first_call(gpu)
        self.measure(passes)
        if not gpu:
            reason = (
                "CUDA is not available"
                if not torch.cuda.is_available()
                else "the inputs and model are on the CPU"
            )
            self.notes.append(f"gpu: skipped, {reason}")

    @property
    def paired(self) -> PairedTiming:
        """All passes' rounds pooled."""
        return functools.reduce(PairedTiming.merged, self.passes)

    def measure(self, passes: int) -> None:
        """Time `passes` more passes of interleaved rounds, each with its GPU pass on GPU.

        Every pass uses the same calls per block (the first pass's, or the
        baseline's), so they measure the same thing and can be pooled.
        """
        try:
            for _ in range(passes):
                hint = self.passes[0].iterations if self.passes else self.iterations_hint
                self.passes.append(
                    interleave(self.eager, self.compiled, self.timing, self.sync, iterations=hint)
                )
                if self.sync is not no_sync:
                    self.gpu = self.gpu or GpuMeasurement(
                        inductor_cudagraphs(self.spec.mode, self.spec.options)
                    )
                    self.gpu.add_pass(
                        self.eager, self.compiled, self.output_code, self.timing.confidence
                    )
        except Exception as exc:  # the model's own failure on a later call, not the timing loop's
            raise CaseFailure(
                "the model raised while being timed, after its first eager and compiled calls had succeeded "
                f"(a benchmark calls it many times with the same inputs):\n{user_frame(exc)}{describe(exc)}"
            ) from exc

    def _run_eager_once(self) -> None:
        try:
            self.eager()
            self.sync()
        except Exception as exc:
            raise eager_failed(exc) from exc

    def _first_call(self, gpu: bool) -> None:
        """Compile by calling once: first-call latency, compile time, counters, output code."""
        log = CaptureLog()
        started = time.perf_counter()
        with compiling(
            log, self.spec, config.BENCHMARK_KERNEL if gpu else None, pin_host=False
        ) as spent:
            self.compiled()
            self.sync()
        self.first_call_seconds = time.perf_counter() - started
        self.compile_seconds = spent.seconds
        counted = counters(log)
        self.counters = {
            "graphs": counted.graph_count,
            "graph_breaks": counted.graph_break_count,
            "recompiles": counted.recompile_count,
            "kernels": counted.kernel_count,
        }
        self.output_code = "\n".join(log.payloads("output_code"))
        if gpu:
            settle_compile_workers()

    def record(self) -> CaseRecord:
        """The pooled passes' summaries, each interval at least as wide as the
        noise between passes (the baseline's, else this case's own) allows."""
        paired, confidence = self.paired, self.timing.confidence
        own = self.own_noise()
        # the baseline's (5 passes) is the better estimate; a re-measure's 3 passes vary too much
        noise = self.noise_hint or own
        metrics = {
            name: widen(summary, noise.get(name, 0.0) / math.sqrt(len(self.passes)), confidence)
            for name, summary in paired.summaries(confidence).items()
        }
        metrics.update(
            compile_s=Summary.exact(self.compile_seconds),
            first_call_s=Summary.exact(self.first_call_seconds),
        )
        gpu = self.gpu.timings(confidence, {**own, **self.noise_hint}) if self.gpu else GpuTimings()
        metrics.update(gpu.metrics)
        settings = self._settings()
        settings.update(self.gpu.settings() if self.gpu else {})
        if own or self.noise_hint:
            settings["noise"] = {
                name: round_sig(value, 3) for name, value in (own or self.noise_hint).items()
            }
        samples = {"eager_s": paired.eager, "compiled_s": paired.compiled}
        return CaseRecord(
            metrics,
            dict(self.counters),
            settings,
            tuple(self.notes + gpu.notes),
            dict(gpu.kernels),
            samples,
        )

    def own_noise(self) -> dict[str, float]:
        """Per metric, the spread between this case's passes (needs 3 or more)."""
        series = [p.series() for p in self.passes]
        noise = {name: pass_noise([s[name] for s in series]) for name in series[0]}
        noise.update(self.gpu.noise() if self.gpu else {})
        return {name: value for name, value in noise.items() if value is not None}

    def _settings(self) -> dict[str, Any]:
        spec = self.spec
        settings: dict[str, Any] = {
            "backend": spec.backend_name,
            "mode": spec.mode,
            "dynamic": spec.dynamic,
        }
        settings.update(
            fullgraph=spec.fullgraph, threads=self.threads, device="cuda" if self.gpu else "cpu"
        )
        settings["iterations"] = self.passes[0].iterations
        if spec.options:
            settings["options"] = {k: repr(v) for k, v in spec.options.items()}
        return settings

    def result(self) -> BenchmarkResult:
        record = self.record()
        return BenchmarkResult(
            case=self.name,
            speedup=record.metrics["speedup"],
            eager=record.metrics["eager_s"],
            compiled=record.metrics["compiled_s"],
            compile_seconds=self.compile_seconds,
            first_call_seconds=self.first_call_seconds,
            threads=self.threads,
            rounds=self.paired.rounds,
            iterations=self.passes[0].iterations,
            graph_count=self.counters["graphs"],
            graph_break_count=self.counters["graph_breaks"],
            recompile_count=self.counters["recompiles"],
            kernel_count=self.counters["kernels"],
            gpu={
                name: summary for name, summary in record.metrics.items() if name.startswith("gpu_")
            },
            kernel_times=dict(record.kernels),
            notes=record.notes,
            verdict=self.verdict.verdict.value if self.verdict else None,
            record=record,
        )


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

        def measure() -> BenchmarkResult:
            with pinned_threads(self.threads):
                case.start(model, args, kwargs, self.passes)
                self._judge(case)
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

    def _judge(self, case: BenchmarkCase) -> None:
        """Judge against the baseline; a FAIL or INCONCLUSIVE is measured again first."""
        if self.gate is None:
            return
        case.verdict = self.gate.judge(self.key(case), case.record())
        if case.verdict.needs_remeasure:
            case.measure(REMEASURE_PASSES)
            case.verdict = self.gate.judge(self.key(case), case.record(), remeasured=True)

    def release(self) -> None:
        """Drop Dynamo's caches of this test's code when the test ends (see CompileModel.release)."""
        if self.cases:
            reset_dynamo()

    def finished(self) -> list[tuple[str, BenchmarkCase]]:
        """(key, case) of every case that was measured to the end."""
        return [(self.key(c), c) for c in self.cases if c.final is not None]
