"""The compiling side: in a fresh process, the test runs up to the requested case, which is compiled once.

The plugin, configured in a process started by `runner.py`, gives the
requested test this object as its `compile_benchmark`: the cases before the
requested one return the results the starting process measured (so the test
body goes on as it did), the requested one is compiled and called once, the
answer written, and the process ends there (`os._exit`: nothing after the
case runs, no teardown, no report).

What is timed is the first compiled call, after the eager model ran once
(its kernels loaded) and the compiler's modules were imported (importing is
not compiling): CPU time of the process and its children, with Inductor's
compile workers ended inside the window so theirs counts; the call's wall
time; Dynamo's own compile seconds, its phases, and the cache facts
(`_torch.compile_cost.watching`). The thread count is pinned as for timing.
"""

from __future__ import annotations

import json
import os
import pickle
import resource
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import torch

from ..._torch.compile_cost import import_compiler, reap_compile_workers, watching
from ...common.capture import reset_dynamo
from ...common.compiling import MODEL_ERRORS, compile_failed, compile_with, eager_failed
from ...common.copies import clone_inputs, copy_model
from ...common.diagnose import describe
from ...common.files import atomic_write_text
from ...common.named_cases import CaseFailure, NamedCases
from ..case import on_cuda, pinned_threads
from ..contention import Probe
from ..facts.runs import CompileRun, run_facts
from ..result import BenchmarkResult
from ..spec import BenchmarkSpec
from ..timing import no_sync
from .request import Request


@dataclass(frozen=True)
class _Called:
    name: str


@dataclass
class CompilingBenchmark(NamedCases[BenchmarkResult]):
    """`compile_benchmark` in a compiling process: earlier cases answered, the requested one compiled."""

    request: Request
    spec: BenchmarkSpec
    threads: int
    cases: list[_Called] = field(default_factory=list)
    fixture_name: ClassVar[str] = "compile_benchmark"

    def _run(
        self, name: str, model: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> BenchmarkResult:
        index = len(self.cases)
        self.cases.append(_Called(name))
        if index < self.request.case:
            return self._earlier()[index]
        try:
            answer: dict[str, object] = {"run": compile_once(self, model, args, kwargs).to_json()}
        except CaseFailure as exc:
            answer = {"error": str(exc)}
        except Exception as exc:  # the plugin's own failure, said to the starting process
            answer = {"error": f"internal error of pytest-torchcompile: {describe(exc)}"}
        atomic_write_text(Path(self.request.answer), json.dumps(answer))
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)

    def _earlier(self) -> list[BenchmarkResult]:
        with open(self.request.earlier, "rb") as handle:
            return pickle.load(handle)

    def release(self) -> None:
        """Nothing to release: the process ends at the requested case."""

    def finished(self) -> list[tuple[str, Any]]:
        """No case is measured here to report (a test that stopped before the case ends so)."""
        return []


def cpu_seconds() -> float:
    """CPU time of this process and of its children that have ended (user and system)."""
    own, children = (
        resource.getrusage(who) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)
    )
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def compile_once(
    benchmark: CompilingBenchmark, model: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> CompileRun:
    """Run eager once, then time the first compiled call (the compile) under the watch."""
    spec = benchmark.spec
    with pinned_threads(benchmark.threads):
        reset_dynamo()
        sync = torch.cuda.synchronize if on_cuda(model, args, kwargs) else no_sync
        _run_eager(model, args, kwargs, sync)
        compiled, (call_args, call_kwargs) = compile_with(model, spec), clone_inputs((args, kwargs))
        import_compiler()
        with Probe() as probe, watching(spec.options) as watched:
            started, before = time.perf_counter(), cpu_seconds()
            try:
                compiled(*call_args, **call_kwargs)
                sync()
            except MODEL_ERRORS as exc:
                raise compile_failed(exc, spec) from exc
            wall = time.perf_counter() - started
            reap_compile_workers()
            cpu = cpu_seconds() - before
    facts = run_facts(
        watched.counts,
        watched.phase_counts,
        watched.frame_counts,
        watched.switches,
        watched.lookups,
    )
    return CompileRun(
        benchmark.request.side,
        cpu,
        wall,
        watched.frame_seconds,
        facts,
        watched.phase_seconds,
        tuple(watched.lookups),
        watched.triton_compile_s,
        probe.result,
    )


def _run_eager(
    model: Any, args: tuple[Any, ...], kwargs: dict[str, Any], sync: Callable[[], None]
) -> None:
    """Eager once on copies: its kernels and libraries load before the compile is timed."""
    eager_model, (eager_args, eager_kwargs) = copy_model(model), clone_inputs((args, kwargs))
    try:
        eager_model(*eager_args, **eager_kwargs)
        sync()
    except MODEL_ERRORS as exc:
        raise eager_failed(exc) from exc
