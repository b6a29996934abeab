"""The upgrade report reads at a glance: shared causes folded with counts, cases in reading order, no fact cut.

The real pair: 12 tiny HuggingFace models (none of them in the project's own
suite) recorded with the plugin under torch 2.13 and 2.15, kept compressed in
`tests/data/upgrade_models/` (`record.py` there re-records them).
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import tarfile
from pathlib import Path

import pytest

from pytest_torchcompile.diff_command import main
from pytest_torchcompile.snapshot.compare.behaviour import BEHAVIOUR, TEXT, CaseDiff, Finding
from pytest_torchcompile.snapshot.compare.ranking import TIERS, fold, label, tier
from tests.browser import opened
from tests.conftest import DATA

SETS = DATA / "upgrade_models"
#: the lines a reviewer reads before the first case's own details
SCREEN = 40


@pytest.fixture(scope="module")
def upgrade(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The 2.13 and 2.15 snapshot sets, unpacked."""
    roots = []
    for version in ("2.13", "2.15"):
        target = tmp_path_factory.mktemp(f"torch-{version}")
        with tarfile.open(SETS / f"snapshots-{version}.tar.xz") as tar:
            tar.extractall(target, filter="data")
        roots.append(target / "snapshots")
    return roots[0], roots[1]


@pytest.fixture(scope="module")
def reports(
    upgrade: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory
) -> tuple[list[str], dict]:
    """The command's terminal lines and its JSON for the pair."""
    out = tmp_path_factory.mktemp("report")
    capture = out / "stdout.txt"
    with open(capture, "w") as handle, contextlib.redirect_stdout(handle):
        assert main(["diff", *map(str, upgrade), "--json", str(out / "r.json")]) == 0
    return capture.read_text().splitlines(), json.loads((out / "r.json").read_text())


def _above_cases(lines: list[str]) -> list[str]:
    first_case = next(i for i, line in enumerate(lines) if re.match(r"^test_\w+: ", line))
    return lines[:first_case]


def test_the_part_above_the_cases_fits_one_screen(reports: tuple[list[str], dict]) -> None:
    lines, _ = reports
    top = _above_cases(lines)
    assert len(top) <= SCREEN, "\n".join(top)
    assert top[1] == "12 cases: 12 behaviour changed, 0 text only, 0 unchanged"


def test_causes_every_model_shares_are_said_once_with_their_count(
    reports: tuple[list[str], dict],
) -> None:
    lines, report = reports
    top = "\n".join(_above_cases(lines))
    assert re.search(
        r"^  12 of 12: guards frame 0/0: \+DICT_CONTAINS \(\d+-\d+ per case\)", top, re.M
    )
    assert re.search(
        r"^  \d+ of 12: frame 0/0 ops: -aten\.clone\.default in aot_inference \(\d+-\d+ per case\)$",
        top,
        re.M,
    )
    assert "12 of 12: runtime_wrapper: only in OLD" in top
    # and not again under each case
    cases = "\n".join(lines[len(_above_cases(lines)) :])
    assert "DICT_CONTAINS on G['__import_transformers_dot_masking_utils']" not in cases
    assert "runtime_wrapper: only in OLD" not in cases
    counts = [len(c["cases"]) for c in report["shared_causes"]]
    assert counts == sorted(counts, reverse=True) and min(counts) >= 3


def test_cases_come_in_reading_order(reports: tuple[list[str], dict]) -> None:
    _, report = reports
    order = [TIERS.index(c["tier"]) for c in report["cases"]]
    assert order == sorted(order)
    first = report["cases"][0]
    # the one counter that moved anywhere: Falcon's attention became one SDPA kernel
    assert (first["case"], first["tier"]) == ("test_models/test_falcon", "counters moved")
    assert first["first_look"].startswith("kernels 6 -> 4")
    assert first["counters"]["kernels"] == {"old": "6", "new": "4"}
    assert {c["tier"] for c in report["cases"][1:]} <= set(TIERS[1:4])


def test_each_case_is_labelled_with_its_verdicts_words(reports: tuple[list[str], dict]) -> None:
    """A label names what the case's own findings say moved, as its test's verdict does:
    never a tier's name for a change that did not happen."""
    lines, report = reports
    for case in report["cases"]:
        assert case["line"] == f"{case['verdict']}: {case['first_look']}", case["case"]
        topics = {f["topic"] for f in case["findings"] if f["behaviour"]}
        if "fusion" not in topics:
            assert "fused" not in case["first_look"], case["case"]
        heading = (
            f"{case['case'].removeprefix('test_models/')}: behaviour changed ({case['first_look']})"
        )
        assert any(line.startswith(heading) for line in lines), heading


def test_no_line_is_cut_mid_fact(reports: tuple[list[str], dict]) -> None:
    """Every own finding of every case is in the terminal text whole (wrapped between words at most)."""
    lines, report = reports
    assert not [line for line in lines if line.rstrip().endswith("...")]
    flat = " ".join(line.strip() for line in lines)
    for case in report["cases"]:
        for finding in case["own"]:
            assert " ".join(finding.split()) in flat, finding


# ---------------------------------------------------------------- the folding rules, on small findings


def _guards(n: int, kind: str, sources: str) -> Finding:
    return Finding(True, "guards", f"guards frame 0/0: added {n} {kind} on {sources}", ("guards",))


