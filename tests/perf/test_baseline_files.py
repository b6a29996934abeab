"""Baseline files: never replaced by a partial update, damage named as such, writes checked.

A baseline file the plugin cannot read is left as it is (the update names it
and the fix); a temp file a killed write left is removed; a folder an update
cannot write is refused before any test runs, and a write that fails at the
end names the setting and says nothing was written.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.snapshot.files.test_hostile_disk import assert_no_crash, run_unprivileged

TWO_BENCHMARKS = """
import pytest, torch

@pytest.mark.compile_benchmark(backend="eager")
def test_a(compile_benchmark):
    compile_benchmark(torch.sin, torch.randn(64))

@pytest.mark.compile_benchmark(backend="eager")
def test_b(compile_benchmark):
    compile_benchmark(torch.cos, torch.randn(64))
"""
FAST = "[pytest]\ntorchcompile_perf_max_time = 0.05\ntorchcompile_perf_threshold = 0.9\n"


@pytest.fixture(scope="module")
def baseline(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Both tests' baseline, recorded once for the module (this machine's file)."""
    project = tmp_path_factory.mktemp("recorded")
    (project / "pytest.ini").write_text(FAST)
    (project / "test_p.py").write_text(TWO_BENCHMARKS)
    command = [
        sys.executable,
        "-m",
        "pytest",
        "-p",
        "no:cacheprovider",
        "--torchcompile-perf-update-baseline",
    ]
    done = subprocess.run(command, cwd=project, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    (path,) = (project / "perf-baselines").glob("*.json")
    return path


def recorded(pytester: pytest.Pytester, baseline: Path) -> Path:
    """The project with the recorded baseline in place; its baseline file."""
    pytester.makeini(FAST)
    pytester.makepyfile(test_p=TWO_BENCHMARKS)
    target = pytester.path / "perf-baselines" / baseline.name
    target.parent.mkdir()
    shutil.copy(baseline, target)
    return target


def merge_conflict(text: str) -> str:
    lines = text.splitlines(keepends=True)
    return "".join([*lines[:3], "<<<<<<< HEAD\n", *lines[3:]])


DAMAGES = {
    "merge conflict": merge_conflict,
    "truncated": lambda text: text[: len(text) // 2],
    "nested too deep": lambda text: "[" * 200_000 + "]" * 200_000,
}


@pytest.mark.parametrize("damage", sorted(DAMAGES))
def test_an_unreadable_baseline_is_never_replaced_by_a_partial_update(
    pytester: pytest.Pytester, baseline: Path, damage: str
) -> None:
    path = recorded(pytester, baseline)
    path.write_text(DAMAGES[damage](path.read_text()))
    before = path.read_bytes()
    result = pytester.runpytest("--torchcompile-perf-update-baseline", "-k", "test_b")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "error: the baseline was not written (ini torchcompile_perf_baseline_dir = 'perf-baselines'): "
            f"perf-baselines/{path.name} cannot be read (*), and replacing it would lose the cases this run "
            "did not measure; nothing was written: repair the file*"
        ]
    )
    assert path.read_bytes() == before
    assert_no_crash(result)


def test_a_baseline_nested_too_deep_is_the_damaged_baseline_message(
    pytester: pytest.Pytester, baseline: Path
) -> None:
    path = recorded(pytester, baseline)
    path.write_text("[" * 200_000 + "]" * 200_000)
    result = pytester.runpytest("--torchcompile-perf-gate")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(
        [
            f"skipped the damaged baseline file perf-baselines/{path.name}: nested too deep to be a "
            "baseline (repair it, or delete it and re-record it with pytest --torchcompile-perf-update-baseline)"
        ]
    )
    assert "RecursionError" not in result.stdout.str()
    assert_no_crash(result)


def test_a_killed_writes_temp_file_is_removed_by_the_next_update(
    pytester: pytest.Pytester, baseline: Path
) -> None:
    path = recorded(pytester, baseline)
    folder = path.parent
    leftover = folder / f".{path.name}.0a1b2c3d.tmp"  # what a kill -9 during a write leaves
    users = folder / f".{path.name}.mine.tmp"  # not a name the plugin writes
    for temp in (leftover, users):
        temp.write_text('{"cases": {')
        os.utime(temp, (time.time() - 3600, time.time() - 3600))
    pytester.runpytest("--torchcompile-perf-update-baseline", "-k", "test_a").assert_outcomes(
        passed=1
    )
    assert not leftover.exists() and users.exists()
    assert set(json.loads(path.read_text())["cases"]) == {
        "test_p.py::test_a::case_0",
        "test_p.py::test_b::case_0",
    }


