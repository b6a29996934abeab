"""GPU timings: kernel time (CUDA-graph replay or per-call events), per-kernel time, peak memory.

Per pass: eager and compiled alternate call by call under CUDA events after
an L2 flush (as `triton.testing.do_bench`), and, where both sides can be
captured, replay as CUDA graphs of n calls (as `do_bench_cudagraph`), which
then gives the kernel times (`REPLAY`; else `EVENTS`). A side whose per-call
time is `LAUNCH_BOUND_RATIO` times its replay time or more marks the case
launch-bound. The first pass also times each Triton kernel with Inductor's
own harness and the peak memory of one call of each side. A part that
cannot run records a note instead of failing the test.
"""

from __future__ import annotations

import functools
import math
import re
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .record import EVENTS, REPLAY
from .stats import Summary, pass_noise, round_sig, summarize, widen

if TYPE_CHECKING:
    import torch

L2_FLUSH_BYTES = 256 * 1024 * 1024
#: milliseconds of GPU work each replayed graph holds, and replays per side per pass
#: (do_bench_cudagraph: one graph of `rep`=20 ms, 10 replays; here two graphs alternate).
REPLAY_GRAPH_MS = 5.0
REPLAY_RETRIES = 10
MAX_CALLS_PER_GRAPH = 1000
#: per-call event time / replay time at or above which a side is launch-bound.
#: From the H100 probe (5 processes): bandwidth-bound sides measured 1.00-1.10
#: (highest: compiled 243.8 us / 222.7 us), launch-bound ones 2.6-15.6 (lowest:
#: eager 32.8 us / 12.6 us). 1.5 sits between with a margin both ways, and means
#: a third of the per-call time is the GPU waiting for launches. (Events run
#: after an L2 flush, replay on a warm L2, so a cache-friendly kernel can read
#: high too: it is then reported rather than gated, never falsely failed.)
LAUNCH_BOUND_RATIO = 1.5
_TRITON_KERNEL = re.compile(
    r"async_compile\.triton\('(\w+)', '''\n?(.*?)''', device_str=", re.DOTALL
)


@dataclass
class GpuTimings:
    """GPU metrics by name (see `record.METRICS`), kernel times and notes."""

    metrics: dict[str, Summary] = field(default_factory=dict)
    kernels: dict[str, Summary] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class GpuPass:
    """One pass's raw samples, seconds per call in the order taken; a side
    that could not be captured has no replay samples."""

    eager_call: tuple[float, ...]
    compiled_call: tuple[float, ...]
    eager_replay: tuple[float, ...] = ()
    compiled_replay: tuple[float, ...] = ()

    def series(self, method: str) -> dict[str, tuple[float, ...]]:
        """Samples by metric name, as `method` names them (see module doc)."""
        if method == EVENTS:
            return {
                "gpu_eager_s": self.eager_call,
                "gpu_compiled_s": self.compiled_call,
                "gpu_speedup": ratios(self.eager_call, self.compiled_call),
            }
        series = {"gpu_eager_call_s": self.eager_call, "gpu_compiled_call_s": self.compiled_call}
        if self.eager_replay and self.compiled_replay:
            series.update(
                gpu_eager_s=self.eager_replay,
                gpu_compiled_s=self.compiled_replay,
                gpu_speedup=ratios(self.eager_replay, self.compiled_replay),
            )
        return series


def ratios(eager: Sequence[float], compiled: Sequence[float]) -> tuple[float, ...]:
    """Per-pair speedup eager/compiled (pairs taken back to back)."""
    return tuple(e / c for e, c in zip(eager, compiled) if c > 0)


@dataclass(frozen=True)
class LaunchRatio:
    """Per-call event time over replay time of the side where it is largest."""

    ratio: float
    side: str
    call_s: float
    replay_s: float

    @property
    def launch_bound(self) -> bool:
        return self.ratio >= LAUNCH_BOUND_RATIO


