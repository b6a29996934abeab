"""GPU figures of compile_benchmark: kernel times, per-kernel times, CUDA-graph replay, peak memory.

These need a CUDA device and are skipped, with the reason, everywhere else.
On a CPU-only run the benchmark itself records why it has no GPU figures
(tests/test_bench.py checks that note).
"""

from __future__ import annotations

import json

import pytest

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.skipif(
    not torch.cuda.is_available(),
    reason="needs a CUDA GPU: kernel times, CUDA-graph replay and peak GPU memory are measured only there",
)

GPU_TEST = '''
import pytest, torch


def chain(x):
    for _ in range(4):
        x = torch.relu(x * 1.5 + 0.5) - 0.25
    return x


@pytest.mark.compile_benchmark
def test_default(compile_benchmark):
    with torch.no_grad():
        r = compile_benchmark(chain, torch.randn(1 << 22, device="cuda"))
    wanted = {"gpu_speedup", "gpu_eager_s", "gpu_compiled_s", "cudagraph_s", "gpu_peak_eager_bytes", "gpu_peak_compiled_bytes"}
    assert wanted <= set(r.gpu), r.notes
    assert r.kernel_times and all(name.startswith("triton_") for name in r.kernel_times), r.notes
    assert r.gpu["gpu_speedup"].median > 1.5  # one fused kernel against eight
    assert r.gpu["gpu_peak_compiled_bytes"].median < r.gpu["gpu_peak_eager_bytes"].median
    assert r.gpu["cudagraph_s"].median <= r.gpu["gpu_compiled_s"].median * 1.5


@pytest.mark.compile_benchmark(mode="reduce-overhead")
def test_reduce_overhead(compile_benchmark):
    with torch.no_grad():
        r = compile_benchmark(chain, torch.randn(1 << 16, device="cuda"))
    assert "cudagraph_s" not in r.gpu
    assert any("reduce-overhead" in note for note in r.notes)
'''


def test_gpu_figures_recorded_and_gated_on_the_same_machine(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\ntorchcompile_perf_max_time = 0.3\ntorchcompile_perf_threshold = 0.5\n")
    pytester.makepyfile(test_gpu=GPU_TEST)
    pytester.runpytest("--perf-update-baseline").assert_outcomes(passed=2)
    (baseline,) = (pytester.path / "perf-baselines").glob("*.json")
    data = json.loads(baseline.read_text())
    assert data["machine"]["device"] != "cpu" and data["machine"]["cuda"]
    case = data["cases"]["test_gpu.py::test_default::case_0"]
    assert case["kernels"] and "gpu_compiled_s" in case["metrics"]
    result = pytester.runpytest("--perf-gate")
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["*test_default::case_0*gpu_compiled_s*PASS", "*test_default::case_0*gpu_speedup*PASS"])
