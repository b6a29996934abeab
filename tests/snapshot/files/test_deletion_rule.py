"""The deletion rule: an update deletes or overwrites only files the plugin can show it wrote.

Its own file names, in folders of its own collected tests, under a snapshot
root inside the rootdir, never through a symbolic link out of the root, never
in a folder it shares with files it does not know. A root that could break
the rule is refused when pytest starts. Each test plants a victim the plugin
did not write and proves it survives byte for byte.
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest

from pytest_torchcompile.common.files import atomic_write_text
from tests.conftest import tree_digest
from tests.snapshot.files.test_hostile_disk import assert_no_crash, files_under

TWO_ARTIFACTS = """
import os, pytest, torch

OP = getattr(torch, os.environ.get("OP", "sin"))

@pytest.mark.compile_snapshot(backend="eager", artifacts=("summary", "dynamo_graph"))
def test_s(compile_model):
    compile_model(OP, torch.randn(3))
"""


def plant_victim(folder: Path) -> dict[str, str]:
    """Files with the plugin's own names in a folder it did not write; their digests."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in ("summary.txt", "guards.guards.txt", "output_code.code.txt"):
        (folder / name).write_text(f"the user's {name}\n")
    return tree_digest(folder)


# --- roots that could break the rule are refused at start ---------------------------


@pytest.mark.parametrize(
    ("setting", "reason"),
    [
        ("../victim", "is outside the rootdir"),
        ("{torch}/../../victim", "is outside the rootdir"),
        ("ABSOLUTE", "is outside the rootdir"),
        ("/", "is outside the rootdir"),
        (".", "is the rootdir itself, which holds the test sources"),
        ("tests", "holds Python files (*tests/test_s.py)"),
        ("__snapshots__", "is inside a __snapshots__ folder, which syrupy owns"),
        ("golden", "holds syrupy's snapshot folder *golden/x/__snapshots__"),
        ("linked", "leads through a symbolic link to *victim, outside the rootdir"),
    ],
)
@pytest.mark.parametrize("how", ["ini", "flag"])
def test_a_root_that_could_break_the_rule_is_refused_at_start(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, setting: str, reason: str, how: str
) -> None:
    project = pytester.path / "project"
    victim = plant_victim(pytester.path / "victim" / "test_s" / "test_s")
    (project / "tests").mkdir(parents=True)
    (project / "tests" / "test_s.py").write_text(TWO_ARTIFACTS)
    (project / "golden" / "x" / "__snapshots__").mkdir(parents=True)
    (project / "linked").symlink_to(pytester.path / "victim")
    setting = str(pytester.path / "victim") if setting == "ABSOLUTE" else setting
    ini = f"torchcompile_snapshot_dir = {setting}\n" if how == "ini" else ""
    (project / "pytest.ini").write_text(f"[pytest]\n{ini}")
    monkeypatch.chdir(project)
    flag = [f"--torchcompile-snapshot-dir={setting}"] if how == "flag" else []
    result = pytester.runpytest("--update-snapshots", *flag, "tests")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    shown = (
        f"--torchcompile-snapshot-dir={setting}"
        if how == "flag"
        else "ini torchcompile_snapshot_dir"
    )
    result.stderr.fnmatch_lines([f"ERROR: {shown}*: the snapshot folder * {reason}*"])
    assert "name a folder of its own inside the rootdir, e.g. snapshots" in result.stderr.str()
    assert tree_digest(pytester.path / "victim" / "test_s" / "test_s") == victim
    assert not Path("/test_s").exists()
    assert_no_crash(result)


def test_snapshots_inside_the_tests_folder_are_fine(pytester: pytest.Pytester) -> None:
    """Only a root that holds sources is refused, not one inside the tests' folder."""
    pytester.makeini("[pytest]\ntorchcompile_snapshot_dir = tests/snapshots\n")
    (pytester.path / "tests").mkdir()
    (pytester.path / "tests" / "test_s.py").write_text(TWO_ARTIFACTS)
    pytester.runpytest("--update-snapshots").assert_outcomes(passed=1)
    assert files_under(pytester.path / "tests" / "snapshots") == [
        "tests/test_s/test_s/dynamo_graph.fx.txt",
        "tests/test_s/test_s/summary.txt",
    ]