def test_an_unwritable_baseline_folder_is_refused_before_any_test(
    pytester: pytest.Pytester,
) -> None:
    pytester.makeini(FAST)
    pytester.makepyfile(test_p=TWO_BENCHMARKS)
    folder = pytester.path / "bl"
    folder.mkdir()
    folder.chmod(0o555)
    try:
        result = run_unprivileged(
            pytester, "--torchcompile-perf-update-baseline", "--torchcompile-perf-baseline-dir=bl"
        )
    finally:
        folder.chmod(0o755)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "ERROR: --torchcompile-perf-update-baseline cannot write the baseline folder */bl (--torchcompile-perf-baseline-dir=bl): "
            "permission denied on */bl (make it writable: chmod u+w */bl); nothing was run or written"
        ]
    )


FOLDER_TURNS_READ_ONLY = """
import os, pytest, torch

@pytest.mark.compile_benchmark(backend="eager")
def test_a(compile_benchmark):
    compile_benchmark(torch.sin, torch.randn(64))
    os.chmod("bl", 0o555)  # the folder turns read-only after the start-up check
"""


def test_a_failed_baseline_write_names_the_setting_and_says_nothing_was_written(
    pytester: pytest.Pytester,
) -> None:
    pytester.makeini(FAST)
    pytester.makepyfile(test_p=FOLDER_TURNS_READ_ONLY)
    folder = pytester.path / "bl"
    folder.mkdir()
    try:
        result = run_unprivileged(
            pytester, "--torchcompile-perf-update-baseline", "--torchcompile-perf-baseline-dir=bl"
        )
    finally:
        folder.chmod(0o755)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "error: the baseline was not written (--torchcompile-perf-baseline-dir=bl): cannot write bl/*.json: "
            "Permission denied; nothing was written, the previous baseline (if any) is unchanged"
        ]
    )
    assert list(folder.iterdir()) == []
    assert_no_crash(result)


SHARDED = """
import pytest, torch

@pytest.mark.parametrize("i", range(4))
@pytest.mark.compile_benchmark(backend="eager")
def test_p(compile_benchmark, i):
    compile_benchmark(torch.sin, torch.randn(16 * (i + 1)))
"""


def merge_baselines(*args: Path) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "pytest_torchcompile", "merge-baselines", *map(str, args)]
    return subprocess.run(command, capture_output=True, text=True, timeout=120)


def test_a_split_suites_runners_each_keep_the_others_records_and_merge(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    """pytest-split's `--splits 2 --group K` on two runners from one checkout, then one folder."""
    pytester.makeini(FAST)
    pytester.makepyfile(test_p=SHARDED)
    pytester.runpytest("--torchcompile-perf-update-baseline").assert_outcomes(passed=4)
    folder = pytester.path / "perf-baselines"
    (path,) = folder.glob("*.json")
    checkout = path.read_bytes()
    start = json.loads(checkout)["cases"]
    runs = []
    for group in ("1", "2"):  # each runner starts from the checkout
        path.write_bytes(checkout)
        result = pytester.runpytest(
            "--torchcompile-perf-update-baseline", "--splits", "2", "--group", group
        )
        result.assert_outcomes(passed=2)
        runs.append(shutil.copytree(folder, tmp_path / f"runner-{group}"))
        cases = json.loads(path.read_text())["cases"]
        assert set(cases) == set(start)
        assert sum(cases[key] == start[key] for key in start) == 2  # the other group's, untouched
    path.write_bytes(checkout)
    done = merge_baselines(folder, *runs)
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"{path.name}: 4 case(s) from 2 run(s)\n"
    merged = json.loads(path.read_text())["cases"]
    by_run = [json.loads((run / path.name).read_text())["cases"] for run in runs]
    for key in start:
        assert merged[key] != start[key]
        assert merged[key] in (by_run[0][key], by_run[1][key])


def test_merging_two_runs_that_changed_one_case_differently_writes_nothing(
    tmp_path: Path,
) -> None:
    from pytest_torchcompile.perf.baseline import BaselineStore, Machine
    from tests.perf.test_timing_baselines_reports import record

    machine = Machine("cpu", "Some CPU", "2.13.0", None, None, 1)
    base, one, two = (tmp_path / name for name in ("base", "one", "two"))
    for folder, speedup in ((base, 2.0), (one, 2.5), (two, 3.0)):
        BaselineStore(folder, machine).write({"t::case_0": record(speedup)})
    before = (base / machine.filename()).read_bytes()
    done = merge_baselines(base, one, two)
    assert done.returncode == 2
    assert "t::case_0 was re-recorded by two runs" in done.stderr
    assert (base / machine.filename()).read_bytes() == before
    (one / machine.filename()).write_text("{")
    done = merge_baselines(base, one)
    assert done.returncode == 2 and "cannot be read (not JSON" in done.stderr