def _diff(*findings: Finding) -> CaseDiff:
    return CaseDiff(BEHAVIOUR, {}, findings)


def test_a_guard_kind_folds_whatever_it_guards_but_only_from_three_cases() -> None:
    diffs = {
        "a": _diff(_guards(2, "DICT_CONTAINS", "L['self'].config x2")),
        "b": _diff(_guards(3, "DICT_CONTAINS", "G['m'].X, L['self'].config x2")),
        "c": _diff(
            _guards(2, "DICT_CONTAINS", "G['m'].X x2"), _guards(2, "ID_MATCH", "G['a'], G['b']")
        ),
        "d": _diff(_guards(2, "ID_MATCH", "G['a'], G['c']")),
    }
    folded = fold(diffs)
    assert [c.render() for c in folded.causes] == [
        "3 of 4: guards frame 0/0: +DICT_CONTAINS (2-3 per case), most often on L['self'].config (2 cases)"
    ]
    assert folded.own["a"] == []
    assert folded.own["d"] == [
        "guards frame 0/0: added 2 ID_MATCH on G['a'], G['c']"
    ]  # 2 of 4: its own


def test_an_op_delta_keeps_the_ops_that_are_its_own() -> None:
    shared = Finding(True, "ops", "frame 0/0 ops: -aten.clone.default x2", ("aot_inference",))
    mixed = Finding(
        True,
        "ops",
        "frame 0/0 ops: -aten.bmm.default x2 -aten.clone.default +aten.sdpa",
        ("aot_inference",),
    )
    folded = fold({"a": _diff(shared), "b": _diff(shared), "c": _diff(mixed)})
    assert [c.render() for c in folded.causes] == [
        "3 of 3: frame 0/0 ops: -aten.clone.default in aot_inference (1-2 per case)"
    ]
    assert folded.own["c"] == ["frame 0/0 ops: -aten.bmm.default x2 +aten.sdpa (aot_inference)"]


def test_fusion_and_counters_are_never_folded_and_weigh_most() -> None:
    fused = Finding(
        True,
        "fusion",
        "output_code frame 0/0: kernel fused differently: k1 -> k2",
        ("output_code",),
    )
    diffs = {case: _diff(fused) for case in "abc"}
    assert fold(diffs).causes == [] and TIERS[tier(diffs["a"])] == "generated code changed"
    moved = _diff(Finding(True, "kernels", "kernels: 6 -> 4"), fused)
    assert tier(moved) == 0
    guards_only = _diff(_guards(2, "ID_MATCH", "G['a'], G['b']"))
    assert TIERS[tier(guards_only)] == "guards only"


def test_a_label_names_only_what_moved() -> None:
    """`ops changed` for a case whose shapes and guards moved, `kernels fused differently` for one
    whose kernels kept their fusion: the labels a vision team read. Now the verdict's words."""
    shapes = Finding(True, "shapes", "dynamo_graph arguments: fc.weight [10, 16] -> [20, 16]")
    guards = _guards(2, "TENSOR_MATCH", "L['self'].fc.weight, L['self'].fc.bias")
    assert TIERS[tier(_diff(shapes, guards))] == "ops, shapes or dataflow changed"
    assert label(_diff(shapes, guards)) == "shapes, guards"
    code = Finding(
        True,
        "kernel code",
        "output_code frame 0/0: kernel k1: same fusion, code changed (-1 +1 lines)",
    )
    assert label(_diff(code)) == "kernel code"
    assert label(CaseDiff(TEXT, {}, (Finding(False, "kernels renamed", "renamed"),))) == (
        "kernels renamed"
    )


# ---------------------------------------------------------------- the same as one page, in a browser


def test_the_html_page_shows_causes_ranked_cases_and_diffs_in_chromium(
    upgrade: tuple[Path, Path], tmp_path: Path
) -> None:
    page_file = tmp_path / "diff.html"
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(["diff", *map(str, upgrade), "--html", str(page_file)]) == 0
    html = page_file.read_text()
    assert "<script" not in html and "http://" not in html and "https://" not in html  # offline
    with opened(page_file, height=1300) as seen:
        page = seen.page
        assert page.locator("p.totals").inner_text() == (
            "12 cases: 12 behaviour changed, 0 text only, 0 unchanged"
        )
        causes = page.locator("ul.causes li").all_inner_texts()
        assert causes[0].startswith("12 of 12: guards frame 0/0: +DICT_CONTAINS")
        rows = page.locator("table.cases tr").all_inner_texts()[1:]
        assert len(rows) == 12 and rows[0].split("\t")[0] == "test_models/test_falcon"
        assert rows[0].split("\t")[1].startswith("kernels 6 -> 4")
        badge = page.locator("table.cases .verdict.behaviour").first
        assert badge.is_visible() and badge.evaluate(
            "e => getComputedStyle(e).backgroundColor"
        ) == ("rgb(248, 215, 218)")
        falcon = page.locator("#case-test-models-test-falcon")
        assert falcon.is_visible()
        assert page.locator("table.diff").count() >= 12
        assert (
            page.locator("table.diff .diff_sub").count()
            and page.locator("table.diff .diff_add").count()
        )
        assert seen.errors == []
        seen.screenshot("diff-page.png", tmp_path)
