"""Time eager against compiled, interleaved in one process.

Each round times a block of eager calls and a block of compiled calls, in
alternating order (ABBA...), so a slow phase slows both sides alike and the
per-round ratio eager/compiled, the quantity the gate uses, stays steady.
The loop is plain Python over two callables and a `sync` (a no-op on CPU,
`torch.cuda.synchronize` on GPU): no torch import.

Each pass carries the contention its window saw: interleaving cancels a
machine that is slow throughout, not one that is contended (neighbours take
the core mid-block and evict the caches, and the ratio itself moves). A
`Probe` reads, over exactly that window, what Linux gives without hardware
counters: each thread's run-queue delay (`/proc/self/task/*/schedstat`: time
runnable but waiting for a CPU; sleeping, I/O and GPU synchronisation are
not waiting), CPU pressure (`/proc/pressure/cpu` "some"), the process's
involuntary context switches (`resource.getrusage`), hypervisor steal
(`/proc/stat`), the load average, and the best time of a fixed pure-Python
kernel (compared with the baseline's on the same machine). A signal the
platform lacks is None; `record.Contention` says which are past their
thresholds.
"""

from __future__ import annotations

import gc
import math
import os
import resource
import statistics
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from ..common.options import check_number
from .record import Contention, worst_contention
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


# --- contention: what the machine did while a pass was timed ------------------------

PRESSURE_FILE = "/proc/pressure/cpu"
TASKS = "/proc/self/task"
STAT_FILE = "/proc/stat"
CALIBRATION_REPEATS = 3


class Probe:
    """Reads the signals at the start and end of a timed window (`with Probe() as probe:`)."""

    def __init__(self) -> None:
        self.result = Contention()
        self._start: _Counters | None = None
        self._calibration: list[float] = []

    def __enter__(self) -> Probe:
        self._calibration.append(calibrate())
        self._start = _counters()
        return self

    def __exit__(self, *exc: object) -> None:
        end = _counters()
        self._calibration.append(calibrate())
        assert self._start is not None
        self.result = _between(self._start, end, min(self._calibration))


def calibrate() -> float:
    """The best of a few runs of a fixed pure-Python kernel (about a millisecond), in seconds."""
    best = math.inf
    for _ in range(CALIBRATION_REPEATS):
        started = time.perf_counter()
        sum(i * i for i in range(20_000))
        best = min(best, time.perf_counter() - started)
    return best


@dataclass(frozen=True)
class _Counters:
    wall: float
    waits: dict[str, int] | None  # thread id -> nanoseconds spent waiting on a run queue
    preemptions: int
    pressure: int | None
    cpu_times: tuple[int, int] | None


def _counters() -> _Counters:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return _Counters(time.perf_counter(), _waits(), usage.ru_nivcsw, _pressure(), _cpu_times())


def _between(start: _Counters, end: _Counters, calibration: float) -> Contention:
    wall = max(end.wall - start.wall, 1e-9)
    waiting = None
    if start.waits is not None and end.waits is not None:
        shared = start.waits.keys() & end.waits.keys()
        waiting = max((end.waits[t] - start.waits[t] for t in shared), default=0) / 1e9 / wall
    pressure = None
    if start.pressure is not None and end.pressure is not None:
        pressure = (end.pressure - start.pressure) / 1e6 / wall
    steal = None
    if start.cpu_times is not None and end.cpu_times is not None:
        total = end.cpu_times[0] - start.cpu_times[0]
        steal = (end.cpu_times[1] - start.cpu_times[1]) / total if total > 0 else 0.0
    return Contention(
        waiting=None if waiting is None else min(max(waiting, 0.0), 1.0),
        pressure=None if pressure is None else min(max(pressure, 0.0), 1.0),
        preemptions_per_s=(end.preemptions - start.preemptions) / wall,
        steal=steal,
        load=os.getloadavg()[0] / (os.cpu_count() or 1) if hasattr(os, "getloadavg") else None,
        calibration_s=calibration,
    )


def _waits() -> dict[str, int] | None:
    """Each thread's run-queue delay so far (ns); None where schedstat is not kept (not Linux)."""
    try:
        threads = os.listdir(TASKS)
    except OSError:
        return None
    waits = {}
    for thread in threads:
        try:
            with open(f"{TASKS}/{thread}/schedstat", encoding="ascii") as handle:
                waits[thread] = int(handle.read().split()[1])
        except (OSError, ValueError, IndexError):  # a thread that ended meanwhile
            continue
    return waits or None


def _pressure() -> int | None:
    """Microseconds some task waited for a CPU since boot; None without PSI (not Linux, or disabled)."""
    try:
        with open(PRESSURE_FILE, encoding="ascii") as handle:
            for line in handle:
                if line.startswith("some "):
                    return int(line.rsplit("total=", 1)[1])
    except (OSError, ValueError, IndexError):
        return None
    return None


def _cpu_times() -> tuple[int, int] | None:
    """(all CPU time, steal time) of the machine in clock ticks; None where /proc/stat is missing."""
    try:
        with open(STAT_FILE, encoding="ascii") as handle:
            values = [int(v) for v in handle.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    return (sum(values[:8]), values[7]) if len(values) >= 8 else None


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
