"""Time eager against compiled, interleaved in one process.

Each round times a block of eager calls and a block of compiled calls, in
alternating order (ABBA...), so a slow phase slows both sides alike and the
per-round ratio eager/compiled, the quantity the gate uses, stays steady.
The loop is plain Python over two callables and a `sync` (a no-op on CPU,
`torch.cuda.synchronize` on GPU): no torch import.

Each pass carries the CPU contention its window saw (`contention.Probe`):
interleaving cancels a machine that is slow throughout, not one that is
contended.
"""

from __future__ import annotations

import gc
import math
import statistics
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from ..common.options import check_number
from .contention import Contention, Probe, worst_contention
from .stats import Summary, summarize

#: rounds between checks of the stopping rule (it sorts all ratios so far).
PRECISION_CHECK_EVERY = 16


@dataclass(frozen=True)
class TimingSettings:
    """How long and how finely one interleaved measurement runs.

    `max_time` bounds the timed part (both sides together); the loop stops
    earlier once `min_rounds` are done and the speedup's confidence interval
    is within `precision` of its median (relative half-width). Each timed
    block repeats the call until it lasts at least `block_time`, so the
    clock's resolution and per-call jitter do not dominate fast models.
    """

    max_time: float = 1.0
    min_rounds: int = 10
    max_rounds: int = 20000
    block_time: float = 0.0001
    warmup: int = 3
    precision: float = 0.005
    confidence: float = 0.95

    def __post_init__(self) -> None:
        check_number("max_time", self.max_time, 0.0, math.inf, "seconds of timing per measurement")
        if self.min_rounds < 2 or self.max_rounds < self.min_rounds:
            raise ValueError(
                f"rounds must satisfy 2 <= min_rounds ({self.min_rounds}) <= max_rounds ({self.max_rounds})"
            )


@dataclass(frozen=True)
class PairedTiming:
    """Seconds per call of each side, one sample per round, paired by round,
    and the contention while they were timed (the worst of pooled passes)."""

    eager: tuple[float, ...]
    compiled: tuple[float, ...]
    iterations: int
    contention: Contention = Contention()

    @property
    def rounds(self) -> int:
        return len(self.eager)

    def ratios(self) -> tuple[float, ...]:
        """Per-round speedup, eager / compiled."""
        return tuple(e / c for e, c in zip(self.eager, self.compiled))

    def merged(self, other: PairedTiming) -> PairedTiming:
        """Pool two measurements of the same case (a re-measure adds rounds)."""
        return PairedTiming(
            self.eager + other.eager,
            self.compiled + other.compiled,
            max(self.iterations, other.iterations),
            worst_contention([self.contention, other.contention]),
        )

    def series(self) -> dict[str, tuple[float, ...]]:
        """Per-round values by metric name: speedup, eager_s and compiled_s."""
        return {"speedup": self.ratios(), "eager_s": self.eager, "compiled_s": self.compiled}

    def summaries(self, confidence: float) -> dict[str, Summary]:
        """Each metric's median with its interval."""
        return {name: summarize(values, confidence) for name, values in self.series().items()}


def no_sync() -> None:
    """The `sync` of a CPU measurement: nothing to wait for."""
    return None


def interleave(
    eager: Callable[[], object],
    compiled: Callable[[], object],
    settings: TimingSettings,
    sync: Callable[[], object] = no_sync,
    clock: Callable[[], float] = time.perf_counter,
    iterations: int | None = None,
) -> PairedTiming:
    """Warm both sides up, choose the block length, then time rounds.

    `iterations` (calls per block) is taken as given when it keeps a block
    within reach of `block_time`: the speedup measured depends on it (the
    first call of a block runs on caches the other side just used), so a
    gate reuses the baseline's to measure the same thing.
    """
    for _ in range(settings.warmup):
        eager()
        compiled()
    sync()
    fastest = min(
        statistics.median(_block(fn, 1, sync, clock) for _ in range(5)) for fn in (eager, compiled)
    )
    iterations = choose_iterations(fastest, settings.block_time, iterations)
    eager_times: list[float] = []
    compiled_times: list[float] = []
    with _gc_paused(), Probe() as probe:
        started = clock()
        while not _done(eager_times, compiled_times, clock() - started, settings):
            sides = ((eager, eager_times), (compiled, compiled_times))
            for fn, times in sides if len(eager_times) % 2 == 0 else reversed(sides):
                times.append(_block(fn, iterations, sync, clock) / iterations)
    return PairedTiming(tuple(eager_times), tuple(compiled_times), iterations, probe.result)


def choose_iterations(fastest: float, block_time: float, hint: int | None = None) -> int:
    """Calls per block: the hint if its block is within 1/4x-8x of `block_time`,
    else the power of two that makes the faster side's block last `block_time`
    (a power of two, so calibration noise rarely changes it between runs)."""
    if hint is not None and hint >= 1 and block_time / 4 <= hint * fastest <= block_time * 8:
        return hint
    if fastest <= 0:
        return 1024
    return 2 ** max(0, min(20, math.ceil(math.log2(max(block_time / fastest, 1.0)))))


def _block(
    fn: Callable[[], object],
    iterations: int,
    sync: Callable[[], object],
    clock: Callable[[], float],
) -> float:
    started = clock()
    for _ in range(iterations):
        fn()
    sync()
    return clock() - started


def _done(
    eager: list[float], compiled: list[float], elapsed: float, settings: TimingSettings
) -> bool:
    rounds = len(eager)
    if rounds < settings.min_rounds:
        return False
    if rounds >= settings.max_rounds or elapsed >= settings.max_time:
        return True
    if rounds % PRECISION_CHECK_EVERY:
        return False
    speedup = summarize([e / c for e, c in zip(eager, compiled)], settings.confidence)
    return (speedup.ci_high - speedup.ci_low) / 2 <= settings.precision * speedup.median


@contextmanager
def _gc_paused() -> Iterator[None]:
    """No garbage collection inside timed blocks (as `timeit` does)."""
    enabled = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
