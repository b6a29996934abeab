"""What one benchmark case measured, as plain data.

A `CaseRecord` goes from the test that measured it to the session as a
Python object (benchmarks never run in xdist workers, so the process that
measures a case reports it), and as JSON into baseline files and reports,
read back from a baseline file into the gate (`to_json` and `from_json`, one
writer and one reader; the reader takes the counters' old names too,
`counters.LEGACY_NAMES`). It holds no torch objects, so the gate and the
baseline store are testable without torch.

Metric names and what kind of quantity each is live here, beside the
record, so the gate, the tables and the docs read one list.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..common.counters import COUNTER_LABELS, LEGACY_NAMES
from .contention import Contention
from .facts.block import CompileBlock
from .stats import FieldError, Summary


class Kind(enum.Enum):
    """How a metric may be compared with a baseline."""

    RATIO = "ratio"  # eager/compiled measured interleaved: gated on any machine
    ABSOLUTE = "absolute"  # GPU kernel time: gated on the same machine, with statistics
    EXACT = "exact"  # peak memory in bytes: deterministic, equal or not, on the same machine
    WALL = "wall"  # CPU wall time per call: too noisy across runs, gated only when asked
    COMPILE = "compile"  # compile CPU time of fresh processes: same machine, its own threshold
    INFO = "info"  # compile time, first-call latency: reported, never gated


@dataclass(frozen=True)
class MetricInfo:
    """A metric's kind, its unit for display and whether higher is better."""

    kind: Kind
    unit: str  # "x", "s", "bytes"
    higher_is_better: bool = False


METRICS: dict[str, MetricInfo] = {
    "speedup": MetricInfo(Kind.RATIO, "x", higher_is_better=True),
    "gpu_speedup": MetricInfo(Kind.RATIO, "x", higher_is_better=True),
    "eager_s": MetricInfo(Kind.WALL, "s"),
    "compiled_s": MetricInfo(Kind.WALL, "s"),
    "gpu_eager_s": MetricInfo(Kind.ABSOLUTE, "s"),
    "gpu_compiled_s": MetricInfo(Kind.ABSOLUTE, "s"),
    "gpu_peak_eager_bytes": MetricInfo(Kind.EXACT, "bytes"),
    "gpu_peak_compiled_bytes": MetricInfo(Kind.EXACT, "bytes"),
    "gpu_eager_call_s": MetricInfo(Kind.INFO, "s"),
    "gpu_compiled_call_s": MetricInfo(Kind.INFO, "s"),
    "compile_s": MetricInfo(Kind.INFO, "s"),
    "first_call_s": MetricInfo(Kind.INFO, "s"),
    "cold_cpu_s": MetricInfo(Kind.COMPILE, "s"),
    "warm_cpu_s": MetricInfo(Kind.COMPILE, "s"),
    "cold_wall_s": MetricInfo(Kind.INFO, "s"),
    "warm_wall_s": MetricInfo(Kind.INFO, "s"),
    "cold_frame_compile_s": MetricInfo(Kind.INFO, "s"),
    "warm_frame_compile_s": MetricInfo(Kind.INFO, "s"),
}

#: GPU kernel-time figures, measured by the method named in `settings["gpu_timing"]`:
#: `REPLAY` (eager and compiled each captured in a CUDA graph and replayed, as
#: `triton.testing.do_bench_cudagraph`) when both can be captured, else `EVENTS`
#: (CUDA events around each call, after an L2 flush, as `triton.testing.do_bench`).
#: With `REPLAY`, the per-call event times are kept as `gpu_*_call_s`, reported.
GPU_TIMES = ("gpu_eager_s", "gpu_compiled_s", "gpu_speedup")
#: figures timed by the CPU's clock in the interleaved loop: what CPU contention can move.
CPU_TIMES = ("speedup", "eager_s", "compiled_s")
#: compile CPU time (process and children) of the fresh-process compiles, by side
COMPILE_TIMES = ("cold_cpu_s", "warm_cpu_s")
REPLAY = "cudagraph"
EVENTS = "events"
TIMING_LABELS = {REPLAY: "CUDA-graph replay", EVENTS: "per-call events"}

#: deterministic counters, compared exactly (never with statistics), by attribute name.
COUNTERS = tuple(COUNTER_LABELS)


