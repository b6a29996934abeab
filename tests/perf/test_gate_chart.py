"""The perf gate as a chart in pytest-html's report: each case's speedup interval, threshold and verdict colour."""

from __future__ import annotations

import re

import pytest

from pytest_torchcompile.perf.gate import ALL_METRICS, CaseVerdict, Row, Verdict
from pytest_torchcompile.perf.report.chart import COLOURS, bars, speedup_chart
from tests.browser import opened

INI = """
[pytest]
torchcompile_perf_max_time = 0.2
torchcompile_perf_threshold = 0.5
# a loaded CI machine would make the planted FAIL INCONCLUSIVE (test_gate_under_contention.py);
# this test is about drawing every verdict, so it judges as if the machine were quiet
torchcompile_perf_contention = ignore
"""

#: two benchmarks; `{slow}` seconds of sleep per compiled call plant a regression in test_slow
BENCH_TESTS = """
import time
import pytest
import torch


def sleeping(delay):
    def backend(gm, example_inputs):
        def run(*args):
            time.sleep(delay)
            return gm(*args)
        return run
    return backend


@pytest.mark.compile_benchmark(backend=sleeping(0))
def test_steady(compile_benchmark):
    compile_benchmark(torch.sin, torch.randn(64))


@pytest.mark.compile_benchmark(backend=sleeping({slow}))
def test_slow(compile_benchmark):
    compile_benchmark(torch.sin, torch.randn(64))
"""


def _speedup(case: str, change: float, ci: tuple[float, float], verdict: Verdict) -> CaseVerdict:
    row = Row(case, "speedup", "x", 2.0, 2.0 * (1 + change), change, ci, verdict)
    return CaseVerdict(case, (row,), threshold=0.1)


def test_each_verdict_is_drawn_in_its_colour_and_a_case_without_baseline_is_not() -> None:
    verdicts = [
        _speedup("t::pass", 0.01, (-0.03, 0.05), Verdict.PASS),
        _speedup("t::fail", -0.4, (-0.45, -0.35), Verdict.FAIL),
        _speedup("t::noisy", -0.15, (-0.5, 0.2), Verdict.INCONCLUSIVE),
        CaseVerdict(
            "t::new",
            (Row("t::new", ALL_METRICS, "", None, "measured", None, None, Verdict.INCONCLUSIVE),),
        ),
    ]
    assert [b.case for b in bars(verdicts, 0.1)] == ["t::pass", "t::fail", "t::noisy"]
    svg = speedup_chart(verdicts, 0.1)
    assert svg.count("<svg") == 1 and "<script" not in svg and "<!DOCTYPE" not in svg
    links = re.findall(r'href="([^"]*)"', svg)
    assert all(link.startswith("#") for link in links) and "src=" not in svg  # draws offline
    for verdict, colour in COLOURS.items():
        assert colour in svg, verdict
    assert speedup_chart(verdicts[3:], 0.1) == (
        '<p class="ptc-perf-chart">perf gate: no case with a baseline to draw</p>'
    )


@pytest.fixture(autouse=True)
def no_step_summary(monkeypatch: pytest.MonkeyPatch) -> None:
    """Inner runs must not append to a real CI job's summary."""
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)


def test_the_gate_chart_is_drawn_in_the_html_report(pytester: pytest.Pytester) -> None:
    pytest.importorskip(
        "pytest_html", reason="pytest-html is not installed (pip install pytest-html)"
    )
    pytest.importorskip("matplotlib", reason="matplotlib is not installed (pip install matplotlib)")
    pytester.makeini(INI)
    pytester.makepyfile(test_m=BENCH_TESTS.format(slow=0))
    pytester.runpytest("--torchcompile-perf-update-baseline").assert_outcomes(passed=2)
    pytester.makepyfile(test_m=BENCH_TESTS.format(slow=0.002))
    report = pytester.path / "report.html"
    result = pytester.runpytest(
        "--torchcompile-perf-gate", f"--html={report}", "--self-contained-html"
    )
    result.assert_outcomes(passed=1, failed=1)  # the gate's FAIL fails test_slow itself
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["perf gate: FAIL"])
    with opened(report) as seen:
        chart = seen.page.locator(".ptc-perf-chart svg")
        chart.wait_for()
        box = chart.bounding_box()
        assert box is not None and box["width"] > 400 and box["height"] > 80
        labels = chart.locator("text").all_inner_texts() or [chart.inner_html()]
        drawn = " ".join(labels) + chart.inner_html()
        assert "test_m.py::test_slow::case_0" in drawn and "test_m.py::test_steady::case_0" in drawn
        assert COLOURS[Verdict.FAIL] in chart.inner_html()
        assert seen.errors == []
        seen.screenshot("perf-gate-chart.png", pytester.path, selector=".ptc-perf-chart")
