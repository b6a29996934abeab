"""One benchmark case: a model compiled once and timed, interleaved, against its eager copy.

The compile and first call are the step shared with `compile_model`
(`common/compiling.py`); eager and compiled are then timed interleaved with
the thread count pinned, with GPU figures when the inputs live on a CUDA
device. Nothing here depends on pytest: a failing case raises `CaseFailure`.
"""

from __future__ import annotations

import functools
import math
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import torch

from .._torch import config
from .._torch.kernels import settle_compile_workers
from .._torch.tensors import tree_leaves
from ..common.capture import reset_dynamo
from ..common.capture_log import CaptureLog
from ..common.compiling import (
    MODEL_ERRORS,
    compile_with,
    compiling,
    eager_failed,
    unusable_output,
)
from ..common.copies import clone_inputs, copy_model
from ..common.counters import counters
from ..common.diagnose import describe, user_frame
from ..common.named_cases import CaseFailure
from .facts.block import CompileRuns
from .gate import CaseVerdict
from .gpu import GpuMeasurement, GpuTimings, inductor_cudagraphs
from .record import CaseRecord, left_out_note
from .result import BenchmarkResult, CompileTime, Figure
from .spec import BenchmarkSpec
from .stats import Summary, pass_noise, round_sig, widen
from .timing import PairedTiming, TimingSettings, interleave, no_sync


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
    eager: Callable[[], object] = no_sync
    compiled: Callable[[], object] = no_sync
    sync: Callable[[], object] = no_sync
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
    compile_runs: CompileRuns | None = None

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
        """The rounds of the passes the figures come from (`timed_passes`), pooled."""
        return functools.reduce(PairedTiming.merged, self.timed_passes())

    def timed_passes(self) -> list[PairedTiming]:
        """The passes timed without CPU contention where there are any, else all.

        A contended pass may have moved the ratio (see `timing.py`).
        Passes are chosen by that signal, never by their figures, so the
        choice does not bias them.
        """
        quiet = [p for p in self.passes if not p.contention.reasons()]
        return quiet or self.passes

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
            output = self.eager()
            self.sync()
        except MODEL_ERRORS as exc:
            raise eager_failed(exc) from exc
        unusable = unusable_output(output)
        if unusable is not None:
            raise unusable

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
        self.counters = counted.as_dict()
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
        timed = len(self.timed_passes())
        metrics = {
            name: widen(summary, noise.get(name, 0.0) / math.sqrt(timed), confidence)
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
        block = None
        if self.compile_runs is not None:
            metrics.update(self.compile_runs.metrics(confidence))
            samples.update(self.compile_runs.samples())
            block = self.compile_runs.block()
        return CaseRecord(
            metrics,
            dict(self.counters),
            settings,
            tuple(self.notes + gpu.notes + self._contention_notes()),
            dict(gpu.kernels),
            samples,
            paired.contention,
            block,
        )

    def _contention_notes(self) -> list[str]:
        left_out = len(self.passes) - len(self.timed_passes())
        if not left_out:
            return []
        return [left_out_note(left_out, len(self.passes))]

    def own_noise(self) -> dict[str, float]:
        """Per metric, the spread between this case's passes (needs 3 or more)."""
        series = [p.series() for p in self.timed_passes()]
        noise = {name: pass_noise([s[name] for s in series]) for name in series[0]}
        noise.update(self.gpu.noise() if self.gpu else {})
        return {name: value for name, value in noise.items() if value is not None}

    def _settings(self) -> dict[str, object]:
        spec = self.spec
        settings: dict[str, object] = {
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
            speedup=Figure(record.metrics["speedup"]),
            eager=Figure(record.metrics["eager_s"]),
            compiled=Figure(record.metrics["compiled_s"]),
            compile_seconds=self.compile_seconds,
            first_call_seconds=self.first_call_seconds,
            threads=self.threads,
            rounds=self.paired.rounds,
            iterations=self.passes[0].iterations,
            **self.counters,
            gpu={
                name: Figure(summary)
                for name, summary in record.metrics.items()
                if name.startswith("gpu_")
            },
            kernel_times={name: Figure(summary) for name, summary in record.kernels.items()},
            notes=record.notes,
            verdict=self.verdict.verdict.value if self.verdict else None,
            record=record,
            compile_time=CompileTime.from_record(record),
        )
