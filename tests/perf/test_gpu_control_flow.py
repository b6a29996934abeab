"""The GPU measurement's control flow on a simulated device, on CPU.

No GPU here: the code in perf/gpu.py that only a GPU runs (capture, replay,
events, peaks) is driven against a stand-in for the few `torch.cuda` calls
it makes, with a simulated clock. This checks our control flow (which side
is captured, replays alternate ABBA, calls per graph from the estimate, a
failed capture leaves a note, reduce-overhead is never re-captured), not
CUDA. Every stand-in replaces an attribute that exists in the real
`torch.cuda` (monkeypatch refuses missing ones), and the methods the code
calls on its objects are checked to exist on torch's own classes. How well
it measures is for tests/perf/test_gpu_figures.py and benchmarks/gate_quality.py --gpu
on a GPU.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import pytest

from pytest_torchcompile.perf import gpu
from pytest_torchcompile.perf.record import EVENTS, REPLAY
from tests.conftest import REPO

torch = pytest.importorskip("torch")


@dataclass
class Device:
    """A GPU with a clock: a call costs `per_call` seconds on its own (the
    launch path included) and `in_graph` when replayed from a graph."""

    now: float = 0.0
    capturing: list[str] | None = None
    log: list[str] = field(default_factory=list)
    in_graph: dict[str, float] = field(default_factory=dict)

    def side(self, name: str, per_call: float, in_graph: float, capturable: bool = True):
        self.in_graph[name] = in_graph

        def call() -> None:
            if self.capturing is not None:
                if not capturable:
                    raise RuntimeError("operation not permitted when stream is capturing")
                self.capturing.append(name)
            else:
                self.now += per_call

        return call


class FakeEvent:
    def __init__(self, device: Device) -> None:
        self.device, self.t = device, 0.0

    def record(self) -> None:
        self.t = self.device.now

    def elapsed_time(self, end: FakeEvent) -> float:
        return (end.t - self.t) * 1e3  # milliseconds, as torch's


class FakeGraph:
    def __init__(self, device: Device) -> None:
        self.device, self.ops = device, []

    def replay(self) -> None:
        self.device.log.append("replay:" + ",".join(sorted(set(self.ops))))
        self.device.now += sum(self.device.in_graph[op] for op in self.ops)


class FakeStream:
    def wait_stream(self, other: Any) -> None:
        pass


@pytest.fixture
def device(monkeypatch: pytest.MonkeyPatch) -> Device:
    dev = Device()

    @contextmanager
    def stream(s: Any) -> Iterator[None]:
        yield

    @contextmanager
    def graph(g: FakeGraph) -> Iterator[None]:
        dev.capturing = g.ops
        try:
            yield
        finally:
            dev.capturing = None

    for name in ("replay",):
        assert hasattr(torch.cuda.CUDAGraph, name)
    for name in ("record", "elapsed_time"):
        assert hasattr(torch.cuda.Event, name)
    assert hasattr(torch.cuda.Stream, "wait_stream")
    fakes = {
        "Event": lambda enable_timing=False: FakeEvent(dev),
        "CUDAGraph": lambda: FakeGraph(dev),
        "Stream": FakeStream,
        "current_stream": lambda: FakeStream(),
        "stream": stream,
        "graph": graph,
        "synchronize": lambda: None,
        "reset_peak_memory_stats": lambda: None,
        "memory_allocated": lambda: 1024,
        "max_memory_allocated": lambda: 1024 + 2048,
    }
    for name, fake in fakes.items():
        monkeypatch.setattr(torch.cuda, name, fake)  # raises if torch.cuda has no such attribute

    class Flush:
        def zero_(self) -> None:
            dev.now += 5e-6

    monkeypatch.setattr(gpu, "l2_flush_buffer", Flush)
    monkeypatch.setattr(gpu, "REPLAY_GRAPH_MS", 1.0)
    return dev


def test_both_sides_replayed_alternating_and_launch_bound_recognised(device: Device) -> None:
    eager = device.side("eager", per_call=30e-6, in_graph=10e-6)
    compiled = device.side("compiled", per_call=40e-6, in_graph=8e-6)
    m = gpu.GpuMeasurement()
    for _ in range(3):
        m.add_pass(eager, compiled, "", 0.95, rep_ms=2.0)
    assert m.notes == [] and not m.broken
    assert m.method == REPLAY and len(m.passes) == 3
    timings = m.timings(0.95, m.noise())
    assert timings.metrics["gpu_eager_s"].median == pytest.approx(10e-6)
    assert timings.metrics["gpu_compiled_s"].median == pytest.approx(8e-6)
    assert timings.metrics["gpu_speedup"].median == pytest.approx(1.25)
    assert timings.metrics["gpu_eager_call_s"].median == pytest.approx(30e-6)
    assert timings.metrics["gpu_peak_eager_bytes"].median == 2048  # measured once, whole bytes
    assert m.settings() == {
        "gpu_timing": REPLAY,
        "gpu_launch_bound": True,
        "gpu_inductor_cudagraphs": False,
    }
    replays = [entry for entry in device.log if entry.startswith("replay:")]
    timed = replays[2 : 2 + 2 * gpu.REPLAY_RETRIES]  # after the two uploads
    assert timed[:4] == ["replay:eager", "replay:compiled", "replay:compiled", "replay:eager"]
    assert len(replays) == 3 * (2 + 2 * gpu.REPLAY_RETRIES)


def test_calls_per_graph_fill_the_graph_time(device: Device) -> None:
    fn = device.side("eager", per_call=100e-6, in_graph=100e-6)
    captured = gpu.capture(fn, graph_ms=1.0)
    assert captured.calls == 10 and len(captured.graph.ops) == 10
    assert (
        gpu.capture(device.side("tiny", per_call=0.0, in_graph=0.0), graph_ms=1.0).calls
        == gpu.MAX_CALLS_PER_GRAPH
    )


def test_a_side_that_cannot_be_captured_falls_back_to_events_with_a_note(device: Device) -> None:
    eager = device.side("eager", per_call=1.7e-3, in_graph=1.67e-3)
    compiled = device.side("compiled", per_call=0.23e-3, in_graph=0.22e-3, capturable=False)
    m = gpu.GpuMeasurement()
    m.add_pass(eager, compiled, "", 0.95, rep_ms=5.0)
    m.add_pass(eager, compiled, "", 0.95, rep_ms=5.0)
    assert m.method == EVENTS and not m.broken
    assert m.notes == [
        "gpu: the compiled call could not be captured in a CUDA graph: RuntimeError: operation not permitted when stream is capturing"
    ]
    timings = m.timings(0.95, {})
    assert timings.metrics["gpu_compiled_s"].median == pytest.approx(0.23e-3)  # per-call events
    assert "gpu_compiled_call_s" not in timings.metrics
    assert (
        m.settings()["gpu_launch_bound"] is False
    )  # eager: 1.7 ms per call against 1.67 ms replayed


def test_inductor_cuda_graphs_are_never_captured_again(device: Device) -> None:
    eager = device.side("eager", per_call=30e-6, in_graph=10e-6)
    compiled = device.side("compiled", per_call=40e-6, in_graph=8e-6)
    m = gpu.GpuMeasurement(inductor_cudagraphs=True)
    m.add_pass(eager, compiled, "", 0.95, rep_ms=2.0)
    assert not any("compiled" in entry for entry in device.log)
    assert m.method == EVENTS
    assert m.settings() == {
        "gpu_timing": EVENTS,
        "gpu_launch_bound": True,
        "gpu_inductor_cudagraphs": True,
    }
    assert len([n for n in m.all_notes() if "Inductor's own CUDA graphs" in n]) == 1


def test_gate_quality_gpu_mode_says_it_needs_cuda() -> None:
    import subprocess
    import sys

    if torch.cuda.is_available():
        pytest.skip("checks the message on a machine without CUDA")
    script = REPO / "benchmarks" / "gate_quality.py"
    done = subprocess.run(
        [sys.executable, str(script), "--gpu"], capture_output=True, text=True, timeout=120
    )
    assert done.returncode != 0
    assert "gate_quality.py --gpu needs CUDA" in done.stderr and "nothing was run" in done.stderr
