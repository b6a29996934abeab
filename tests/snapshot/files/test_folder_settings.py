"""A snapshot folder setting the file system cannot take is a usage error, never an internal error.

The run's folder (`torchcompile_snapshot_dir`, `--torchcompile-snapshot-dir`) is checked
when pytest starts, a test's own (the marker's `snapshot_dir`) before its body runs or,
for what only its cases decide, before anything is written. `~` is the home folder, as in
pytest's own `cache_dir`; the rootdir rule then applies to it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import model_test

LONG = "a" * 300
DEEP = "/".join(["b" * 200] * 21)  # each name fits, the path (4,220 bytes) does not


def no_crash(result: pytest.RunResult) -> str:
    text = result.stdout.str() + result.stderr.str()
    assert "INTERNALERROR" not in text and "Traceback" not in text, text[-3000:]
    return text


@pytest.mark.torch_independent
@pytest.mark.parametrize(
    ("folder", "message"),
    [
        (
            f"snap/{LONG}",
            f"*'snap/{LONG[:55]}' has a folder name of 300 bytes (aaaaaaaaaaaaaaaaaaaaaaaa...), "
            "longer than the 255 bytes file systems take: shorten it",
        ),
        (
            DEEP,
            "*: cannot use the snapshot folder *bbbb: File name too long; "
            "name a shorter folder inside the rootdir, e.g. snapshots (the default)",
        ),
    ],
    ids=["long-name", "long-path"],
)
@pytest.mark.parametrize("how", ["flag", "ini"])
def test_a_folder_setting_too_long_for_the_file_system_is_a_usage_error(
    pytester: pytest.Pytester, folder: str, message: str, how: str
) -> None:
    (pytester.path / "snap").mkdir()  # an existing folder above: the file system gets to look
    pytester.makeini(f"[pytest]\ntorchcompile_snapshot_dir = {folder}\n" if how == "ini" else "")
    pytester.makepyfile(test_m="def test_m():\n    pass\n")
    flag = [f"--torchcompile-snapshot-dir={folder}"] if how == "flag" else []
    result = pytester.runpytest("--update-snapshots", *flag)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    no_crash(result)
    result.stderr.fnmatch_lines([message])
    assert sorted(p.name for p in (pytester.path / "snap").iterdir()) == []


MARKED = """
import pytest

@pytest.mark.compile_snapshot(backend="eager", artifacts=("summary",), snapshot_dir={folder!r})
def test_own(compile_model):
    raise AssertionError("the body ran")
"""


@pytest.mark.torch_independent
def test_a_markers_folder_no_file_system_takes_fails_the_test_before_it_runs(
    pytester: pytest.Pytester,
) -> None:
    bad = {
        "snap\0x": "holds a NUL byte, which no file or folder name can hold",
        f"snap/{LONG}": "has a folder name of 300 bytes (aaaa",
    }
    pytester.makepyfile(
        **{f"test_{i}": MARKED.format(folder=folder) for i, folder in enumerate(bad)}
    )
    result = pytester.runpytest("--update-snapshots")
    result.assert_outcomes(failed=2)
    text = no_crash(result)
    for folder, message in bad.items():
        assert f"usage error: compile_snapshot(snapshot_dir={folder[:60]!r}) {message}" in text
    assert "the body ran" not in text
    assert not (pytester.path / "snap").exists()


@pytest.mark.torch_independent
def test_a_home_folder_is_expanded_then_held_to_the_rootdir(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`~/golden` is `$HOME/golden`, never a folder named `~`: inside the rootdir it is used,
    outside it refused as any folder outside is."""
    monkeypatch.setenv("HOME", str(pytester.path))
    pytester.makeini("[pytest]\ntorchcompile_snapshot_dir = ~/golden\n")
    pytester.makepyfile(
        test_m=model_test("relu", backend="eager", extra=', artifacts=("summary",)'),
        test_own=MARKED.format(folder="~/own").replace(
            'raise AssertionError("the body ran")',
            "import torch; compile_model(torch.relu, torch.ones(2))",
        ),
    )
    result = pytester.runpytest("--update-snapshots")
    result.assert_outcomes(passed=2)
    assert sorted(str(p.relative_to(pytester.path)) for p in pytester.path.rglob("*.txt")) == [
        "golden/test_m/test_m/summary.txt",
        "own/test_own/test_own/summary.txt",
    ]
    home = pytester.path.parent / f"{pytester.path.name}-home"
    monkeypatch.setenv("HOME", str(home))
    result = pytester.runpytest("--update-snapshots", "test_m.py")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            f"*ini torchcompile_snapshot_dir = '~/golden': the snapshot folder {home}/golden "
            "is outside the rootdir*"
        ]
    )
    result = pytester.runpytest(
        "--update-snapshots", "--torchcompile-snapshot-dir=s", "test_own.py"
    )
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            f"*usage error: the snapshot folder {home}/own of test_own.py::test_own is outside the rootdir*"
        ]
    )
    assert not any(p.name == "~" for p in pytester.path.rglob("*")) and not home.exists()


@pytest.mark.torch_independent
def test_home_of_no_such_user_is_a_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_m="def test_m():\n    pass\n")
    result = pytester.runpytest("--torchcompile-snapshot-dir=~no-such-user-here/x")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    no_crash(result)
    result.stderr.fnmatch_lines(
        ["*begins with ~no-such-user-here, the home folder of a user this machine does not have*"]
    )
    assert not Path(pytester.path, "~no-such-user-here").exists()
