"""Benchmarks and the perf gate driven as a user drives them: record, gate, plant a regression.

The model is `torch.sin` compiled with a backend defined in the test file,
which sleeps `DELAY` seconds per call: a planted regression of the compiled
side that leaves eager, the graph and the counters as they were. The ini
keeps timings short and the threshold wide (80%: a PASS needs the whole
interval above -80%), so unchanged code passes on a loaded machine while the
planted ~100x slowdown (-99%) fails every time.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.conftest import tree_digest

#: the gate judged as on a quiet machine: CI's own workers load it, which makes a PASS
#: INCONCLUSIVE (test_gate_under_contention.py holds that rule)
INI = """
[pytest]
torchcompile_perf_max_time = 0.2
torchcompile_perf_threshold = 0.8
torchcompile_perf_contention = ignore
"""

BENCH_TEST = """
import time
import pytest

DELAY = {delay}


def planted_backend(gm, example_inputs):
    def run(*args):
        if DELAY:
            time.sleep(DELAY)
        return gm(*args)
    return run


@pytest.mark.compile_benchmark(backend=planted_backend)
def test_m(compile_benchmark):
    import torch

    result = compile_benchmark(torch.sin, torch.randn(64))
    assert result.case == "case_0" and result.threads >= 1
    assert result.rounds >= 10 and result.iterations >= 1
    assert result.eager.min <= result.eager.median <= result.eager.q3
    assert result.speedup.ci_low <= result.speedup.median <= result.speedup.ci_high
    assert result.speedup == result.speedup.median and result.speedup > 0  # compares as a number
    assert f"{{result.eager:.3g}}" == f"{{result.eager.median:.3g}}"
    assert 0 < result.compile_seconds <= result.first_call_seconds
    assert (result.graph_count, result.graph_break_count, result.recompile_count) == (1, 0, 0)
    assert result.gpu == {{}} and "gpu: skipped, CUDA is not available" in result.notes
"""

CASE = "test_m.py::test_m::case_0"


@pytest.fixture(autouse=True)
def no_step_summary(monkeypatch: pytest.MonkeyPatch) -> None:
    """Inner runs must not append to a real CI job's summary."""
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)


def bench_test(delay: float = 0.0) -> str:
    return BENCH_TEST.format(delay=delay)


def baseline_files(pytester: pytest.Pytester) -> list[str]:
    folder = pytester.path / "perf-baselines"
    return sorted(p.name for p in folder.glob("*.json")) if folder.exists() else []


