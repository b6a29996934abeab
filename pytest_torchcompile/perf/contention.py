"""CPU contention while a case was timed: whether the machine was busy enough to move the ratio.

Interleaving cancels a machine that is slow throughout, not one that is
contended: under oversubscription the neighbours evict the caches and take
the core in the middle of blocks, and the interleaved ratio itself moves
(3.01x -> 2.21x was measured at load 7-9 on 2 cores). A `Probe` reads, over
exactly the window a pass was timed in, the signals Linux gives without
hardware counters:

- `cpu_share`: the timing thread's CPU time over the wall time (below 1: it
  was runnable but another task had the core; not read on GPU, where
  synchronising sleeps);
- `pressure`: `/proc/pressure/cpu` "some": the share of the window in which
  any task on the machine waited for a CPU;
- `preemptions_per_s`: the process's involuntary context switches
  (`resource.getrusage`) per second;
- `steal`: the share of the machine's CPU time its hypervisor gave to others
  (`/proc/stat`);
- `load`: the 1-minute load average per CPU (reported only: it lags a minute
  and counts this run's own compile workers);
- `calibration_s`: the best time of a fixed pure-Python kernel, compared with
  the baseline's on the same machine (a slowdown that hides from the
  scheduler: a hypervisor's other guests, a lower clock).

A signal the platform lacks is None and decides nothing. The thresholds
below flag a window as contended; the gate then never FAILs on it.
"""

from __future__ import annotations

import math
import os
import resource
import time
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any

from .stats import round_sig

#: the timing thread ran less than this share of the wall time
MIN_CPU_SHARE = 0.90
#: some task waited for a CPU more than this share of the window
MAX_PRESSURE = 0.20
#: preempted more often than this per second
MAX_PREEMPTIONS_PER_S = 50.0
#: the hypervisor took more than this share of the machine's CPU time
MAX_STEAL = 0.10
#: the calibration kernel ran this much slower than when the baseline was recorded
MAX_CALIBRATION_SLOWDOWN = 1.25

PRESSURE_FILE = "/proc/pressure/cpu"
STAT_FILE = "/proc/stat"
CALIBRATION_REPEATS = 3


@dataclass(frozen=True)
class Contention:
    """The contention signals of one timed window (or the worst of several)."""

    cpu_share: float | None = None
    pressure: float | None = None
    preemptions_per_s: float | None = None
    steal: float | None = None
    load: float | None = None
    calibration_s: float | None = None

    def reasons(self) -> list[str]:
        """Each signal past its threshold, worded for the gate table; empty when quiet."""
        found = []
        if self.cpu_share is not None and self.cpu_share < MIN_CPU_SHARE:
            found.append(f"the timing thread ran {self.cpu_share:.0%} of the time")
        if self.pressure is not None and self.pressure > MAX_PRESSURE:
            found.append(f"CPU pressure {self.pressure:.0%}")
        if self.preemptions_per_s is not None and self.preemptions_per_s > MAX_PREEMPTIONS_PER_S:
            found.append(f"{self.preemptions_per_s:.0f} preemptions/s")
        if self.steal is not None and self.steal > MAX_STEAL:
            found.append(f"hypervisor steal {self.steal:.0%}")
        if found and self.load is not None:
            found.append(f"load {self.load:.1f} per CPU")
        return found

    def slowdown_since(self, baseline: Contention) -> float | None:
        """How much slower the calibration kernel ran now than for the baseline."""
        if not self.calibration_s or not baseline.calibration_s:
            return None
        return self.calibration_s / baseline.calibration_s

    def to_json(self) -> dict[str, float]:
        return {k: round_sig(v, 3) for k, v in asdict(self).items() if v is not None}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Contention:
        """As stored; a value that is not a finite non-negative number is left out."""
        return cls(**{f.name: _number(data.get(f.name)) for f in fields(cls)})


def worst(windows: Iterable[Contention]) -> Contention:
    """The most contended value of each signal over several windows (the passes of a case)."""
    merged = Contention()
    for window in windows:
        merged = Contention(
            _pick(min, merged.cpu_share, window.cpu_share),
            _pick(max, merged.pressure, window.pressure),
            _pick(max, merged.preemptions_per_s, window.preemptions_per_s),
            _pick(max, merged.steal, window.steal),
            _pick(max, merged.load, window.load),
            _pick(max, merged.calibration_s, window.calibration_s),
        )
    return merged


def describe(now: Contention | None, baseline: Contention | None, same_machine: bool) -> str:
    """'CPU contention: ...' when this run's or the baseline's timing was contended, else ''."""
    parts = []
    if now is not None:
        parts += now.reasons()
        slowdown = now.slowdown_since(baseline) if baseline and same_machine else None
        if slowdown is not None and slowdown > MAX_CALIBRATION_SLOWDOWN:
            parts.append(f"a fixed kernel ran {slowdown:.2f}x slower than for the baseline")
    if baseline is not None and baseline.reasons():
        parts.append(f"baseline recorded under contention ({', '.join(baseline.reasons())})")
    return f"CPU contention: {', '.join(parts)}" if parts else ""


class Probe:
    """Reads the signals at the start and end of a timed window (`with Probe() as probe:`).

    `thread_time=False` leaves out `cpu_share` (a GPU pass sleeps in `synchronize`).
    """

    def __init__(self, thread_time: bool = True) -> None:
        self.thread_time = thread_time
        self.result = Contention()
        self._start: tuple[float, float, int, int | None, tuple[int, int] | None] | None = None
        self._calibration: list[float] = []

    def __enter__(self) -> Probe:
        self._calibration.append(calibrate())
        self._start = _counters()
        return self

    def __exit__(self, *exc: object) -> None:
        end = _counters()
        self._calibration.append(calibrate())
        assert self._start is not None
        self.result = _between(self._start, end, self.thread_time, min(self._calibration))


def calibrate() -> float:
    """The best of a few runs of a fixed pure-Python kernel (about a millisecond), in seconds."""
    best = math.inf
    for _ in range(CALIBRATION_REPEATS):
        started = time.perf_counter()
        sum(i * i for i in range(20_000))
        best = min(best, time.perf_counter() - started)
    return best


def _counters() -> tuple[float, float, int, int | None, tuple[int, int] | None]:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return time.perf_counter(), time.thread_time(), usage.ru_nivcsw, _pressure(), _cpu_times()


def _between(
    start: tuple[float, float, int, int | None, tuple[int, int] | None],
    end: tuple[float, float, int, int | None, tuple[int, int] | None],
    thread_time: bool,
    calibration: float,
) -> Contention:
    wall = max(end[0] - start[0], 1e-9)
    pressure = None if start[3] is None or end[3] is None else (end[3] - start[3]) / 1e6 / wall
    steal = None
    if start[4] is not None and end[4] is not None:
        total = end[4][0] - start[4][0]
        steal = (end[4][1] - start[4][1]) / total if total > 0 else 0.0
    cpus = os.cpu_count() or 1
    return Contention(
        cpu_share=min((end[1] - start[1]) / wall, 1.0) if thread_time else None,
        pressure=None if pressure is None else min(max(pressure, 0.0), 1.0),
        preemptions_per_s=(end[2] - start[2]) / wall,
        steal=steal,
        load=os.getloadavg()[0] / cpus if hasattr(os, "getloadavg") else None,
        calibration_s=calibration,
    )


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


def _pick(choose: Any, a: float | None, b: float | None) -> float | None:
    present = [v for v in (a, b) if v is not None]
    return choose(present) if present else None


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) and value >= 0 else None