def launch_ratio(passes: Sequence[GpuPass]) -> LaunchRatio | None:
    """The larger side's ratio over all passes' medians; None when no side was replayed."""
    found = []
    for side in ("eager", "compiled"):
        calls = [t for p in passes for t in getattr(p, f"{side}_call")]
        replays = [t for p in passes for t in getattr(p, f"{side}_replay")]
        if calls and replays and min(replays) > 0:
            call_s, replay_s = statistics.median(calls), statistics.median(replays)
            found.append(LaunchRatio(call_s / replay_s, side, call_s, replay_s))
    return max(found, key=lambda r: r.ratio, default=None)


@dataclass
class GpuMeasurement:
    """Every GPU figure of one case, pass by pass.

    The method is chosen by the first pass (`REPLAY` when both sides could be
    captured) and kept, so every pass measures the same thing and they pool.
    `add_pass` touches the GPU; everything else is arithmetic on the samples.
    """

    inductor_cudagraphs: bool = False
    passes: list[GpuPass] = field(default_factory=list)
    peaks: dict[str, int] = field(default_factory=dict)
    kernels: dict[str, Summary] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    method: str | None = None
    uncapturable: set[str] = field(default_factory=set)
    broken: bool = False

    def add_pass(
        self,
        eager: Callable[[], object],
        compiled: Callable[[], object],
        output_code: str,
        confidence: float,
        rep_ms: float = 100.0,
    ) -> None:
        """Measure one more pass; a part that cannot run leaves a note, never an exception."""
        if self.broken:
            return
        try:
            timed = self._measure_pass(eager, compiled, output_code, confidence, rep_ms)
        except Exception as exc:  # a CUDA error: the GPU figures end here, the test goes on
            self.broken = True
            self.notes.append(
                f"gpu: measuring stopped after {len(self.passes)} pass(es): {_exc_line(exc)}"
            )
            return
        if self.method is None:
            self.method = REPLAY if timed.eager_replay and timed.compiled_replay else EVENTS
        self.passes.append(timed)

    def _measure_pass(
        self,
        eager: Callable[[], object],
        compiled: Callable[[], object],
        output_code: str,
        confidence: float,
        rep_ms: float,
    ) -> GpuPass:
        flush = l2_flush_buffer()
        eager_call, compiled_call = event_times([eager, compiled], flush, rep_ms)
        if not self.passes:  # deterministic, or slow: once per case
            self._peaks(eager, compiled)
            self._kernels(output_code, flush, rep_ms, confidence)
        del flush
        replays = self._replays({"eager": eager, "compiled": compiled})
        return GpuPass(
            tuple(eager_call),
            tuple(compiled_call),
            replays.get("eager", ()),
            replays.get("compiled", ()),
        )

    def _peaks(self, eager: Callable[[], object], compiled: Callable[[], object]) -> None:
        for name, fn in (("eager", eager), ("compiled", compiled)):
            try:
                self.peaks[f"gpu_peak_{name}_bytes"] = peak_bytes(fn)
            except Exception as exc:
                self.notes.append(f"gpu_peak_{name}_bytes: could not be measured: {_exc_line(exc)}")

    def _replays(self, sides: dict[str, Callable[[], object]]) -> dict[str, tuple[float, ...]]:
        """Replay times of each side that can be captured (the others get a note once)."""
        if self.inductor_cudagraphs and "compiled" not in self.uncapturable:
            self.uncapturable.add("compiled")
            self.notes.append(
                "gpu: the compiled call runs Inductor's own CUDA graphs (mode='reduce-overhead' or 'max-autotune', or "
                "triton.cudagraphs), which cannot be captured "
                "again: its GPU times are per-call events, reported, not gated; the gate judges `speedup`, the "
                "interleaved per-call wall-time ratio (synchronised per block)"
            )
        graphs = {}
        for name, fn in sides.items():
            if name in self.uncapturable:
                continue
            try:
                graphs[name] = capture(fn, REPLAY_GRAPH_MS)
            except (
                Exception
            ) as exc:  # a call that syncs with the CPU, or allocates outside the graph's pool
                self.uncapturable.add(name)
                self.notes.append(
                    f"gpu: the {name} call could not be captured in a CUDA graph: {_exc_line(exc)}"
                )
                _settle_after_failed_capture()
        if not graphs:
            return {}
        times = replay_times(list(graphs.values()), REPLAY_RETRIES)
        return {name: tuple(t) for name, t in zip(graphs, times)}

    def _kernels(
        self, output_code: str, flush: torch.Tensor, rep_ms: float, confidence: float
    ) -> None:
        from .._torch.kernels import load_module

        for name, source in kernel_sources(output_code):
            try:
                module = load_module(source)
                if not (hasattr(module, "get_args") and hasattr(module, "call")):
                    self.notes.append(
                        f"kernel {name}: no benchmark harness (compiled without benchmark_kernel)"
                    )
                    continue
                args = module.get_args()
                (times,) = event_times([functools.partial(module.call, args)], flush, rep_ms / 2)
                self.kernels[name] = summarize(times, confidence)
            except Exception as exc:  # one kernel's harness failing must not lose the rest
                self.notes.append(f"kernel {name}: could not be timed: {_exc_line(exc)}")

    # -- arithmetic on the samples (no torch) ------------------------------------------------

    def series(self) -> list[dict[str, tuple[float, ...]]]:
        """Each pass's samples by metric name."""
        return [p.series(self.method or EVENTS) for p in self.passes]

    def noise(self) -> dict[str, float]:
        """Per metric, the spread between passes (3 or more), as for the CPU metrics."""
        series = self.series()
        names = {name for s in series for name in s}
        noise = {name: pass_noise([s[name] for s in series if name in s]) for name in sorted(names)}
        return {name: value for name, value in noise.items() if value is not None}

    def timings(self, confidence: float, noise: Mapping[str, float]) -> GpuTimings:
        """All passes pooled; each interval at least as wide as `noise` (log sd
        between passes) over the square root of the passes allows."""
        timings = GpuTimings(kernels=dict(self.kernels), notes=self.all_notes())
        series = self.series()
        for name in _ordered({name for s in series for name in s}):
            parts = [s[name] for s in series if name in s and s[name]]
            if parts:
                pooled = summarize([t for part in parts for t in part], confidence)
                timings.metrics[name] = widen(
                    pooled, noise.get(name, 0.0) / math.sqrt(len(parts)), confidence
                )
        timings.metrics.update({name: Summary.exact(value) for name, value in self.peaks.items()})
        return timings

    def settings(self) -> dict[str, Any]:
        """What the gate needs to know of how the kernel times were measured."""
        found = launch_ratio(self.passes)
        return {
            "gpu_timing": self.method or EVENTS,
            "gpu_launch_bound": None if found is None else found.launch_bound,
            "gpu_inductor_cudagraphs": self.inductor_cudagraphs,
        }

    def all_notes(self) -> list[str]:
        """The notes, with what the launch ratio says (read by people, in reports and baselines)."""
        found = launch_ratio(self.passes)
        if found is None:
            return (
                [
                    *self.notes,
                    "gpu: launch-bound or not is unknown: no side could be captured in a CUDA graph",
                ]
                if self.passes
                else list(self.notes)
            )
        if not found.launch_bound:
            return list(self.notes)
        timed = (
            "per-call GPU times are reported, not gated"
            if self.method == EVENTS
            else "gated GPU times are replay times; per-call ones (gpu_*_call_s) are reported"
        )
        return [
            *self.notes,
            f"gpu: launch-bound: per-call event time {round_sig(found.ratio, 2)}x the CUDA-graph replay time "
            f"({found.side}): the GPU waits on the CPU's launches; {timed}",
        ]