@dataclass(frozen=True)
class CaseRecord:
    """One case: its metrics (name -> Summary), counters, and how it was run.

    `settings` says what was measured (backend, mode, threads, rounds ...;
    on GPU `gpu_timing`, `gpu_launch_bound` and `gpu_inductor_cudagraphs`:
    see `gpu_timing`), `notes` why something was not (e.g. "gpu: CUDA is not
    available").
    `kernels` holds per-Triton-kernel times (name -> Summary) on GPU.
    `samples` holds the raw per-round seconds of `eager_s` and `compiled_s`
    for reports; baseline files leave them out (`to_json(samples=False)`).
    `contention` is what the machine was doing while the CPU figures were
    timed (None in records from before it was measured). `compile` holds
    the fresh-process compiles' facts (`compile_time=True`; stored as
    `compile_time`); their CPU, wall and Dynamo seconds are `metrics`
    (`facts.block.FIGURES`), each run's in `samples`.
    """

    metrics: Mapping[str, Summary]
    counters: Mapping[str, int]
    settings: Mapping[str, object] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    kernels: Mapping[str, Summary] = field(default_factory=dict)
    samples: Mapping[str, tuple[float, ...]] = field(default_factory=dict)
    contention: Contention | None = None
    compile: CompileBlock | None = None

    def to_json(self, samples: bool = True) -> dict[str, object]:
        data: dict[str, object] = {
            "counters": dict(self.counters),
            "metrics": {name: s.to_json() for name, s in self.metrics.items()},
            "settings": dict(self.settings),
        }
        if self.kernels:
            data["kernels"] = {name: s.to_json() for name, s in self.kernels.items()}
        if self.notes:
            data["notes"] = list(self.notes)
        if samples and self.samples:
            data["samples"] = {name: list(values) for name, values in self.samples.items()}
        if self.contention is not None:
            data["contention"] = self.contention.to_json()
        if self.compile is not None:
            data[COMPILE_FIELD] = self.compile.to_json()
        return data

    def gpu_timing(self) -> str | None:
        """How the GPU kernel times were measured (`REPLAY` or `EVENTS`); None
        without them. Records from before the method was recorded used events."""
        if not any(name in self.metrics for name in GPU_TIMES):
            return None
        method = self.settings.get("gpu_timing")
        return method if isinstance(method, str) else EVENTS

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> CaseRecord:
        """A record as stored (a baseline file, a report); a `RecordError` names the damaged field."""
        if not isinstance(data, Mapping):
            raise RecordError("", f"{data!r} is not an object with metrics and counters")
        settings = _section(data, "settings", required=False)
        _check_settings(settings)
        return cls(
            metrics=_summaries(data, "metrics", required=True),
            counters={
                LEGACY_NAMES.get(name, name): _count(f"counters.{name}", v)
                for name, v in _section(data, "counters", required=True).items()
            },
            settings=dict(settings),
            notes=tuple(str(note) for note in _sequence(data, "notes")),
            kernels=_summaries(data, "kernels", required=False),
            samples={
                name: tuple(_sequence(data["samples"], name, "samples."))
                for name in _section(data, "samples", required=False)
            },
            contention=Contention.from_json(_section(data, "contention", required=False))
            if "contention" in data
            else None,
            compile=_compile_block(data),
        )


#: the field a stored record keeps its compile-time block in
COMPILE_FIELD = "compile_time"


def _compile_block(data: Mapping[str, Any]) -> CompileBlock | None:
    if COMPILE_FIELD not in data:
        return None
    try:
        return CompileBlock.from_json(_section(data, COMPILE_FIELD, required=True))
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise RecordError(COMPILE_FIELD, f"damaged ({type(exc).__name__}: {exc})") from None


#: a stored record's damaged field (its dotted path and what is wrong with it)
RecordError = FieldError

#: the largest spread between passes a record may hold (log space: e^10 is a
#: factor of 22,000; real records hold less than 1)
MAX_NOISE = 10.0


def _section(data: Mapping[str, Any], name: str, required: bool) -> Mapping[str, Any]:
    if name not in data and not required:
        return {}
    value = data.get(name)
    if not isinstance(value, Mapping):
        raise RecordError(name, f"{value!r} is not an object" if name in data else "missing")
    return value


def _summaries(data: Mapping[str, Any], name: str, required: bool) -> dict[str, Summary]:
    found = {}
    for metric, summary in _section(data, name, required).items():
        try:
            found[metric] = Summary.from_json(summary)
        except FieldError as exc:
            raise exc.within(f"{name}.{metric}") from None
    return found


def _count(field: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise RecordError(field, f"{value!r} is not a count (a non-negative integer)")
    return value


def _sequence(data: Mapping[str, Any], name: str, prefix: str = "") -> list[Any]:
    value = data.get(name, [])
    if not isinstance(value, (list, tuple)):
        raise RecordError(prefix + name, f"{value!r} is not a list")
    return list(value)


def _check_settings(settings: Mapping[str, object]) -> None:
    """The settings a later run reads back: calls per block and the noise between passes."""
    iterations = settings.get("iterations")
    if iterations is not None:
        _count("settings.iterations", iterations)
    noise = settings.get("noise")
    if noise is None:
        return
    if not isinstance(noise, Mapping):
        raise RecordError("settings.noise", f"{noise!r} is not an object")
    for metric, value in noise.items():
        if (
            isinstance(value, bool)
            or not isinstance(value, (int, float))
            or not 0 <= value <= MAX_NOISE
        ):
            raise RecordError(
                f"settings.noise.{metric}", f"{value!r} is not a spread between 0 and {MAX_NOISE:g}"
            )


def left_out_note(left: int, total: int) -> str:
    """The note of a record whose figures leave out contended passes (read by `passes_left_out`)."""
    return f"timing: {left} of {total} passes left out (CPU contention)"


_LEFT_OUT = re.compile(r"timing: (\d+) of (\d+) passes left out \(CPU contention\)")


def passes_left_out(record: CaseRecord) -> tuple[int, int] | None:
    """(left out, of) when the record's figures leave out contended passes, else None."""
    for note in record.notes:
        match = _LEFT_OUT.fullmatch(note)
        if match:
            return int(match[1]), int(match[2])
    return None


@dataclass(frozen=True)
class MeasuredCase:
    """A case as the session collected it: where it ran, what it measured, and the threshold
    its gate judges by (the marker's, else the run's)."""

    key: str
    nodeid: str
    record: CaseRecord
    threshold: float | None = None
