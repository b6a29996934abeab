"""A suite split across machines: each group's update keeps the other groups' snapshots.

pytest-split (`--splits N --group K`) deselects the other groups' tests, so a
group's update writes and deletes only in the folders of the tests it ran,
and removes no stale folder (it did not run everything it collected); `-k`
splits behave the same.
"""

from __future__ import annotations

import pytest

from tests.conftest import tree_digest
from tests.snapshot.files.test_hostile_disk import files_under

SUITE = """
import os, pytest, torch

OP = getattr(torch, os.environ.get("OP", "sin"))

@pytest.mark.parametrize("i", range(4))
@pytest.mark.compile_snapshot(backend="eager", artifacts=("dynamo_graph",))
def test_s(compile_model, i):
    compile_model(OP, torch.randn(i + 1))
"""


@pytest.mark.parametrize(
    "split",
    [["--splits", "2", "--group", "1"], ["-k", "s[0] or s[1]"]],
    ids=["pytest-split", "-k"],
)
def test_a_groups_update_keeps_the_other_groups_snapshots(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, split: list[str]
) -> None:
    pytester.makepyfile(test_m=SUITE)
    pytester.runpytest("--update-snapshots").assert_outcomes(passed=4)
    root = pytester.path / "snapshots"
    stale = root / "test_m" / "test_gone"
    stale.mkdir()
    (stale / "summary.txt").write_text("backend: eager\ngraphs: 1\n")
    before = tree_digest(root)

    monkeypatch.setenv("OP", "cos")  # every snapshot changes
    result = pytester.runpytest("--update-snapshots", *split)
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["torch.compile snapshots: 0 written, 2 updated, 0 deleted"])
    after = tree_digest(root)
    changed = sorted(path for path in before if after.get(path) != before[path])
    assert changed == [
        "test_m/test_s[0]/dynamo_graph.fx.txt",
        "test_m/test_s[1]/dynamo_graph.fx.txt",
    ]
    assert "test_m/test_gone/summary.txt" in files_under(
        root
    )  # stale, but not this group's to remove
    result.stdout.fnmatch_lines(
        ["stale: snapshots/test_m/test_gone/ (no test in test_m.py has this name)"]
    )