def _ordered(names: set[str]) -> list[str]:
    """Metric names in a fixed order: the gated figures first."""
    order = (
        "gpu_eager_s",
        "gpu_compiled_s",
        "gpu_speedup",
        "gpu_eager_call_s",
        "gpu_compiled_call_s",
    )
    return [n for n in order if n in names] + sorted(names - set(order))


def _exc_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}".rstrip(": ")


def inductor_cudagraphs(mode: str | None, options: Mapping[str, Any] | None) -> bool:
    """Whether Inductor wraps the compiled call in its own CUDA graphs (then they are never captured again)."""
    try:
        from .._torch.config import inductor_cudagraphs as uses_cudagraphs
    except Exception:  # an Inductor that cannot be imported: assume not
        return False
    return uses_cudagraphs(mode, options)


def l2_flush_buffer() -> torch.Tensor:
    """The buffer zeroed before each timed call so it runs on a cold L2 (as `do_bench`)."""
    import torch

    return torch.empty(L2_FLUSH_BYTES, dtype=torch.int8, device="cuda")


def event_times(
    fns: Sequence[Callable[[], object]], flush: torch.Tensor, rep_ms: float, warmup_ms: float = 25.0
) -> list[list[float]]:
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
    events = [
        [
            (torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
            for _ in range(repeat)
        ]
        for _ in fns
    ]
    for i in range(repeat):
        order = range(len(fns)) if i % 2 == 0 else reversed(range(len(fns)))
        for j in order:
            flush.zero_()
            events[j][i][0].record()
            fns[j]()
            events[j][i][1].record()
    torch.cuda.synchronize()
    return [[s.elapsed_time(e) / 1e3 for s, e in pairs] for pairs in events]


def peak_bytes(fn: Callable[[], object]) -> int:
    """Peak allocated bytes during one call, above what was allocated before."""
    import torch

    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    before = torch.cuda.memory_allocated()
    out = fn()
    torch.cuda.synchronize()
    peak = torch.cuda.max_memory_allocated() - before
    del out
    return int(peak)


@dataclass
class CapturedCall:
    """A CUDA graph holding `calls` back-to-back calls of one function."""

    graph: torch.cuda.CUDAGraph
    calls: int


def capture(fn: Callable[[], object], graph_ms: float) -> CapturedCall:
    """Capture `fn` as `triton.testing.do_bench_cudagraph` does (triton 3.6).

    On a side stream: one warm-up call, the time per call estimated from 5
    calls (without a graph: creating one is expensive), then one graph of as
    many calls as fill `graph_ms`, so the replay's own launch is spread over
    them. Raises when `fn` cannot be captured (it syncs with the CPU, say).
    """
    import torch

    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        fn()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(5):
            fn()
        end.record()
        torch.cuda.synchronize()
        estimate_ms = start.elapsed_time(end) / 5
        calls = (
            MAX_CALLS_PER_GRAPH
            if estimate_ms <= 0
            else max(1, min(MAX_CALLS_PER_GRAPH, int(graph_ms / estimate_ms)))
        )
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            for _ in range(calls):
                fn()
        torch.cuda.synchronize()
    return CapturedCall(graph, calls)


def replay_times(captured: Sequence[CapturedCall], retries: int) -> list[list[float]]:
    """Seconds per call of each graph's replays, alternating ABBA, each
    replay timed alone between events and synchronised (as do_bench_cudagraph)."""
    import torch

    times: list[list[float]] = [[] for _ in captured]
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for item in captured:  # the first replay uploads the graph
            item.graph.replay()
        torch.cuda.synchronize()
        for i in range(retries):
            order = range(len(captured)) if i % 2 == 0 else reversed(range(len(captured)))
            for j in order:
                start, end = (
                    torch.cuda.Event(enable_timing=True),
                    torch.cuda.Event(enable_timing=True),
                )
                start.record()
                captured[j].graph.replay()
                end.record()
                torch.cuda.synchronize()
                times[j].append(start.elapsed_time(end) / captured[j].calls / 1e3)
    torch.cuda.current_stream().wait_stream(stream)
    return times


def _settle_after_failed_capture() -> None:
    """A failed capture ends the stream's capture; wait for the device so the
    next figure starts clean (an error here propagates: the pass stops)."""
    import torch

    torch.cuda.synchronize()


def kernel_sources(output_code: str) -> list[tuple[str, str]]:
    """(kernel name, module source) of every Triton kernel in Inductor's output code."""
    return _TRITON_KERNEL.findall(output_code)
