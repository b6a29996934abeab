"""`compile_time=True` driven as a user drives it: record, gate unchanged, plant a per-process change.

The model is two Linear layers under `no_grad` on Inductor (extern matmuls:
no C++ kernel to build, so a cold compile is seconds), one cold and one warm
compile a side (`torchcompile_perf_compile_runs = 1`: the facts are exact,
and CPU time has no interval, so it is INCONCLUSIVE, never FAIL). The planted
change is the regression class a warm start cannot hit: a value that differs
in every process (here a layer's width, from a counter file each process
bumps) reaches the graph, so the warm start's key is not the cold start's.
"""

from __future__ import annotations

import json

import pytest

INI = """
[pytest]
torchcompile_perf_max_time = 0.1
torchcompile_perf_compile_runs = 1
"""

TEST = """
from pathlib import Path

import pytest, torch

WIDTH = {width}


def width():
    if WIDTH:
        return WIDTH
    counter = Path(__file__).with_name("processes.txt")  # a new width in every process
    seen = int(counter.read_text()) if counter.exists() else 0
    counter.write_text(str(seen + 1))
    return 16 + seen


@pytest.mark.compile_benchmark(compile_time=True)
def test_m(compile_benchmark):
    torch.manual_seed(0)
    wide = width()
    model = torch.nn.Sequential(torch.nn.Linear(16, wide), torch.nn.Linear(wide, 4))
    with torch.no_grad():
        result = compile_benchmark(model, torch.randn(8, 16))
    assert result.compile_time.runs == 1
    assert result.compile_time.warm_facts["codegen"] == 0 or not WIDTH
    assert result.compile_time.cold_cpu > 0
"""
CASE = "test_m.py::test_m::case_0"


@pytest.fixture(autouse=True)
def no_step_summary(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)


def test_record_then_a_per_process_value_fails_naming_what_moved(
    pytester: pytest.Pytester,
) -> None:
    """Unchanged runs pass on the facts (the cold side below, and `test_compile_time_rules.py`;
    `benchmarks/compile_time.py` gates unchanged runs repeatedly): a gate run costs two more
    fresh processes, so this test gates once, on the planted change."""
    pytester.makeini(INI)
    pytester.makepyfile(test_m=TEST.format(width=16))
    result = pytester.runpytest(
        "--torchcompile-perf-update-baseline",
        "--torchcompile-perf-report=report.json",
        "--torchcompile-perf-benchmark-json=bench.json",
    )
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            "case*compile s*first call s*cold CPU s*warm CPU s",
            f"{CASE} *x *",
            "baseline written: perf-baselines/*.json (1 cases)",
        ]
    )
    (baseline,) = (pytester.path / "perf-baselines").glob("*.json")
    stored = json.loads(baseline.read_text())["cases"][CASE]
    warm = stored["compile_time"]["warm"]["facts"]
    assert (warm["fx_graph.hit"], warm["fx_graph.miss"], warm["codegen"]) == (1, 0, 0)
    assert stored["compile_time"]["cold"]["facts"]["fx_graph.miss"] == 1
    assert {"cold_cpu_s", "warm_cpu_s", "cold_frame_compile_s"} <= set(stored["metrics"])
    report = json.loads((pytester.path / "report.json").read_text())["cases"][CASE]
    assert len(report["samples"]["cold_cpu_s"]) == 1
    bench = json.loads((pytester.path / "bench.json").read_text())["benchmarks"]
    assert {b["param"] for b in bench} == {"eager", "compiled", "cold-compile", "warm-compile"}

    pytester.makepyfile(test_m=TEST.format(width=0))
    result = pytester.runpytest("--torchcompile-perf-gate")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            f"*perf gate FAIL* for {CASE}: warm start missed the FX graph cache (1 of 1 lookups)*"
            ": example_inputs[[]*[]]: *Size([[]* -> *Size([[]*FAIL*",
            "*compile facts (warm): *warm start: *FX graph cache hits 1 -> 0*",
            f"{CASE}*compile facts (cold)*FX 0/1/0 AOT 0/1/0*FX 0/1/0 AOT 0/1/0*exact*PASS",
            f"{CASE}*compile facts (warm)*FX 1/0/0 AOT 1/0/0*FX 0/1/0 AOT 0/1/0*warm start missed*FAIL",
            f"{CASE}*cold_cpu_s*too few runs*INCONCLUSIVE*",
        ]
    )
    result.stdout.no_fnmatch_line("*Traceback*")
