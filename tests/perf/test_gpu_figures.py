"""GPU figures of compile_benchmark: replay and per-call kernel times, per-kernel times, peak memory.

These need a CUDA device and are skipped, with the reason, everywhere else.
On a CPU-only run the benchmark itself records why it has no GPU figures
(tests/perf/test_benchmark_workflow.py checks that note); the gate's GPU rules are tested on
CPU with synthetic and recorded H100 numbers (tests/perf/test_gate_*.py).
Run on an H100 (torch 2.11, triton 3.6) by `benchmarks/gpu_check.sh`: all passed (docs/gpu.md).
"""

from __future__ import annotations

import json

import pytest

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.skipif(
    not torch.cuda.is_available(),
    reason="needs a CUDA GPU: kernel times, CUDA-graph replay and peak GPU memory are measured only there",
)

GPU_TEST = """
import pytest, torch


def chain(x):
    for _ in range(4):
        x = torch.relu(x * 1.5 + 0.5) - 0.25
    return x


LAUNCH_BOUND = torch.nn.Sequential(*[torch.nn.Linear(64, 64) for _ in range(6)])


@pytest.mark.compile_benchmark
def test_default(compile_benchmark):
    with torch.no_grad():
        r = compile_benchmark(chain, torch.randn(1 << 24, device="cuda"))
    wanted = {"gpu_speedup", "gpu_eager_s", "gpu_compiled_s", "gpu_eager_call_s", "gpu_compiled_call_s",
              "gpu_peak_eager_bytes", "gpu_peak_compiled_bytes"}
    assert wanted <= set(r.gpu), r.notes
    assert r.record.settings["gpu_timing"] == "cudagraph", r.notes
    assert r.record.settings["gpu_launch_bound"] is False, r.notes
    assert r.kernel_times and all(name.startswith("triton_") for name in r.kernel_times), r.notes
    assert r.gpu["gpu_speedup"].median > 1.5  # one fused kernel against eight
    assert r.gpu["gpu_peak_compiled_bytes"].median < r.gpu["gpu_peak_eager_bytes"].median
    assert isinstance(r.gpu["gpu_peak_eager_bytes"].median, int)
    # 64 MiB in, 64 MiB out (beyond the L2): bandwidth-bound, so replay and flushed per-call events agree
    ratio = r.gpu["gpu_compiled_call_s"].median / r.gpu["gpu_compiled_s"].median
    assert 0.8 < ratio < 1.5, ratio


@pytest.mark.compile_benchmark
def test_launch_bound(compile_benchmark):
    with torch.no_grad():
        r = compile_benchmark(LAUNCH_BOUND.cuda(), torch.randn(4, 64, device="cuda"))
    assert r.record.settings["gpu_timing"] == "cudagraph", r.notes
    assert r.record.settings["gpu_launch_bound"] is True, r.notes
    assert any("launch-bound" in note for note in r.notes)


@pytest.mark.compile_benchmark(mode="reduce-overhead")
def test_reduce_overhead(compile_benchmark):
    with torch.no_grad():
        r = compile_benchmark(LAUNCH_BOUND.cuda(), torch.randn(4, 64, device="cuda"))
    assert r.record.settings["gpu_timing"] == "events"
    assert r.record.settings["gpu_inductor_cudagraphs"] is True
    assert "gpu_compiled_call_s" not in r.gpu
    assert any("Inductor's own CUDA graphs" in note for note in r.notes)
"""


def test_gpu_figures_recorded_and_gated_on_the_same_machine(pytester: pytest.Pytester) -> None:
    pytester.makeini(
        "[pytest]\ntorchcompile_perf_max_time = 0.3\ntorchcompile_perf_threshold = 0.5\n"
    )
    pytester.makepyfile(test_gpu=GPU_TEST)
    pytester.runpytest("--torchcompile-perf-update-baseline").assert_outcomes(passed=3)
    (baseline,) = (pytester.path / "perf-baselines").glob("*.json")
    data = json.loads(baseline.read_text())
    assert data["machine"]["device"] != "cpu" and data["machine"]["cuda"]
    case = data["cases"]["test_gpu.py::test_default::case_0"]
    assert case["kernels"] and "gpu_compiled_s" in case["metrics"]
    assert case["settings"]["gpu_timing"] == "cudagraph"
    assert {"gpu_eager_s", "gpu_compiled_s", "gpu_speedup"} <= set(
        case["settings"]["noise"]
    )  # 5 passes
    result = pytester.runpytest("--torchcompile-perf-gate")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    result.stdout.fnmatch_lines(
        [
            "*test_default::case_0*gpu_compiled_s*CUDA-graph replay*PASS*",
            "*test_default::case_0*gpu_speedup*CUDA-graph replay*PASS*",
            "*test_default::case_0*gpu_peak_compiled_bytes*exact*PASS*",
            "*test_reduce_overhead::case_0*gpu_compiled_s*not gated: Inductor's CUDA graphs*",
        ]
    )
