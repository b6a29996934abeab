"""An update never deletes another snapshot set: another Python's, another device's, a test's own.

Snapshot sets are keyed by folder (`snapshots/{torch}/{device}/py{python}`);
changing that setting, or a marker's `snapshot_dir` beside or around the
run's folder, leaves sets where the new layout would read them as the
folders of deleted tests. Each test plants sets the run never wrote and
proves an update leaves them byte for byte.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

from pytest_torchcompile.snapshot.files.placeholders import torch_minor
from tests.conftest import model_test, tree_digest

TORCH = torch_minor(torch.__version__)
PYTHON = "{}.{}".format(*sys.version_info[:2])
OTHER_PYTHON = "3.12" if PYTHON != "3.12" else "3.11"
ONE_TEST = model_test("relu", backend="eager", extra=', artifacts=("summary",)')


def plant_set(folder: Path, tests: tuple[str, ...] = ("test_m",)) -> None:
    """A committed set of this suite's test file, as the plugin writes it."""
    for test in tests:
        (folder / "test_m" / test).mkdir(parents=True)
        (folder / "test_m" / test / "summary.txt").write_text("backend: eager\ngraphs: 1\n")


@pytest.mark.torch_independent
@pytest.mark.parametrize(
    ("before", "after", "kept"),
    [
        (
            "snapshots/{torch}/{device}/py{python}",
            "snapshots/{torch}/{device}",
            ["snapshots/{torch}/cpu/py{other}", "snapshots/{torch}/cpu/py{python}"],
        ),
        (
            "snapshots/{torch}/{device}",
            "snapshots/{torch}",
            ["snapshots/{torch}/cuda-sm90", "snapshots/{torch}/meta"],
        ),
    ],
    ids=["python-dropped", "device-dropped"],
)
def test_a_shorter_folder_setting_never_deletes_the_sets_it_used_to_name(
    pytester: pytest.Pytester, before: str, after: str, kept: list[str]
) -> None:
    """The sets of the old setting lie inside the new set's folder, where the new layout
    reads them as the folders of deleted test files: they are never walked as stale."""
    pytester.makeini(f"[pytest]\ntorchcompile_snapshot_dir = {after}\n")
    pytester.makepyfile(test_m=ONE_TEST)
    for folder in kept:
        plant_set(pytester.path / folder.format(torch=TORCH, python=PYTHON, other=OTHER_PYTHON))
    planted = tree_digest(pytester.path / "snapshots")
    result = pytester.runpytest("--update-snapshots")
    result.assert_outcomes(passed=1)
    assert "stale" not in result.stdout.str(), before
    now = tree_digest(pytester.path / "snapshots")
    assert {name: now.get(name) for name in planted} == planted
    written = sorted(set(now) - set(planted))
    own = Path(after.format(torch=TORCH, device="cpu")).relative_to("snapshots")
    # the run's own set: the snapshot, and the mark that tells a code host they are generated
    assert written == [str(own / ".gitattributes"), str(own / "test_m/test_m/summary.txt")]


@pytest.mark.torch_independent
def test_a_folder_named_like_a_set_is_still_judged_when_tests_live_in_it(
    pytester: pytest.Pytester,
) -> None:
    """`tests/cpu/test_ops.py` is a test file, not a set: its deleted tests' folders are stale."""
    pytester.makepyfile(**{"tests/cpu/test_m": ONE_TEST})
    plant_set(pytester.path / "snapshots/tests/cpu", tests=("test_m", "test_gone"))
    result = pytester.runpytest("--update-snapshots")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            "removed stale: snapshots/tests/cpu/test_m/test_gone/ (no test in tests/cpu/test_m.py has this name)"
        ]
    )


OWN_FOLDER = """
import pytest, torch

@pytest.mark.compile_snapshot(backend="eager", artifacts=("summary",))
def test_shared(compile_model):
    compile_model(torch.relu, torch.randn(2, 4))

@pytest.mark.compile_snapshot(backend="eager", artifacts=("summary",), snapshot_dir={folder!r})
def test_own(compile_model):
    compile_model(torch.relu, torch.randn(2, 4))
"""


@pytest.mark.torch_independent
def test_a_usage_error_stops_every_removal_of_the_run(pytester: pytest.Pytester) -> None:
    """The run's update removes nothing when a test failed with a usage error: the marker's
    own sets inside the run's folder (another Python's), a deleted test's folder and a passing
    test's unused file are all kept, and the run says why."""
    pytester.makeini("[pytest]\ntorchcompile_snapshot_dir = golden/{torch}/{device}\n")
    pytester.makepyfile(test_m=OWN_FOLDER.format(folder="golden/{torch}/{device}/py{python}"))
    run_set = pytester.path / f"golden/{TORCH}/cpu"
    plant_set(run_set, tests=("test_gone",))
    for python in ("3.11", "3.13"):
        plant_set(run_set / f"py{python}", tests=("test_own",))
    (run_set / "test_m/test_shared").mkdir()
    (run_set / "test_m/test_shared/guards.guards.txt").write_text(
        "# a file this run does not use\n"
    )
    planted = tree_digest(pytester.path / "golden")
    result = pytester.runpytest("--update-snapshots")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*usage error: the snapshot folder *golden/*/cpu/py* of test_m.py::test_own (the marker's snapshot_dir) lies inside*",
            f"unused: golden/{TORCH}/cpu/test_m/test_shared/guards.guards.txt",
            f"stale: golden/{TORCH}/cpu/test_m/test_gone/ (no test in test_m.py has this name)",
            "nothing was deleted: test_m.py::test_own failed with a usage error; "
            "fix it, then run `pytest --update-snapshots` again",
        ]
    )
    now = tree_digest(pytester.path / "golden")
    assert {name: now.get(name) for name in planted} == planted


@pytest.mark.torch_independent
@pytest.mark.parametrize(
    ("marker", "relation", "runs"),
    [
        ("snapshots/{torch}", "holds", (["--update-snapshots"], [])),
        ("snapshots/{torch}/meta/x", "lies inside", (["--update-snapshots"],)),
    ],
    ids=["marker-holds-the-run", "marker-in-another-devices-set"],
)
def test_a_tests_own_folder_around_the_runs_is_refused_and_nothing_is_written(
    pytester: pytest.Pytester, marker: str, relation: str, runs: tuple[list[str], ...]
) -> None:
    """A marker folder holding the run's set (`snapshots/{torch}` beside
    `snapshots/{torch}/{device}`), or inside a set the run judges, would be walked as that set:
    each update wrote the test's files and then deleted them as stale, and the next plain run
    failed as if they had never been written."""
    pytester.makeini("[pytest]\ntorchcompile_snapshot_dir = snapshots/{torch}/{device}\n")
    pytester.makepyfile(test_m=OWN_FOLDER.format(folder=marker))
    (pytester.path / f"snapshots/{TORCH}/meta").mkdir(parents=True)
    for args in runs:
        result = pytester.runpytest(*args)
        result.assert_outcomes(passed=1, failed=1)
        result.stdout.fnmatch_lines(
            [
                f"*usage error: the snapshot folder *snapshots/{TORCH}* of test_m.py::test_own "
                f"(the marker's snapshot_dir) {relation} *"
            ]
        )
        assert "stale" not in result.stdout.str()
    files = sorted(str(p.relative_to(pytester.path)) for p in pytester.path.rglob("*.txt"))
    assert files == [f"snapshots/{TORCH}/cpu/test_m/test_shared/summary.txt"]
