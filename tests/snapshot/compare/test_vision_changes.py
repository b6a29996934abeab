"""Five changes a vision team makes, read by the comparison as their snapshots show them.

`tests/data/vision_changes/sets.tar.xz` holds the snapshots of a ResNet-like
CNN and a ViT training step (`fixtures/vision.py`, Inductor, torch 2.13) as
recorded, then of each change alone (`record.py` there re-records them):
another activation, stochastic depth turned on, another resolution, another
number of classes, and channels_last. Each must be named by the failure's
first line, labelled in the `diff` report by the same words as the test's
verdict, and shown whole on the HTML page (every finding, the long list
folded). Pure text: no compile here.
"""

from __future__ import annotations

import re
import tarfile
from pathlib import Path

import pytest

from pytest_torchcompile.snapshot.compare.behaviour import BEHAVIOUR, compare_case
from pytest_torchcompile.snapshot.compare.changes import ChangedCases
from pytest_torchcompile.snapshot.compare.failure import compose
from pytest_torchcompile.snapshot.compare.html import failure_fragment, report_page
from pytest_torchcompile.snapshot.compare.upgrade import compare_sets, read_case, render_text
from pytest_torchcompile.snapshot.files.outcome import Outcome
from pytest_torchcompile.snapshot.spec import ARTIFACT_EXTENSIONS
from tests.conftest import DATA

#: change -> (the test it touches, what the failure's first line must name)
NAMED = {
    "activation": ("test_resnet", "ops: relu -> silu"),
    "drop_path": ("test_vit", "ops: +bernoulli"),
    "resolution": ("test_resnet", "shapes: x [2, 3, 32, 32] -> [2, 3, 48, 48]"),
    "num_classes": ("test_resnet", "shapes: fc.weight [10, 16] -> [20, 16]"),
    "channels_last": (
        "test_resnet",
        "strides: x [3072, 1024, 32, 1] -> [3072, 1, 96, 3] (channels_last)",
    ),
}


@pytest.fixture(scope="module")
def sets(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("vision")
    with tarfile.open(DATA / "vision_changes" / "sets.tar.xz") as archive:
        archive.extractall(root, filter="data")
    return root


def outcomes(sets: Path, change: str) -> list[Outcome]:
    """What the test's snapshot check finds after `change`: the base's files against this run's."""
    test = NAMED[change][0]
    old, new = (read_case(sets / side / "test_changes" / test) for side in ("base", change))
    found = []
    for artifact, text in new.items():
        name = f"{artifact}.{ARTIFACT_EXTENSIONS[artifact]}"
        status = "matched" if old.get(artifact) == text else "changed"
        found.append(Outcome(Path(name), status, "", old.get(artifact), text, "", artifact))
    return found


@pytest.mark.parametrize("change", sorted(NAMED))
def test_the_first_line_names_each_change(sets: Path, change: str) -> None:
    first = compose(
        ChangedCases.of(outcomes(sets, change)), "snapshots/test_changes", full=False
    ).splitlines()[0]
    assert NAMED[change][1] in first, first
    assert len(first) <= 220, first


@pytest.mark.parametrize("change", sorted(NAMED))
def test_the_diff_reports_label_is_the_tests_verdict(sets: Path, change: str) -> None:
    test = NAMED[change][0]
    report = compare_sets(sets / "base", sets / change)
    (case,) = [c for c in report.cases if c.case.endswith(test)]
    assert case.diff is not None and case.verdict == BEHAVIOUR
    verdict = case.diff.line()  # what the failing test says
    moved = verdict.removeprefix(f"{BEHAVIOUR}: ")
    text = render_text(report)
    assert f"{test}: {BEHAVIOUR} ({moved})" in text, text
    topics = {f.topic for f in case.diff.findings if f.behaviour}
    words = [w for w in moved.split(", ") if not re.fullmatch(r".+ -> .+|\d+ more", w)]
    assert words and set(words) <= topics, (words, topics)  # no topic its findings lack


@pytest.mark.parametrize("change", sorted(NAMED))
def test_the_html_page_holds_every_finding(sets: Path, change: str) -> None:
    found = outcomes(sets, change)
    diff = compare_case(
        {o.artifact: o.old or o.new or "" for o in found}, {o.artifact: o.new or "" for o in found}
    )
    behaviour = [f.render() for f in diff.findings if f.behaviour]
    fragment = failure_fragment(ChangedCases.of(found))
    items = re.findall(r"<li>(.*?)</li>", fragment.split('<table class="diff"')[0])
    assert len(items) == len(behaviour)
    # past the first dozen, folded under a line that counts them (drop path: 21 findings)
    assert ("more findings (of" in fragment) == (len(behaviour) > 12)
    page = report_page(compare_sets(sets / "base", sets / change))
    assert "... and" not in page and "... and" not in fragment
