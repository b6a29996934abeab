"""A new torch's first run: its set does not hold the suite yet, another torch's does.

The failure names the other torch's set and the two steps of an upgrade
(record this torch's set, then `python -m pytest_torchcompile diff OLD NEW`);
the update that records it says how to review it. The other torches' sets
are this torch's recording moved to their folders, as a checkout holds them.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from pytest_torchcompile.snapshot.files.placeholders import torch_minor, torch_sets
from tests.conftest import model_test, tree_digest

TORCH = torch_minor(torch.__version__)
MAJOR, MINOR = (int(part) for part in TORCH.split("."))
BEFORE, LONG_BEFORE, AFTER = (f"{MAJOR}.{MINOR + step}" for step in (-1, -3, 1))
INI = "[pytest]\ntorchcompile_snapshot_dir = golden/{torch}/{device}\n"
TWO_CASES = """
import pytest, torch

@pytest.mark.compile_snapshot(backend="aot_eager", artifacts=("summary", "dynamo_graph"))
def test_two(compile_model):
    compile_model.case("small")(torch.nn.Linear(4, 2), torch.randn(3, 4))
    compile_model.case("large")(torch.nn.Linear(8, 2), torch.randn(3, 8))
"""


@pytest.fixture
def other_torches(pytester: pytest.Pytester) -> None:
    """The suite recorded by this torch, then moved to older and newer torches' folders."""
    pytester.makeini(INI)
    pytester.makepyfile(
        test_m=model_test("relu", extra=', artifacts=("summary",)'), test_c=TWO_CASES
    )
    pytester.runpytest("--update-snapshots").assert_outcomes(passed=2)
    golden = pytester.path / "golden"
    for version in (LONG_BEFORE, AFTER):
        shutil.copytree(golden / TORCH, golden / version)
    (golden / TORCH).rename(golden / BEFORE)


def test_the_first_run_names_the_torch_before_and_the_diff_command(
    pytester: pytest.Pytester, other_torches: None
) -> None:
    result = pytester.runpytest("-rf")
    result.assert_outcomes(failed=2)
    diff = f"python -m pytest_torchcompile diff golden/{BEFORE}/cpu golden/{TORCH}/cpu"
    result.stdout.fnmatch_lines(
        [
            f"no snapshots of this test for torch {TORCH} yet (golden/{TORCH}/cpu/test_m/test_m); "
            f"torch {BEFORE}'s set has them (golden/{BEFORE}/cpu/test_m/test_m)",
            "snapshot missing: 1 file does not exist yet",
            f"a new torch: record its set with `pytest --update-snapshots`, then review what the upgrade changed: {diff}",
        ]
    )
    result.stdout.fnmatch_lines(
        [
            f"torch {TORCH} has no snapshots yet for 2 tests that torch {BEFORE}'s set holds (golden/{BEFORE}/cpu): "
            f"a new torch: record its set with `pytest --update-snapshots`, then review what the upgrade changed: {diff}",
            "FAILED test_c.py::test_two - Failed: no snapshots of this test for torch*",
        ]
    )
    assert not (pytester.path / "golden" / TORCH).exists()  # nothing written

    result = pytester.runpytest("--update-snapshots")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(
        [
            "torch.compile snapshots: 5 written, 0 updated, 0 deleted",
            f"torch {TORCH}'s snapshots written for 2 tests that torch {BEFORE}'s set holds "
            f"(golden/{TORCH}/cpu beside golden/{BEFORE}/cpu): review what the upgrade changed: {diff}",
        ]
    )
    done = subprocess.run(
        [sys.executable, *diff.split()[1:]], cwd=pytester.path, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert "3 cases: 0 behaviour changed, 0 text only, 3 unchanged" in done.stdout

    result = pytester.runpytest()  # the set is this torch's now: nothing more to say
    result.assert_outcomes(passed=2)
    assert "pytest_torchcompile diff" not in result.stdout.str()


def test_a_test_this_torchs_set_holds_in_part_is_not_a_first_run(
    pytester: pytest.Pytester, other_torches: None
) -> None:
    """A new artifact on a torch that has its set is the plain missing-file failure."""
    pytester.runpytest("--update-snapshots").assert_outcomes(passed=2)
    pytester.makepyfile(test_m=model_test("relu", extra=', artifacts=("summary", "guards")'))
    result = pytester.runpytest("test_m.py")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["snapshot missing: 1 file does not exist yet"])
    assert "no snapshots of this test for torch" not in result.stdout.str()


def test_a_new_test_no_torch_has_yet_is_the_plain_missing_failure(
    pytester: pytest.Pytester, other_torches: None
) -> None:
    pytester.makepyfile(test_new=model_test("relu", extra=', artifacts=("summary",)'))
    result = pytester.runpytest("test_new.py")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["snapshot missing: 1 file does not exist yet"])
    assert "pytest_torchcompile diff" not in result.stdout.str()


def test_each_torchs_set_is_found_by_the_template(tmp_path: Path) -> None:
    for folder in ("s/2.11/cpu", "s/2.13/cpu", "s/2.13/cuda-sm90", "s/notes.txt"):
        (tmp_path / folder).parent.mkdir(parents=True, exist_ok=True)
        if folder.endswith(".txt"):
            (tmp_path / folder).write_text("")
        else:
            (tmp_path / folder).mkdir()
    assert torch_sets(tmp_path, "s/{torch}/{device}", "cpu") == {
        "2.11": tmp_path / "s/2.11/cpu",
        "2.13": tmp_path / "s/2.13/cpu",
    }
    (tmp_path / "g-2.13-x-2.13").mkdir()
    (tmp_path / "g-2.11-x-2.13").mkdir()  # `{torch}` twice must be one version
    assert torch_sets(tmp_path, "g-{torch}-x-{torch}", "cpu") == {
        "2.13": tmp_path / "g-2.13-x-2.13"
    }
    assert torch_sets(tmp_path, "s/{device}", "cpu") == {}


def test_an_existing_set_moved_under_its_torch_passes_as_it_was(pytester: pytest.Pytester) -> None:
    """docs/ci.md's three steps: `snapshots/` -> `snapshots-T-cpu` -> `snapshots/T/cpu`, then the template."""
    pytester.makepyfile(test_m=model_test("relu", extra=', artifacts=("summary",)'))
    pytester.runpytest("--update-snapshots").assert_outcomes(passed=1)
    snapshots = pytester.path / "snapshots"
    recorded = tree_digest(snapshots)
    aside = snapshots.rename(pytester.path / f"snapshots-{TORCH}-cpu")
    (pytester.path / "snapshots" / TORCH).mkdir(parents=True)
    aside.rename(pytester.path / "snapshots" / TORCH / "cpu")
    pytester.makeini("[pytest]\ntorchcompile_snapshot_dir = snapshots/{torch}/{device}\n")
    result = pytester.runpytest()
    result.assert_outcomes(passed=1)
    assert tree_digest(snapshots / TORCH / "cpu") == recorded
    assert sorted(p.name for p in snapshots.iterdir()) == [TORCH]