# --- never through a symbolic link out of the root ----------------------------------


def test_a_test_folder_linked_out_of_the_root_is_neither_written_nor_emptied(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(test_s=TWO_ARTIFACTS)
    pytester.runpytest("--update-snapshots").assert_outcomes(passed=1)
    folder = pytester.path / "snapshots" / "test_s" / "test_s"
    for path in folder.iterdir():
        path.unlink()
    folder.rmdir()
    victim = plant_victim(pytester.path / "elsewhere")
    folder.symlink_to(pytester.path / "elsewhere")
    monkeypatch.setenv("OP", "cos")
    result = pytester.runpytest("--update-snapshots")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*snapshot snapshots/test_s/test_s/*.txt not written: snapshots/test_s/test_s leads to "
            f"{pytester.path}/elsewhere, outside the snapshot folder snapshots: pytest-torchcompile "
            "neither writes nor deletes through a link out of it; replace the link with a folder*"
        ]
    )
    assert tree_digest(pytester.path / "elsewhere") == victim  # nothing deleted, nothing written
    assert_no_crash(result)


# --- never in a folder it shares with files it does not know ------------------------


def test_temp_files_are_recognised_by_the_exact_name_the_plugin_writes(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_s=TWO_ARTIFACTS)
    pytester.runpytest("--update-snapshots").assert_outcomes(passed=1)
    folder = pytester.path / "snapshots" / "test_s" / "test_s"
    an_hour_ago = (time.time() - 3600, time.time() - 3600)
    ours = folder / ".summary.txt.0a1b2c3d.tmp"
    ours.write_text("partial")
    os.utime(ours, an_hour_ago)
    pytester.runpytest("--update-snapshots").assert_outcomes(passed=1)
    assert not ours.exists()  # a killed update's leftover: removed

    users = folder / ".summary.txt.backup.tmp"  # not a name the plugin writes
    users.write_text("the user's backup")
    os.utime(users, an_hour_ago)
    result = pytester.runpytest("--update-snapshots")
    result.assert_outcomes(passed=1)
    assert users.read_text() == "the user's backup"
    assert "deleted:" not in result.stdout.str()


def test_the_temp_name_pattern_is_the_one_the_writer_uses(tmp_path: Path) -> None:
    from pytest_torchcompile.common.files import TEMP_NAME, temp_target

    seen: list[str] = []
    original = os.replace

    def spy(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> None:
        seen.append(Path(src).name)
        original(src, dst)

    os.replace = spy  # type: ignore[assignment]
    try:
        atomic_write_text(tmp_path / "summary.txt", "x\n")
    finally:
        os.replace = original  # type: ignore[assignment]
    assert [temp_target(name) for name in seen] == ["summary.txt"]
    assert TEMP_NAME.fullmatch(seen[0])
    for name in (".summary.txt.backup.tmp", ".summary.txt.1A2B3C4D.tmp", ".summary.txt.1a2b3c.tmp"):
        assert temp_target(name) is None


# --- a case and a test never share a folder ------------------------------------------

CASE_A = """
import pytest, torch

@pytest.mark.compile_snapshot(backend="eager", artifacts=("summary",))
def test_x(compile_model):
    compile_model.case("wide")(torch.sin, torch.randn(3))
    compile_model.case("test_foo")(torch.cos, torch.randn(3))
"""

CASE_B = """
import pytest, torch

@pytest.mark.compile_snapshot(backend="eager", artifacts=("summary",))
def test_foo(compile_model):
    compile_model(torch.tanh, torch.randn(3))
"""


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["one process", "two workers"])
def test_a_case_named_as_another_test_is_refused_naming_both(
    pytester: pytest.Pytester, workers: list[str]
) -> None:
    pytester.makeini("[pytest]\n")
    (pytester.path / "tests" / "test_a").mkdir(parents=True)
    (pytester.path / "tests" / "test_a.py").write_text(CASE_A)
    (pytester.path / "tests" / "test_a" / "test_x.py").write_text(CASE_B)
    result = pytester.runpytest("--update-snapshots", *workers)
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*usage error: case 'test_foo' of tests/test_a.py::test_x would write snapshot folder "
            "snapshots/tests/test_a/test_x/test_foo, which is the folder of "
            "tests/test_a/test_x.py::test_foo; rename the case*"
        ]
    )
    root = pytester.path / "snapshots"
    assert files_under(root) == ["tests/test_a/test_x/test_foo/summary.txt"]
    assert_no_crash(result)


def test_a_case_named_as_a_test_of_a_file_this_run_did_not_collect_is_refused(
    pytester: pytest.Pytester,
) -> None:
    pytester.makeini("[pytest]\n")
    (pytester.path / "tests" / "test_a").mkdir(parents=True)
    (pytester.path / "tests" / "test_a.py").write_text(CASE_A)
    (pytester.path / "tests" / "test_a" / "test_x.py").write_text(CASE_B)
    pytester.runpytest("--update-snapshots", "tests/test_a/test_x.py").assert_outcomes(passed=1)
    other = pytester.path / "snapshots/tests/test_a/test_x/test_foo/summary.txt"
    before = other.read_bytes()
    result = pytester.runpytest("--update-snapshots", "tests/test_a.py")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*which is the folder of tests/test_a/test_x.py::test_foo; rename the case*"]
    )
    assert other.read_bytes() == before


# --- counts ---------------------------------------------------------------------------


def test_the_deleted_count_counts_files(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_s="def test_keep(compile_model):\n    pass\n")
    gone = pytester.path / "snapshots" / "test_gone" / "test_x"
    gone.mkdir(parents=True)
    (gone / "summary.txt").write_text("backend: eager\ngraphs: 1\n")
    (gone / "guards.guards.txt").write_text("# ===== frame 0 compile 0: f =====\n")
    result = pytester.runpytest("--update-snapshots")
    result.stdout.fnmatch_lines(
        [
            "torch.compile snapshots: 0 written, 0 updated, 2 deleted",
            "removed stale: snapshots/test_gone/test_x/ (its test file is gone)",
        ]
    )
    assert not gone.exists()


# --- a folder is the plugin's by its files' contents, not their names ------------------


@pytest.mark.parametrize("through_link", [False, True])
def test_a_folder_of_artifact_names_the_plugin_did_not_write_is_never_stale(
    pytester: pytest.Pytester, through_link: bool
) -> None:
    """The user's report data (`summary.txt`, `guards.guards.txt`) under a root that also
    holds no test file: it looks like a deleted test's folder by its names only."""
    pytester.makepyfile(test_s=TWO_ARTIFACTS)
    data = "results" if through_link else "tests"
    victim = plant_victim(pytester.path / data / "data" / "report")
    if through_link:
        (pytester.path / "snaps").symlink_to(pytester.path / "results")
    root = "snaps" if through_link else "tests"
    result = pytester.runpytest("--update-snapshots", "-o", f"torchcompile_snapshot_dir={root}")
    result.assert_outcomes(passed=1)
    assert "stale:" not in result.stdout.str()
    assert tree_digest(pytester.path / data / "data" / "report") == victim
    assert (pytester.path / data / "test_s" / "test_s" / "summary.txt").is_file()


def test_another_torchs_set_under_the_root_is_never_stale(pytester: pytest.Pytester) -> None:
    """Sets recorded under `snapshots/{torch}/{device}`, then an update with the plain root."""
    pytester.makepyfile(test_s=TWO_ARTIFACTS)
    per_torch = "torchcompile_snapshot_dir=snapshots/{torch}/{device}"
    pytester.runpytest("--update-snapshots", "-o", per_torch).assert_outcomes(passed=1)
    (recorded,) = (pytester.path / "snapshots").iterdir()
    shutil.copytree(recorded, pytester.path / "snapshots" / "2.11")
    before = tree_digest(pytester.path / "snapshots")
    result = pytester.runpytest("--update-snapshots", "-o", "torchcompile_snapshot_dir=snapshots")
    result.assert_outcomes(passed=1)
    assert "stale:" not in result.stdout.str()
    after = tree_digest(pytester.path / "snapshots")
    assert {k: v for k, v in after.items() if k in before} == before