def test_record_gate_then_planted_regression_fails_the_run(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makeini(INI)
    pytester.makepyfile(test_m=bench_test())
    result = pytester.runpytest(
        "--torchcompile-perf-update-baseline", "--torchcompile-perf-gate", "-v"
    )  # gated before the baseline exists
    result.assert_outcomes(passed=1)
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(
        [
            "test_m.py::test_m PASSED (perf gate INCONCLUSIVE)*",
            "*torch.compile benchmarks*",
            "case*eager*compiled*speedup*95% CI*compile s*first call s",
            f"{CASE} *x *",
            "perf gate: INCONCLUSIVE: the run does not fail (it would under --torchcompile-perf-gate=strict)",
            f"{CASE}*(case)*no baseline: record one with pytest --torchcompile-perf-update-baseline*INCONCLUSIVE",
            "baseline written: perf-baselines/*-1t-*.json (1 cases)",
        ]
    )
    (name,) = baseline_files(pytester)
    case = json.loads((pytester.path / "perf-baselines" / name).read_text())["cases"][CASE]
    assert case["counters"] == {
        "graph_count": 1,
        "graph_break_count": 0,
        "recompile_count": 0,
        "kernel_count": 0,
    }
    assert {"speedup", "eager_s", "compiled_s", "compile_s", "first_call_s"} <= set(case["metrics"])
    assert case["settings"]["backend"] == "planted_backend" and case["settings"]["threads"] == 1
    recorded = tree_digest(pytester.path / "perf-baselines")

    result = pytester.runpytest("--torchcompile-perf-gate")
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(
        [
            "*torch.compile perf gate*",
            "perf gate: PASS",
            "case*metric*baseline*now*change*confidence*verdict",
            f"{CASE}*counters (graphs/graph breaks/recompiles/kernels)*1/0/0/0*1/0/0/0*exact*PASS",
            f"{CASE}*speedup*x*x*%*[[]*%, *%[]]*PASS*",
            f"{CASE}*eager_s*not gated: CPU wall time",
        ]
    )

    pytester.makepyfile(test_m=bench_test(delay=0.002))
    summary = pytester.path / "step_summary.md"
    summary.write_text("earlier step\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    result = pytester.runpytest(
        "--torchcompile-perf-gate",
        "--torchcompile-perf-report=out/report.json",
        "--torchcompile-perf-benchmark-json=out/bench.json",
        "--junitxml=out/junit.xml",
        # a loaded machine would make it INCONCLUSIVE (test_gate_under_contention.py): here the FAIL path
        "-o",
        "torchcompile_perf_contention=ignore",
    )
    result.assert_outcomes(failed=1)  # the FAIL fails its own test
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    verdict = (
        f"perf gate FAIL (re-measured) for {CASE}: speedup *x -> *x (-9?.?%, [[]*%, *%[]]) FAIL"
    )
    result.stdout.fnmatch_lines(
        [
            verdict,
            "if the new numbers are intended: pytest --torchcompile-perf-update-baseline test_m.py::test_m",
            "perf gate: FAIL",
            f"{CASE}*speedup*x*x*-9?.?%*FAIL (re-measured)",
            "if the new numbers are intended, update the baseline: pytest --torchcompile-perf-update-baseline test_m.py::test_m",
            "perf report written: out/report.json",
            "FAILED test_m.py::test_m - Failed: perf gate FAIL*",
        ]
    )
    result.stdout.no_fnmatch_line("*Traceback*")
    assert (
        tree_digest(pytester.path / "perf-baselines") == recorded
    )  # gating never writes a baseline

    junit = (pytester.path / "out/junit.xml").read_text()
    assert (
        '<failure message="Failed: perf gate FAIL (re-measured) for test_m.py::test_m::case_0: speedup'
        in junit
    )
    assert '<property name="perf_gate" value="perf gate FAIL' in junit
    assert '<property name="torchcompile' not in junit  # the plugin's own data stays off them

    markdown = summary.read_text()
    assert markdown.startswith("earlier step\n### perf gate: FAIL\n")
    assert "| case | metric | baseline | now | change | confidence | verdict |" in markdown
    assert f"| {CASE} | speedup |" in markdown and "FAIL (re-measured) |" in markdown

    report = json.loads((pytester.path / "out/report.json").read_text())
    assert report["verdict"] == "FAIL"
    assert report["verdicts"][CASE] == {"verdict": "FAIL", "remeasured": True}
    speedup = next(r for r in report["rows"] if r["metric"] == "speedup")
    assert speedup["verdict"] == "FAIL" and speedup["change"] < -0.5
    assert (
        len(report["cases"][CASE]["samples"]["compiled_s"])
        == report["cases"][CASE]["metrics"]["compiled_s"]["n"]
    )

    compare = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest_benchmark",
            "compare",
            str(pytester.path / "out/bench.json"),
        ],
        capture_output=True,
        text=True,
        cwd=pytester.path,
    )
    assert compare.returncode == 0, compare.stderr
    cpu = json.loads((pytester.path / "out/bench.json").read_text())["machine_info"]["cpu"]
    assert isinstance(cpu, dict) and cpu["brand_raw"]  # as pytest-benchmark writes it
    assert "test_m[case_0-compiled]" in compare.stdout and "test_m[case_0-eager]" in compare.stdout


def test_strict_fails_without_baseline_and_another_machines_baseline_gates_the_ratio_only(
    pytester: pytest.Pytester,
) -> None:
    pytester.makeini(INI)
    pytester.makepyfile(test_m=bench_test())
    result = pytester.runpytest(
        "--torchcompile-perf-gate=strict", "--torchcompile-perf-report=test_m.py/report.json"
    )  # a file is no folder
    result.assert_outcomes(failed=1)  # strict: the INCONCLUSIVE fails its own test
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "perf gate: INCONCLUSIVE: the run fails (--torchcompile-perf-gate=strict)",
            "if the new numbers are intended, update the baseline: pytest --torchcompile-perf-update-baseline test_m.py::test_m",
            "error: *Error: *test_m.py*",
        ]
    )
    result.stdout.no_fnmatch_line("*INTERNALERROR*")
    assert baseline_files(pytester) == []

    pytester.runpytest("--torchcompile-perf-update-baseline").assert_outcomes(passed=1)
    (first,) = baseline_files(pytester)
    before = (pytester.path / "perf-baselines" / first).read_bytes()
    # two threads: another fingerprint, as another machine would be
    result = pytester.runpytest(
        "--torchcompile-perf-gate",
        "--torchcompile-perf-update-baseline",
        "-o",
        "torchcompile_perf_threads=2",
    )
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(
        [
            f"{CASE}*speedup*PASS",
            f"{CASE}*compiled_s*not gated: other machine ({first})",
            "baseline written: perf-baselines/*-2t-*.json (1 cases)",
        ]
    )
    assert len(baseline_files(pytester)) == 2
    assert (pytester.path / "perf-baselines" / first).read_bytes() == before


