"""CPU contention: what the machine was doing while a case was timed, and when it matters.

Interleaving cancels a machine that is slow throughout, not one that is
contended: neighbours take the core mid-block and evict the caches, and the
ratio itself moves. A `Probe` reads, over exactly one timed window, what
Linux gives without hardware counters: each thread's run-queue delay
(`/proc/self/task/*/schedstat`: time runnable but waiting for a CPU;
sleeping, I/O and GPU synchronisation are not waiting), CPU pressure
(`/proc/pressure/cpu` "some"), the process's involuntary context switches
(`resource.getrusage`), hypervisor steal (`/proc/stat`), the load average,
and the best time of a fixed pure-Python kernel (compared with the
baseline's on the same machine). A signal the platform lacks is None.

`Contention` holds the signals of a window (it travels in `CaseRecord`),
`reasons` says which are past their thresholds, and `contended` says which
side of a comparison they touched (`Contended`, worded for the gate), which never FAILs a CPU-timed figure measured under
contention (`gate.under_contention`).
"""

from __future__ import annotations

import math
import os
import resource
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any

from .stats import round_sig

#: a thread of this process waited for a CPU more than this share of the window
MAX_WAITING = 0.10
#: some task waited for a CPU more than this share of the window
MAX_PRESSURE = 0.20
#: preempted more often than this per second
MAX_PREEMPTIONS_PER_S = 50.0
#: the hypervisor took more than this share of the machine's CPU time
MAX_STEAL = 0.10
#: the calibration kernel ran this much slower than when the baseline was recorded
MAX_CALIBRATION_SLOWDOWN = 1.25
#: the reference compile took this much more (or this much less) CPU time than for the baseline:
#: one reference moved 12-14% (CV) from pair to pair here, so a median of five about 7%
MAX_REFERENCE_CHANGE = 1.25


@dataclass(frozen=True)
class Contention:
    """The contention signals of one timed window (or the worst of several).

    `waiting`: the largest share of the window a thread of the process was
    runnable but waiting for a CPU; `pressure`: the share in which any task
    on the machine was (`/proc/pressure/cpu` "some"); `preemptions_per_s`:
    involuntary context switches; `steal`: the hypervisor's share of CPU
    time; `load`: the load average per CPU (reported only: it lags and counts
    this run's own compile workers); `calibration_s`: a fixed kernel's best
    time; `reference_s`: the CPU seconds of a fixed compile
    (`compile_time/reference.py`), the median of a case's compile pairs.
    None: the platform lacks the signal (or the window did not measure it),
    and it decides nothing.
    """

    waiting: float | None = None
    pressure: float | None = None
    preemptions_per_s: float | None = None
    steal: float | None = None
    load: float | None = None
    calibration_s: float | None = None
    reference_s: float | None = None

    def reasons(self) -> list[str]:
        """Each signal past its threshold, worded for the gate table; empty when quiet."""
        found = []
        if self.waiting is not None and self.waiting > MAX_WAITING:
            found.append(f"waited for a CPU {self.waiting:.0%} of the time")
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


def worst_contention(windows: Iterable[Contention]) -> Contention:
    """The most contended value of each signal over several windows (the passes of a case)."""
    merged = Contention()
    for window in windows:
        merged = Contention(
            _pick(max, merged.waiting, window.waiting),
            _pick(max, merged.pressure, window.pressure),
            _pick(max, merged.preemptions_per_s, window.preemptions_per_s),
            _pick(max, merged.steal, window.steal),
            _pick(max, merged.load, window.load),
            _pick(max, merged.calibration_s, window.calibration_s),
            _pick(max, merged.reference_s, window.reference_s),
        )
    return merged


@dataclass(frozen=True)
class Contended:
    """Which timings of a comparison were contended, each with its reasons.

    `now`: this run's window (its signals, or a fixed kernel slower than for
    the baseline on the same machine); `baseline`: the baseline's, as stored.
    What to do differs: contention now is undone by measuring again on a
    quiet machine, a contended baseline by recording it again there.
    """

    now: tuple[str, ...] = ()
    baseline: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.now or self.baseline)

    def merged(self, other: Contended) -> Contended:
        """Both comparisons' reasons (a case's timing and its fresh-process compiles), each once."""
        return Contended(
            tuple(dict.fromkeys(self.now + other.now)),
            tuple(dict.fromkeys(self.baseline + other.baseline)),
        )

    def describe(self) -> str:
        """'CPU contention: ...' for the gate's rows, '' when neither side was contended."""
        parts = list(self.now)
        if self.baseline:
            parts.append(f"baseline recorded under contention ({', '.join(self.baseline)})")
        return f"CPU contention: {', '.join(parts)}" if parts else ""


def contended(now: Contention | None, baseline: Contention | None, same_machine: bool) -> Contended:
    """What was contended when this run's timing and the baseline's were taken.

    The fixed kernel's slowdown counts only on the baseline's machine: another
    CPU runs it at another speed, contended or not.
    """
    found: list[str] = []
    if now is not None:
        found += now.reasons()
        slowdown = now.slowdown_since(baseline) if baseline and same_machine else None
        if slowdown is not None and slowdown > MAX_CALIBRATION_SLOWDOWN:
            found.append(f"a fixed kernel ran {slowdown:.2f}x slower than for the baseline")
    return Contended(tuple(found), tuple(baseline.reasons()) if baseline is not None else ())


@dataclass(frozen=True)
class MachineSpeed:
    """The machine compiles at another speed than when the baseline was recorded: the reference
    compile's CPU time now and then (`compile_time/reference.py`)."""

    baseline_s: float
    now_s: float

    @property
    def slower(self) -> bool:
        return self.now_s > self.baseline_s

    def describe(self) -> str:
        how = "slower" if self.slower else "faster"
        return (
            f"this machine compiles {how} than when the baseline was recorded: a fixed compile took "
            f"{self.now_s / self.baseline_s:.2f}x its CPU time ({self.baseline_s:.2f} s -> {self.now_s:.2f} s)"
        )


def machine_changed(
    now: Contention | None, baseline: Contention | None, same_machine: bool
) -> MachineSpeed | None:
    """On the baseline's machine, the speed it compiles at now when the reference compile took more
    than `MAX_REFERENCE_CHANGE` times its CPU time for the baseline, or less than its inverse
    (None otherwise). An unchanged case's compile then moves by about as much: slower fakes a
    regression, faster hides one (`gate.at_machine_speed`). Only compile times: a speedup is a
    ratio, measured at one moment, which a machine slower throughout does not move."""
    if now is None or baseline is None or not same_machine:
        return None
    if not now.reference_s or not baseline.reference_s:
        return None
    ratio = now.reference_s / baseline.reference_s
    if 1 / MAX_REFERENCE_CHANGE <= ratio <= MAX_REFERENCE_CHANGE:
        return None
    return MachineSpeed(baseline.reference_s, now.reference_s)


def describe_contention(
    now: Contention | None, baseline: Contention | None, same_machine: bool
) -> str:
    """'CPU contention: ...' when this run's or the baseline's timing was contended, else ''."""
    return contended(now, baseline, same_machine).describe()


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


def _pick(choose: Callable[[list[float]], float], a: float | None, b: float | None) -> float | None:
    present = [v for v in (a, b) if v is not None]
    return choose(present) if present else None


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) and value >= 0 else None
