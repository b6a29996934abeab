"""Snapshot files the plugin cannot read or write: a clear failure, never a hang or a wrong hint."""

from __future__ import annotations

import os
import stat

import pytest

from tests.snapshot.files.test_hostile_disk import assert_no_crash, run_unprivileged

ONE_ARTIFACT = """
import os, pytest, torch

OP = getattr(torch, os.environ.get("OP", "sin"))

@pytest.mark.compile_snapshot(backend="eager", artifacts=("summary", "dynamo_graph"))
def test_s(compile_model):
    compile_model(OP, torch.randn(3))
"""


@pytest.mark.parametrize("update", [False, True], ids=["plain run", "update"])
def test_a_fifo_where_a_snapshot_goes_fails_without_hanging(
    pytester: pytest.Pytester, update: bool
) -> None:
    pytester.makepyfile(test_s=ONE_ARTIFACT)
    folder = pytester.path / "snapshots" / "test_s" / "test_s"
    folder.mkdir(parents=True)
    os.mkfifo(folder / "summary.txt")
    result = pytester.runpytest_subprocess(*(["--update-snapshots"] if update else []), timeout=120)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*snapshot snapshots/test_s/test_s/summary.txt is a FIFO, not a file pytest-torchcompile wrote: "
            "it neither reads nor replaces it; delete it, then run `pytest --update-snapshots`*"
        ]
    )
    assert stat.S_ISFIFO((folder / "summary.txt").lstat().st_mode)  # never replaced
    assert_no_crash(result)


def test_a_failed_write_on_update_is_headed_as_one(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(test_s=ONE_ARTIFACT)
    pytester.runpytest("--update-snapshots").assert_outcomes(passed=1)
    folder = pytester.path / "snapshots" / "test_s" / "test_s"
    before = (folder / "dynamo_graph.fx.txt").read_bytes()
    monkeypatch.setenv("OP", "cos")  # the graph changes: the update must write it
    folder.chmod(0o555)
    try:
        result = run_unprivileged(pytester, "--update-snapshots")
    finally:
        folder.chmod(0o755)
    result.assert_outcomes(failed=1)
    text = result.stdout.str()
    assert "snapshot not written: 1 file could not be written" in text, text
    assert "snapshot unreadable" not in text and "if the change is intended" not in text, text
    assert (folder / "dynamo_graph.fx.txt").read_bytes() == before
    assert_no_crash(result)


def test_an_update_that_cannot_write_the_snapshot_folder_is_refused_before_any_test(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_s=ONE_ARTIFACT)
    (pytester.path / "snapshots").mkdir()
    (pytester.path / "snapshots").chmod(0o555)
    try:
        result = run_unprivileged(pytester, "--update-snapshots")
    finally:
        (pytester.path / "snapshots").chmod(0o755)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "ERROR: ini torchcompile_snapshot_dir = 'snapshots': --update-snapshots cannot write the snapshot "
            "folder */snapshots: permission denied on */snapshots (make it writable: chmod u+w *); nothing was written"
        ]
    )
    assert list((pytester.path / "snapshots").iterdir()) == []