def test_xdist_workers_skip_benchmarks_and_gating_under_n_is_refused(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_m=bench_test())
    result = pytester.runpytest("-n", "1", "-rs")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(
        [
            "1 compile_benchmark test(s): compile_benchmark does not run in pytest-xdist workers*run benchmarks in a separate run without -n",
            "SKIPPED*compile_benchmark does not run in pytest-xdist workers*",
        ]
    )
    result = pytester.runpytest("-n", "1", "--torchcompile-perf-gate")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "ERROR: --torchcompile-perf-gate and --torchcompile-perf-update-baseline need benchmarks to run*run them with -n 0*"
        ]
    )


def test_a_path_after_perf_gate_is_a_test_path(pytester: pytest.Pytester) -> None:
    pytester.makeini(INI)
    pytester.makepyfile(test_m=bench_test(), test_other="def test_other():\n    assert False\n")
    result = pytester.runpytest("--torchcompile-perf-gate", "test_m.py", "-rA")
    result.assert_outcomes(passed=1)  # test_other.py did not run: the path was taken as a path
    result.stdout.fnmatch_lines(["perf gate: INCONCLUSIVE*"])


@pytest.mark.parametrize(
    "args, message",
    [
        (
            ["--torchcompile-perf-gate=sometimes"],
            "ERROR: --torchcompile-perf-gate=sometimes: 'sometimes' is not a gate mode: use --torchcompile-perf-gate or --torchcompile-perf-gate=strict",
        ),
        (
            ["--torchcompile-perf-report="],
            "*argument --torchcompile-perf-report: '' must name a file*",
        ),
        (
            ["-o", "torchcompile_perf_threshold=ten"],
            "ERROR: pytest-torchcompile ini option: torchcompile_perf_threshold = 'ten' is not a number",
        ),
        (
            ["-o", "torchcompile_perf_threshold=10"],
            "ERROR: pytest-torchcompile ini option: torchcompile_perf_threshold = '10' must be a number above 0 and below 1 (a fraction, e.g. 0.1 for 10%)",
        ),
        (
            ["-o", "torchcompile_perf_threads=0"],
            "ERROR: pytest-torchcompile ini option: torchcompile_perf_threads = '0' must be at least 1",
        ),
    ],
    ids=["gate-mode", "report-path", "threshold-text", "threshold-percent", "threads"],
)
def test_bad_flag_and_ini_values_are_usage_errors(
    pytester: pytest.Pytester, args: list[str], message: str
) -> None:
    result = pytester.runpytest(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])
    assert "Traceback" not in result.stderr.str()


def test_bad_marker_fails_the_test_naming_the_keyword(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.compile_benchmark(treshold=0.2)
        def test_typo(compile_benchmark):
            import torch
            compile_benchmark(torch.sin, torch.randn(2))

        @pytest.mark.compile_benchmark(backend="indcutor")
        def test_backend(compile_benchmark):
            import torch
            compile_benchmark(torch.sin, torch.randn(2))
        """
    )
    result = pytester.runpytest()
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(
        [
            "*usage error: compile_benchmark got unknown keyword 'treshold'; allowed keywords: backend, mode, *, threshold, *",
            "*usage error: compile_benchmark(backend='indcutor') is not a registered backend; known: *inductor*",
        ]
    )
    result.stdout.no_fnmatch_line("*Traceback*")


def test_help_and_markers_list_the_benchmark_options(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--help")
    result.stdout.fnmatch_lines(
        [
            "*--torchcompile-perf-update-baseline*",
            "*--torchcompile-perf-gate=[[]strict[]]*",
            "*--torchcompile-perf-report=PATH*",
            "*torchcompile_perf_baseline_dir*",
        ]
    )
    result = pytester.runpytest("--markers")
    result.stdout.fnmatch_lines(
        [
            "*compile_benchmark(backend='inductor', mode=None, *, threshold=None, confidence=None, max_time=None, compile_time=False, compile_threshold=None)*"
        ]
    )
