"""With pytest-html, a failing snapshot test shows its verdict and side-by-side diffs in the report; without it, nothing changes."""

from __future__ import annotations

import pytest

from tests.browser import opened
from tests.conftest import model_test

pytest.importorskip("pytest_html", reason="pytest-html is not installed (pip install pytest-html)")

#: says in a file whether anything imported pytest_html by the end of the run (with pytest-html off)
HTML_IMPORTED = """
import pathlib, sys
def pytest_unconfigure(config):
    pathlib.Path("html_imported.txt").write_text(str("pytest_html" in sys.modules))
"""

#: counts, in a file, the cases the run compares: `compare_case` wrapped wherever the plugin
#: holds it, and where a module imports it later
COUNT_COMPARISONS = """
import pathlib, sys
from pytest_torchcompile.snapshot.compare import behaviour

REAL, CALLS = behaviour.compare_case, []

def counted(old, new):
    CALLS.append(1)
    return REAL(old, new)

for name, module in list(sys.modules.items()):
    if name.startswith("pytest_torchcompile") and getattr(module, "compare_case", None) is REAL:
        module.compare_case = counted

def pytest_unconfigure(config):
    pathlib.Path("compared.txt").write_text(str(len(CALLS)))
"""


@pytest.fixture
def relu_to_gelu(pytester: pytest.Pytester) -> pytest.Pytester:
    """A test recorded with relu, then changed to gelu: its next run fails."""
    pytester.makepyfile(test_m=model_test(op="relu"))
    pytester.runpytest("--update-snapshots").assert_outcomes(passed=1)
    pytester.makepyfile(test_m=model_test(op="nn.functional.gelu"))
    return pytester


def test_failing_case_shows_its_verdict_and_diffs_in_the_report(
    relu_to_gelu: pytest.Pytester, tmp_path: pytest.TempPathFactory
) -> None:
    relu_to_gelu.makeconftest(COUNT_COMPARISONS)
    report = relu_to_gelu.path / "report.html"
    result = relu_to_gelu.runpytest(f"--html={report}", "--self-contained-html")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*verdict: behaviour changed: ops, guards*"]
    )  # the terminal as before
    # the text-only split, the failure block and the report's diffs read one verdict: the
    # case's graphs and guards are read once, not once for each
    assert (relu_to_gelu.path / "compared.txt").read_text() == "1"
    with opened(report) as seen:
        page = seen.page
        page.locator("#results-table").wait_for()
        headline = page.locator(".ptc h2").first
        assert headline.inner_text() == "behaviour changed ops, guards"
        assert headline.locator(".verdict.behaviour").is_visible()
        # the first screen: the headline sentence and what moved, above any side-by-side
        said = page.locator(".ptc p.headline").first
        assert said.inner_text().startswith("ops: relu -> gelu")
        changes = page.locator(".ptc ul.changes").first
        assert "ops" in changes.inner_text()
        first_diff = page.locator(".ptc table.diff").first.bounding_box()
        assert (
            first_diff and said.bounding_box()["y"] < changes.bounding_box()["y"] < first_diff["y"]
        )
        titles = page.locator(".ptc h3").all_inner_texts()
        assert titles[0] == "dynamo_graph.fx.txt" and "guards.guards.txt" in titles
        removed = page.locator(".ptc table.diff").first.locator("td").all_inner_texts()
        assert any("relu" in cell for cell in removed) and any("gelu" in cell for cell in removed)
        assert seen.errors == []
        seen.screenshot("html-report-snapshot.png", relu_to_gelu.path)


def test_without_pytest_html_nothing_imports_it_and_the_failure_is_the_same(
    relu_to_gelu: pytest.Pytester,
) -> None:
    relu_to_gelu.makeconftest(HTML_IMPORTED)
    result = relu_to_gelu.runpytest("-p", "no:html", "-p", "no:html_fixtures")  # pytest-html off
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*verdict: behaviour changed: ops, guards*"])
    assert (relu_to_gelu.path / "html_imported.txt").read_text() == "False"
