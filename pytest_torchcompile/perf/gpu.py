"""GPU timings: kernel time, per-Triton-kernel time, CUDA-graph replay, peak memory.

Wall time on a GPU measures the launch path as much as the kernels, so the
figures here follow Triton's own benchmarking (`triton.testing.do_bench`):
CUDA events around each call, after warm-up, with the L2 cache flushed
(a 256 MiB buffer zeroed) before every call so no call runs on a cache its
predecessor warmed. Eager and compiled alternate call by call, as the CPU
timing does, and their per-pair ratio is a speedup gated on any machine;
the absolute times are gated only on the baseline's own machine.

- per-kernel: the model is compiled with Inductor's `benchmark_kernel`
  option, which gives every generated Triton kernel module a harness
  (`get_args()`, `call(args)`); each kernel is timed through it, as
  Inductor's `wrapper_benchmark.benchmark_all_kernels` does;
- CUDA-graph replay: the compiled call is captured once in a CUDA graph
  and replayed, as `triton.testing.do_bench_cudagraph` does; with
  `mode="reduce-overhead"` Inductor already replays its own graphs, so the
  event time is the replay time and no second capture is attempted;
- peak memory: `torch.cuda.max_memory_allocated` over one call of each,
  minus what was allocated before it.

NOT verified on a GPU yet (written on a CPU-only machine); every part
records a note instead of failing the test when it cannot run.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .stats import Summary, summarize

L2_FLUSH_BYTES = 256 * 1024 * 1024
_TRITON_KERNEL = re.compile(r"async_compile\.triton\('(\w+)', '''\n?(.*?)''', device_str=", re.DOTALL)


@dataclass
class GpuTimings:
    """GPU metrics by name (see `record.METRICS`), kernel times and notes."""

    metrics: dict[str, Summary] = field(default_factory=dict)
    kernels: dict[str, Summary] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def measure_gpu(
    eager: Callable[[], Any],
    compiled: Callable[[], Any],
    output_code: str,
    mode: str | None,
    confidence: float,
    rep_ms: float = 100.0,
) -> GpuTimings:
    """Every GPU figure for one case; a part that cannot run leaves a note."""
    import torch

    timings = GpuTimings()
    flush = torch.empty(L2_FLUSH_BYTES, dtype=torch.int8, device="cuda")
    eager_s, compiled_s = event_times([eager, compiled], flush, rep_ms)
    timings.metrics["gpu_eager_s"] = summarize(eager_s, confidence)
    timings.metrics["gpu_compiled_s"] = summarize(compiled_s, confidence)
    timings.metrics["gpu_speedup"] = summarize([e / c for e, c in zip(eager_s, compiled_s)], confidence)
    for name, fn in (("eager", eager), ("compiled", compiled)):
        timings.metrics[f"gpu_peak_{name}_bytes"] = Summary.exact(float(peak_bytes(fn)))
    _replay(compiled, mode, confidence, timings)
    _kernels(output_code, flush, rep_ms, confidence, timings)
    del flush
    return timings


def event_times(fns: Sequence[Callable[[], Any]], flush: Any, rep_ms: float, warmup_ms: float = 25.0) -> list[list[float]]:
    """Seconds per call of each function, alternating, L2 flushed before each call."""
    import torch

    for fn in fns:
        fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(5):
        for fn in fns:
            flush.zero_()
            fn()
    end.record()
    torch.cuda.synchronize()
    estimate_ms = max(start.elapsed_time(end) / 5, 1e-3)
    for _ in range(max(1, int(warmup_ms / estimate_ms))):
        for fn in fns:
            fn()
    repeat = max(10, min(10_000, int(rep_ms / estimate_ms)))
    events = [[(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(repeat)] for _ in fns]
    for i in range(repeat):
        order = range(len(fns)) if i % 2 == 0 else reversed(range(len(fns)))
        for j in order:
            flush.zero_()
            events[j][i][0].record()
            fns[j]()
            events[j][i][1].record()
    torch.cuda.synchronize()
    return [[s.elapsed_time(e) / 1e3 for s, e in pairs] for pairs in events]


def peak_bytes(fn: Callable[[], Any]) -> int:
    """Peak allocated bytes during one call, above what was allocated before."""
    import torch

    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    before = torch.cuda.memory_allocated()
    out = fn()
    torch.cuda.synchronize()
    peak = torch.cuda.max_memory_allocated() - before
    del out
    return peak


def cudagraph_times(fn: Callable[[], Any], rep_ms: float = 20.0, retries: int = 10) -> list[float]:
    """Seconds per call replaying `fn` captured in a CUDA graph (do_bench_cudagraph)."""
    import torch

    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(stream)
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        fn()
    start.record()
    graph.replay()
    end.record()
    torch.cuda.synchronize()
    repeat = max(1, int(rep_ms / max(start.elapsed_time(end), 1e-3)))
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(repeat):
            fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(retries):
        start.record()
        graph.replay()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) / repeat / 1e3)
    return times


def _replay(compiled: Callable[[], Any], mode: str | None, confidence: float, timings: GpuTimings) -> None:
    if mode == "reduce-overhead":
        timings.notes.append("cudagraph_s: mode='reduce-overhead' replays Inductor's own CUDA graphs; gpu_compiled_s is that replay time")
        return
    try:
        timings.metrics["cudagraph_s"] = summarize(cudagraph_times(compiled), confidence)
    except Exception as exc:  # a model that syncs with the CPU cannot be captured
        timings.notes.append(f"cudagraph_s: the compiled call could not be captured in a CUDA graph: {type(exc).__name__}: {exc}")


def kernel_sources(output_code: str) -> list[tuple[str, str]]:
    """(kernel name, module source) of every Triton kernel in Inductor's output code."""
    return _TRITON_KERNEL.findall(output_code)


def _kernels(output_code: str, flush: Any, rep_ms: float, confidence: float, timings: GpuTimings) -> None:
    from .._torch.kernels import load_module

    for name, source in kernel_sources(output_code):
        try:
            module = load_module(source)
            if not (hasattr(module, "get_args") and hasattr(module, "call")):
                timings.notes.append(f"kernel {name}: no benchmark harness (compiled without benchmark_kernel)")
                continue
            args = module.get_args()
            (times,) = event_times([lambda: module.call(args)], flush, rep_ms / 2)
            timings.kernels[name] = summarize(times, confidence)
        except Exception as exc:  # one kernel's harness failing must not lose the rest
            timings.notes.append(f"kernel {name}: could not be timed: {type(exc).__name__}: {exc}")
