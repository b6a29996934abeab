"""Under `TORCH_TRACE`, each test's compiles land in a trace of their own that names the test, and tlparse says so."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_torchcompile.plugin import trace_folder

TWO_TESTS = """
import pytest, torch

@pytest.mark.compile_snapshot(backend="aot_eager")
def test_alpha(compile_model):
    compile_model(lambda x: torch.relu(x) + 1, torch.randn(4))

@pytest.mark.compile_snapshot(backend="aot_eager")
def test_beta(compile_model):
    compile_model(lambda x: torch.sin(x) * 2, torch.randn(4))

def test_compiles_nothing():
    pass
"""


def _tlparse() -> str | None:
    """tlparse (`pip install tlparse`) on PATH or beside this interpreter (a venv not activated)."""
    beside = Path(sys.executable).parent / "tlparse"
    return shutil.which("tlparse") or (str(beside) if beside.is_file() else None)


@pytest.fixture
def traced(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A two-test run (and a test that compiles nothing) under TORCH_TRACE; returns the trace folder."""
    trace = pytester.path / "trace"
    monkeypatch.setenv("TORCH_TRACE", str(trace))
    pytester.makepyfile(test_two=TWO_TESTS)
    pytester.runpytest("--update-snapshots").assert_outcomes(passed=3)
    return trace


def test_each_test_has_a_trace_folder_of_its_own_naming_it(traced: Path) -> None:
    folders = {p.name: p for p in traced.iterdir()}
    assert sorted(folders) == [
        "test_two.py-test_alpha",
        "test_two.py-test_beta",
    ]  # nothing for no compile
    for name, folder in folders.items():
        [log] = folder.glob("*.log")
        text = log.read_text()
        nodeid = "test_two.py::" + name.split("-")[1]
        assert '"pytest_test"' in text and nodeid in text
        ops = ("relu", "sin") if name.endswith("alpha") else ("sin", "relu")
        assert (
            ops[0] in text and f"torch.{ops[1]}(" not in text
        )  # the other test's graph is not here
    assert not list(traced.glob("*.log"))  # torch's own file: nothing was compiled outside a test


def test_tlparse_output_names_both_tests(traced: Path, tmp_path: Path) -> None:
    tlparse = _tlparse()
    if tlparse is None:
        pytest.skip(
            "tlparse is not installed (pip install tlparse: the project's dev extra has it)"
        )
    named = {}
    for folder in sorted(traced.iterdir()):
        out = tmp_path / folder.name
        [log] = folder.glob("*.log")
        subprocess.run(
            [tlparse, str(log), "-o", str(out), "--no-browser", "--overwrite"],
            check=True,
            capture_output=True,
            timeout=120,
        )
        directory = json.loads((out / "compile_directory.json").read_text())
        [record] = [
            a
            for c in directory.values()
            for a in c["artifacts"]
            if a["name"].startswith("pytest_test")
        ]
        named[folder.name] = (out / record["url"]).read_text().strip()
        assert "[0/0]" in directory and "pytest_test" in (out / "index.html").read_text()
    assert named == {
        "test_two.py-test_alpha": "test_two.py::test_alpha",
        "test_two.py-test_beta": "test_two.py::test_beta",
    }


@pytest.mark.parametrize(
    ("nodeid", "folder"),
    [
        ("tests/test_m.py::test_a", "tests-test_m.py-test_a"),
        ("test_m.py::test_a[1-2]", "test_m.py-test_a[1-2]"),
        ("test_m.py::test_a[x y]", "test_m.py-test_a[x_y]-"),
        ("test_m.py::test_a[x_y]", "test_m.py-test_a[x_y]"),
        ("test_m.py::test_a[x/y]", "test_m.py-test_a[x-y]-"),
        ("test_m.py::test_a[x::y]", "test_m.py-test_a[x-y]-"),
        ("my-tests/test_m.py::test_a", "my-tests-test_m.py-test_a-"),
    ],
)
def test_trace_folders_are_safe_names_and_never_shared(nodeid: str, folder: str) -> None:
    name = trace_folder(nodeid)
    assert name.startswith(folder) and (name == folder) == (not folder.endswith("-"))


def test_ids_that_read_alike_get_folders_of_their_own() -> None:
    """`/`, `::` and `-` all read as `-`: the ids differ, so must their folders."""
    ids = ["test_m.py::test_a[x/y]", "test_m.py::test_a[x-y]", "test_m.py::test_a[x::y]"]
    ids += ["a-b/test_m.py::t", "a/b/test_m.py::t"]
    assert len({trace_folder(i) for i in ids}) == len(ids)


def test_torch_trace_naming_a_file_is_a_usage_error_saying_so(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Not one `NotADirectoryError` per test: the setting is named once, with the fix."""
    (pytester.path / "trace.log").write_text("not a folder\n")
    monkeypatch.setenv("TORCH_TRACE", str(pytester.path / "trace.log"))
    pytester.makepyfile(test_two=TWO_TESTS)
    result = pytester.runpytest_subprocess("--update-snapshots")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: TORCH_TRACE=*trace.log is a file, not a folder: *"])
    assert "NotADirectoryError" not in result.stdout.str() + result.stderr.str()
