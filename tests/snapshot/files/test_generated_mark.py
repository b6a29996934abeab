"""An update marks the snapshot set as generated for the code host (`.gitattributes`), and
leaves a `.gitattributes` of the user's alone."""

from __future__ import annotations

import pytest
import torch

from pytest_torchcompile.snapshot.files.generated import FIRST_LINE, TEXT
from pytest_torchcompile.snapshot.files.placeholders import torch_minor
from tests.conftest import model_test

ONE_TEST = model_test("relu", backend="eager", extra=', artifacts=("summary",)')
SET = f"snapshots/{torch_minor(torch.__version__)}/cpu"


@pytest.mark.torch_independent
def test_an_update_marks_the_set_and_a_plain_run_reads_past_the_mark(
    pytester: pytest.Pytester,
) -> None:
    pytester.makeini("[pytest]\ntorchcompile_snapshot_dir = snapshots/{torch}/{device}\n")
    pytester.makepyfile(test_m=ONE_TEST)
    pytester.runpytest("--update-snapshots").assert_outcomes(passed=1)
    mark = pytester.path / SET / ".gitattributes"
    assert mark.read_text() == TEXT
    assert "* linguist-generated=true" in TEXT.splitlines()
    # a plain run passes, and a second update neither counts nor deletes the mark
    pytester.runpytest().assert_outcomes(passed=1)
    again = pytester.runpytest("--update-snapshots")
    again.assert_outcomes(passed=1)
    assert "deleted" not in again.stdout.str() or " 0 deleted" in again.stdout.str()
    assert mark.read_text() == TEXT


@pytest.mark.torch_independent
@pytest.mark.parametrize(
    "theirs",
    ["* -linguist-generated\n", f"{FIRST_LINE[2:]} (edited)\n*.txt linguist-generated=true\n"],
)
def test_a_gitattributes_of_the_users_is_never_touched(
    pytester: pytest.Pytester, theirs: str
) -> None:
    pytester.makeini("[pytest]\ntorchcompile_snapshot_dir = snapshots/{torch}/{device}\n")
    pytester.makepyfile(test_m=ONE_TEST)
    mark = pytester.path / SET / ".gitattributes"
    mark.parent.mkdir(parents=True)
    mark.write_text(theirs)
    pytester.runpytest("--update-snapshots").assert_outcomes(passed=1)
    assert mark.read_text() == theirs
    assert (pytester.path / SET / "test_m").is_dir()


@pytest.mark.torch_independent
def test_the_plugins_own_mark_is_brought_up_to_date(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\ntorchcompile_snapshot_dir = snapshots/{torch}/{device}\n")
    pytester.makepyfile(test_m=ONE_TEST)
    mark = pytester.path / SET / ".gitattributes"
    mark.parent.mkdir(parents=True)
    mark.write_text(f"{FIRST_LINE}, an older wording\n* linguist-generated=true\n")
    pytester.runpytest("--update-snapshots").assert_outcomes(passed=1)
    assert mark.read_text() == TEXT
