"""Snapshot files on a hostile disk: odd names, damaged folders, concurrent runs, stale folders.

Each test is a case where the plugin could crash, lose a file it does not
own, or let two tests share a file. Models are `torch.sin`-like functions on
the eager backend with one or two artifacts, so the runs stay cheap; the
stale-folder tests need no torch at all (folders written by hand, plain
tests), since what they check happens at collection and at the end of the run.
Running as root, permission cases run pytest without root's override of file
modes (`setpriv` drops CAP_DAC_OVERRIDE), so chmod applies as it does for users.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import unquote

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_torchcompile.snapshot.files.paths import MAX_SEGMENT_BYTES, folds_case, segment
from pytest_torchcompile.snapshot.files.store import (
    SnapshotStore,
    TextSnapshotExtension,
    UnreadableSnapshot,
    atomic_write_text,
)
from tests.conftest import REPO

NO_CRASH = ["INTERNALERROR", "Traceback", "pytest_torchcompile/"]


def assert_no_crash(result: pytest.RunResult) -> None:
    text = result.stdout.str() + result.stderr.str()
    for marker in NO_CRASH:
        assert marker not in text, f"{marker!r} in the output:\n{text}"


def run_unprivileged(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    """pytest in a subprocess where file modes bind (as root: without CAP_DAC_OVERRIDE)."""
    prefix: list[str] = []
    if os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            pytest.skip("running as root without setpriv: file modes do not bind")
        caps = "-dac_override,-dac_read_search"
        prefix = [setpriv, f"--inh-caps={caps}", f"--bounding-set={caps}"]
    return pytester.run(
        *prefix, sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args, timeout=300
    )


def files_under(root: Path) -> list[str]:
    """The snapshot files under `root` (the set's `.gitattributes` mark is not one)."""
    return (
        sorted(
            str(p.relative_to(root))
            for p in root.rglob("*")
            if p.is_file() and p.name != ".gitattributes"
        )
        if root.exists()
        else []
    )


# --- names: distinct tests, parametrizations and cases never share a file ----------

NAMES_TEST = """
import pytest, torch

MARK = pytest.mark.compile_snapshot(backend="eager", artifacts=("dynamo_graph",))

class TestA:
    @MARK
    def test_x(self, compile_model):
        compile_model(torch.sin, torch.randn(3))

class TestB:
    @MARK
    def test_x(self, compile_model):
        compile_model(torch.cos, torch.randn(3))

@pytest.mark.parametrize("op", [torch.sin, torch.cos, torch.tanh], ids=["a/b", "a:b", "a*b"])
@MARK
def test_p(compile_model, op):
    compile_model(op, torch.randn(3))

@MARK
def test_cases(compile_model):
    for name, op in [("a/b", torch.sin), ("a:b", torch.cos), ("..", torch.tanh), ("...", torch.exp)]:
        compile_model.case(name)(op, torch.randn(3))

@pytest.mark.parametrize("op", [torch.sin, torch.cos], ids=["x" * 300, "x" * 299 + "y"])
@MARK
def test_long(compile_model, op):
    compile_model(op, torch.randn(3))
"""


def test_distinct_tests_parametrizations_and_cases_never_share_a_file(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_m=NAMES_TEST)
    result = pytester.runpytest("--update-snapshots")
    result.assert_outcomes(passed=8)
    long_ids = [segment(f"test_long[{'x' * 300}]"), segment(f"test_long[{'x' * 299}y]")]
    expected = [
        "test_m/TestA/test_x/dynamo_graph.fx.txt",
        "test_m/TestB/test_x/dynamo_graph.fx.txt",
        "test_m/test_cases/%2E%2E%2E/dynamo_graph.fx.txt",
        "test_m/test_cases/%2E%2E/dynamo_graph.fx.txt",
        "test_m/test_cases/a%2Fb/dynamo_graph.fx.txt",
        "test_m/test_cases/a%3Ab/dynamo_graph.fx.txt",
        *(f"test_m/{name}/dynamo_graph.fx.txt" for name in long_ids),
        "test_m/test_p[a%2Ab]/dynamo_graph.fx.txt",
        "test_m/test_p[a%2Fb]/dynamo_graph.fx.txt",
        "test_m/test_p[a%3Ab]/dynamo_graph.fx.txt",
    ]
    assert files_under(pytester.path / "snapshots") == sorted(expected)
    assert all(
        len(name.encode()) == MAX_SEGMENT_BYTES and name.startswith("test_long[xxx")
        for name in long_ids
    )
    assert long_ids[0] != long_ids[1] and all("%~" in name for name in long_ids)
    pytester.runpytest().assert_outcomes(passed=8)  # each test reads back what it wrote


def test_bad_case_names_are_usage_errors_and_the_run_goes_on(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_m="""
        import pytest, torch

        MARK = pytest.mark.compile_snapshot(backend="eager", artifacts=())

        @MARK
        def test_dtype(compile_model):
            compile_model.case(torch.float32)(torch.sin, torch.randn(3))

        @MARK
        def test_int(compile_model):
            compile_model.case(1)(torch.sin, torch.randn(3))

        @MARK
        def test_empty(compile_model):
            compile_model.case("")(torch.sin, torch.randn(3))

        @MARK
        def test_takes_an_automatic_name(compile_model):
            compile_model.case("case_1")(torch.sin, torch.randn(3))
            compile_model(torch.cos, torch.randn(3))

        @MARK
        def test_after(compile_model):
            compile_model(torch.sin, torch.randn(3))
        """
    )
    result = pytester.runpytest()
    result.assert_outcomes(failed=4, passed=1)
    result.stdout.fnmatch_lines(
        [
            "*usage error: compile_model.case(name) takes a non-empty str, not torch.float32 (dtype)*",
            "*usage error: compile_model.case(name) takes a non-empty str, not 1 (int)*",
            "*usage error: compile_model.case(name) takes a non-empty str, not '' (str)*",
            "*usage error: compile_model.case('case_1') takes the name of unnamed call number 2*",
        ]
    )
    assert_no_crash(result)


@given(st.text(max_size=80))
def test_segment_is_one_safe_reversible_path_part(name: str) -> None:
    part = segment(name)
    assert (
        "/" not in part
        and "\\" not in part
        and part not in ("", ".", "..")
        and not part.startswith(".")
    )
    assert len(part.encode("utf-8", "surrogatepass")) <= MAX_SEGMENT_BYTES
    if "%~" not in part:
        assert unquote(part, errors="surrogatepass") == name


def test_windows_device_names_are_escaped_reversibly() -> None:
    """A case named `nul` or `Com1.x` would open a device on Windows, not a folder."""
    for name, part in (
        ("con", "%63on"),
        ("NUL", "%4EUL"),
        ("Com1.x", "%43om1.x"),
        ("lpt9", "%6Cpt9"),
        ("aux ", "%61ux%20"),
    ):
        assert segment(name) == part and unquote(part) == name
    for name in ("console", "com10", "nul_case", "test_con", "case_con"):
        assert segment(name) == name


def test_ordinary_names_keep_their_paths() -> None:
    for name in (
        "test_mlp_training",
        "test_x[1-2]",
        "case_0",
        "wide",
        "test_p[float32-cpu]",
        "test_q[a b]",
    ):
        assert segment(name) == name


# --- damaged snapshot folders: a failure that says what to do, never a crash -------

DAMAGE_TEST = """
import os, pytest, torch

OP = getattr(torch, os.environ.get("OP", "sin"))

@pytest.mark.parametrize("kind", ["folder", "file", "loop", "folderloop", "mode", "readonly"])
@pytest.mark.compile_snapshot(backend="eager", artifacts=("dynamo_graph",))
def test_d(compile_model, kind):
    compile_model(OP, torch.randn(3))
"""


def test_damaged_snapshot_paths_fail_with_a_fix(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(test_m=DAMAGE_TEST)
    pytester.runpytest("--update-snapshots").assert_outcomes(passed=6)
    folder = pytester.path / "snapshots/test_m"
    graph = {
        kind: folder / f"test_d[{kind}]/dynamo_graph.fx.txt"
        for kind in ("folder", "file", "loop", "folderloop", "mode", "readonly")
    }
    graph["folder"].unlink()
    graph["folder"].mkdir()
    shutil.rmtree(graph["file"].parent)
    graph["file"].parent.write_text("not a folder")
    graph["loop"].unlink()
    graph["loop"].symlink_to(graph["loop"].name)
    shutil.rmtree(graph["folderloop"].parent)
    graph["folderloop"].parent.symlink_to(graph["folderloop"].parent.name)
    graph["mode"].chmod(0)
    graph["readonly"].parent.chmod(0o555)
    try:
        result = run_unprivileged(pytester)
        result.assert_outcomes(failed=5, passed=1)
        result.stdout.fnmatch_lines_random(
            [
                "*snapshot snapshots/test_m/test_d[[]folder[]]/dynamo_graph.fx.txt is a folder, not a file: move or delete it, then run `pytest --update-snapshots`*",
                "*snapshots/test_m/test_d[[]file[]] is a file where a snapshot folder should be: move or delete it*",
                "*snapshots/test_m/test_d[[]loop[]]/dynamo_graph.fx.txt is a symbolic link that loops: delete it*",
                "*snapshots/test_m/test_d[[]folderloop[]] is a symbolic link that loops: delete it*",
                "*cannot read snapshot snapshots/test_m/test_d[[]mode[]]/dynamo_graph.fx.txt: permission denied on * (chmod u+r *",
            ]
        )
        assert_no_crash(result)

        monkeypatch.setenv("OP", "cos")  # every file must change
        result = run_unprivileged(pytester, "--update-snapshots")
        result.assert_outcomes(
            failed=4, passed=2
        )  # the looping file and the unreadable file are rewritten
        result.stdout.fnmatch_lines_random(
            [
                "*test_d[[]folder[]]/dynamo_graph.fx.txt is a folder, not a file*",
                "*test_d[[]file[]] is a file where a snapshot folder should be*",
                "*test_d[[]folderloop[]] is a symbolic link that loops*",
                "*cannot write snapshot snapshots/test_m/test_d[[]readonly[]]/dynamo_graph.fx.txt: permission denied on *test_d[[]readonly[]]: make it writable (chmod u+w *",
            ]
        )
        assert_no_crash(result)
        assert "torch.cos" in graph["loop"].read_text() and "torch.cos" in graph["mode"].read_text()
        assert [p.name for p in graph["readonly"].parent.iterdir()] == [
            "dynamo_graph.fx.txt"
        ]  # no temp file left
    finally:
        graph["readonly"].parent.chmod(0o755)


@pytest.mark.parametrize("how", ["flag", "ini", "empty ini"])
def test_snapshot_dir_naming_a_file_is_a_usage_error(pytester: pytest.Pytester, how: str) -> None:
    pytester.makepyfile(test_m="def test_nothing():\n    pass\n")
    (pytester.path / "golden").write_text("a file")
    args = ["--torchcompile-snapshot-dir=golden"] if how == "flag" else []
    if how != "flag":
        pytester.makeini(
            f"[pytest]\ntorchcompile_snapshot_dir = {'golden' if how == 'ini' else ''}\n"
        )
    result = pytester.runpytest(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    first = result.stderr.lines[0]
    if how == "empty ini":
        assert first.startswith(
            "ERROR: ini torchcompile_snapshot_dir = '' is empty: name a folder relative to the rootdir"
        )
    else:
        setting = (
            "--torchcompile-snapshot-dir=golden"
            if how == "flag"
            else "ini torchcompile_snapshot_dir = 'golden'"
        )
        assert first.startswith(
            f"ERROR: {setting} names {pytester.path / 'golden'}, which is a file, not a folder: name a folder"
        )
    assert_no_crash(result)


# --- updates: what they compare, write and delete ----------------------------------

HYGIENE_TEST = """
import os, pytest, torch

OP = getattr(torch, os.environ.get("OP", "sin"))

@pytest.mark.compile_snapshot(backend="eager", artifacts=("summary", "dynamo_graph"))
def test_m(compile_model):
    compile_model(OP, torch.randn(3))
"""


def test_updates_keep_modes_line_endings_and_other_files(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    umask = os.umask(0o022)
    os.umask(umask)
    mode = 0o666 & ~umask
    pytester.makepyfile(test_m=HYGIENE_TEST)
    pytester.runpytest("--update-snapshots").assert_outcomes(passed=1)
    folder = pytester.path / "snapshots/test_m/test_m"
    summary, graph = folder / "summary.txt", folder / "dynamo_graph.fx.txt"
    assert {p.stat().st_mode & 0o777 for p in (summary, graph)} == {mode}  # as open() creates files

    summary.write_bytes(summary.read_bytes().replace(b"\n", b"\r\n"))  # a Windows checkout
    graph.write_bytes(graph.read_bytes().rstrip(b"\n"))  # an editor that drops the final newline
    (folder / "README.txt").write_text("why this test exists\n")
    (folder / "guards.guards.txt").write_text("# from an earlier marker\n")
    leftover = folder / ".summary.txt.1a2b3c4d.tmp"  # a kill during fsync
    leftover.write_text("half")
    os.utime(leftover, (time.time() - 3600, time.time() - 3600))

    result = pytester.runpytest()
    result.assert_outcomes(passed=1)
    unused = [line for line in result.outlines if "snapshots/" in line]
    assert unused == [
        "unused: snapshots/test_m/test_m/guards.guards.txt"
    ]  # once; not README.txt, not the temp file

    monkeypatch.setenv("OP", "cos")
    graph.chmod(0o644)
    result = pytester.runpytest("--update-snapshots")
    result.assert_outcomes(passed=1)
    # beside a file it did not write, the plugin deletes nothing
    assert [line for line in result.outlines if "snapshots/" in line] == [
        "kept snapshots/test_m/test_m/guards.guards.txt: its folder also holds README.txt, which "
        "pytest-torchcompile did not write, so it deletes nothing there: delete the file yourself, "
        "or move the other files out"
    ]
    assert sorted(p.name for p in folder.iterdir()) == [
        ".summary.txt.1a2b3c4d.tmp",
        "README.txt",
        "dynamo_graph.fx.txt",
        "guards.guards.txt",
        "summary.txt",
    ]
    assert (
        "torch.cos" in graph.read_text() and graph.stat().st_mode & 0o777 == mode
    )  # rewritten, mode kept

    (folder / "README.txt").unlink()
    result = pytester.runpytest("--update-snapshots")
    assert [line for line in result.outlines if "snapshots/" in line] == [
        "deleted: snapshots/test_m/test_m/guards.guards.txt"
    ]
    assert sorted(p.name for p in folder.iterdir()) == ["dynamo_graph.fx.txt", "summary.txt"]


def test_non_utf8_message_says_what_update_does(tmp_path: Path) -> None:
    path = tmp_path / "summary.txt"
    path.write_bytes(b"\xff\xfe")
    with pytest.raises(UnreadableSnapshot) as excinfo:
        TextSnapshotExtension().read_snapshot_data_from_location(
            snapshot_location=str(path), snapshot_name="summary.txt", session_id=""
        )
    assert str(excinfo.value).endswith(
        "run `pytest --update-snapshots` to rewrite it with this run's output"
    )


def test_atomic_write_creates_files_as_open_would(tmp_path: Path) -> None:
    old = os.umask(0o027)
    try:
        target = tmp_path / "a" / "report.json"
        atomic_write_text(target, "{}\n")
        assert target.stat().st_mode & 0o777 == 0o640
        target.chmod(0o644)
        atomic_write_text(target, "{}\n")
        assert target.stat().st_mode & 0o777 == 0o640
    finally:
        os.umask(old)


def test_failed_write_says_why_and_leaves_no_empty_folder(tmp_path: Path) -> None:
    store = SnapshotStore(root=tmp_path / "s", rootdir=tmp_path, update=True)
    with pytest.raises(OSError):
        atomic_write_text(
            tmp_path / "s" / "new" / "deeper" / ("x" * 300), "text"
        )  # File name too long
    assert not (tmp_path / "s").exists()
    (tmp_path / "s").mkdir()
    (tmp_path / "s" / "t").write_text("a file")
    outcome = store.check(tmp_path / "s" / "t" / "u" / "summary.txt", "text\n")
    assert outcome.failed and outcome.message.startswith(
        "s/t is a file where a snapshot folder should be: move or delete it"
    )


# --- another test file's folder inside a test's folder ------------------------------

OVERLAP_A = """
import pytest, torch

@pytest.mark.compile_snapshot(backend="eager", artifacts=("summary",))
def test_x(compile_model):
    compile_model(torch.sin, torch.randn(3))
"""

OVERLAP_B = """
import pytest, torch

@pytest.mark.compile_snapshot(backend="eager", artifacts=("summary",))
def test_foo(compile_model):
    compile_model(torch.cos, torch.randn(3))
"""


def test_update_of_one_test_file_never_deletes_another_files_snapshots(
    pytester: pytest.Pytester,
) -> None:
    pytester.makeini("[pytest]\n")
    (pytester.path / "tests/test_a").mkdir(parents=True)
    (pytester.path / "tests/test_a.py").write_text(OVERLAP_A)
    (pytester.path / "tests/test_a/test_x.py").write_text(OVERLAP_B)
    (pytester.path / "tests/test_a/conftest.py").write_text(
        ""
    )  # hooks of tests/test_a.py then go through a subset of the plugins
    pytester.runpytest("--update-snapshots").assert_outcomes(passed=2)
    root = pytester.path / "snapshots"
    both = ["tests/test_a/test_x/summary.txt", "tests/test_a/test_x/test_foo/summary.txt"]
    assert files_under(root) == both

    result = pytester.runpytest("--update-snapshots", "tests/test_a.py")
    result.assert_outcomes(passed=1)
    assert files_under(root) == both
    assert "deleted:" not in result.stdout.str() and "stale" not in result.stdout.str()
    result.stdout.fnmatch_lines(["torch.compile snapshots: * 0 deleted"])

    result = pytester.runpytest("--update-snapshots", "-n", "2")
    result.assert_outcomes(passed=2)
    assert files_under(root) == both
    assert_no_crash(result)


# --- stale folders of renamed and deleted tests -------------------------------------

STALE_TEST = """
import pytest

def test_keep(compile_model):  # a suite with snapshots: only then is the snapshot folder judged
    pass

@pytest.mark.parametrize("device", ["cpu"])  # "cuda" is collected on GPU machines only
def test_param(device):
    pass

@pytest.mark.slow
class TestK:
    def test_y(self):
        pass
"""


def make_stale_tree(pytester: pytest.Pytester) -> Path:
    pytester.makeini("[pytest]\nmarkers =\n    slow: a marker to deselect by\n")
    pytester.makepyfile(test_m=STALE_TEST, test_b="def test_z(compile_model):\n    pass\n")
    root = pytester.path / "snapshots"
    for folder in (
        "test_m/test_keep",
        "test_m/test_old",
        "test_m/test_param[cuda]",
        "test_m/TestK/test_y",
        "test_m/TestK/test_gone",
        "test_gone/test_x",
        "test_b/test_z",
        "test_b/test_old",
    ):
        (root / folder).mkdir(parents=True)
        (root / folder / "summary.txt").write_text("backend: eager\ngraphs: 1\n")
    (root / "test_gone/test_x/README.txt").write_text("notes\n")
    return root


STALE_LINES = [
    "stale: snapshots/test_b/test_old/ (no test in test_b.py has this name)",
    "stale: snapshots/test_gone/test_x/ (its test file is gone)",
    "stale: snapshots/test_m/TestK/test_gone/ (no test in test_m.py has this name)",
    "stale: snapshots/test_m/test_old/ (no test in test_m.py has this name)",
]


def snapshot_lines(result: pytest.RunResult) -> list[str]:
    return sorted(line for line in result.outlines if "snapshots/" in line)


def test_stale_folders_are_reported_and_kept_by_partial_updates(pytester: pytest.Pytester) -> None:
    root = make_stale_tree(pytester)
    before = files_under(root)
    result = pytester.runpytest()
    result.assert_outcomes(passed=4)
    assert snapshot_lines(result) == STALE_LINES
    result.stdout.fnmatch_lines(
        [
            "stale folders belong to renamed or deleted tests: a full `pytest --update-snapshots` (no -k, -m, --lf, --deselect or test ids) removes them"
        ]
    )

    for args in (["-k", "keep"], ["-m", "not slow"], ["--deselect", "test_b.py::test_z"]):
        result = pytester.runpytest("--update-snapshots", *args)
        assert result.ret == 0, args
        assert files_under(root) == before, args
        assert snapshot_lines(result) == STALE_LINES, args
    result = pytester.runpytest("--update-snapshots", "test_m.py::test_keep")
    assert files_under(root) == before
    assert snapshot_lines(result) == [
        STALE_LINES[1]
    ]  # test_m.py collected in part, test_b.py not at all


def test_a_suite_without_compile_model_tests_judges_no_folder(pytester: pytest.Pytester) -> None:
    root = make_stale_tree(pytester)
    pytester.makepyfile(test_m="def test_keep():\n    pass\n", test_b="def test_z():\n    pass\n")
    result = pytester.runpytest("--update-snapshots")
    assert result.ret == 0 and snapshot_lines(result) == []
    assert "test_m/test_old/summary.txt" in files_under(root)


def test_updates_remove_stale_folders_of_the_test_files_they_ran_in_full(
    pytester: pytest.Pytester,
) -> None:
    root = make_stale_tree(pytester)
    result = pytester.runpytest(
        "--update-snapshots", "test_b.py"
    )  # all of test_b.py ran: its stale folder goes
    assert snapshot_lines(result) == [
        "removed stale: snapshots/test_b/test_old/ (no test in test_b.py has this name)",
        STALE_LINES[1],
    ]
    result = pytester.runpytest("--update-snapshots", "-n", "2")
    result.assert_outcomes(passed=4)
    beside_readme = (  # a folder it shares with a file it did not write: left whole
        "stale: snapshots/test_gone/test_x/ (its test file is gone); kept snapshots/test_gone/test_x/summary.txt: "
        "its folder also holds README.txt, which pytest-torchcompile did not write, so it deletes nothing there: "
        "delete the file yourself, or move the other files out"
    )
    assert snapshot_lines(result) == sorted(
        [beside_readme] + [line.replace("stale: ", "removed stale: ") for line in STALE_LINES[2:]]
    )
    result.stdout.fnmatch_lines(["torch.compile snapshots: 0 written, 0 updated, 2 deleted"])
    assert files_under(root) == [
        "test_b/test_z/summary.txt",
        "test_gone/test_x/README.txt",
        "test_gone/test_x/summary.txt",
        "test_m/TestK/test_y/summary.txt",
        "test_m/test_keep/summary.txt",
        "test_m/test_param[cuda]/summary.txt",
    ]
    assert not (root / "test_m/test_old").exists()
    result = pytester.runpytest("--update-snapshots", "test_b.py")
    assert snapshot_lines(result) == [STALE_LINES[1]]


# --- concurrent runs ------------------------------------------------------------------


def test_a_live_writers_temp_file_is_never_deleted(tmp_path: Path) -> None:
    root = tmp_path / "snapshots"
    folder = root / "test_m" / "test_m"
    folder.mkdir(parents=True)
    store = SnapshotStore(root=root, rootdir=tmp_path, update=True, started=time.time())
    old = time.time() - 3600
    live, dead, fresh = (
        folder / f".summary.txt.{tag}.tmp" for tag in ("0a1b0001", "dead0001", "0e000001")
    )
    for path in (live, dead, fresh):
        path.write_text("partial")
    for path in (live, dead):
        os.utime(path, (old, old))
    import fcntl

    with open(live) as held:
        fcntl.flock(held.fileno(), fcntl.LOCK_EX)
        assert store.leftover_temps(folder) == [dead]
    assert store.unused_in(folder) == []  # temp files are never reported as unused snapshots


CONCURRENT_TEST = """
import pytest, torch

@pytest.mark.parametrize("i", range(8))
@pytest.mark.compile_snapshot(backend="eager", artifacts=("summary", "dynamo_graph", "guards"))
def test_m(compile_model, i):
    compile_model(torch.sin, torch.randn(i + 1))
"""


def test_two_concurrent_updates_both_succeed(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\n")
    pytester.makepyfile(test_m=CONCURRENT_TEST)
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "--update-snapshots"]
    runs = [
        subprocess.Popen(
            command, cwd=pytester.path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        for _ in range(2)
    ]
    outputs = [run.communicate(timeout=300)[0] for run in runs]
    assert [run.returncode for run in runs] == [0, 0], outputs
    assert len(files_under(pytester.path / "snapshots")) == 24
    pytester.runpytest().assert_outcomes(passed=8)


BASELINE_WRITER = """
import sys
from pathlib import Path
from pytest_torchcompile.perf.baseline import BaselineStore, Machine
from tests.perf.test_timing_baselines_reports import record
store = BaselineStore(Path(sys.argv[1]), Machine("cpu", "Some CPU", "2.13.0", None, None, 1))
for i in range(25):
    store.write({f"{sys.argv[2]}::{i}": record(1.0)})
"""


def test_concurrent_baseline_updates_keep_both_runs_cases(tmp_path: Path) -> None:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
    }
    runs = [
        subprocess.Popen([sys.executable, "-c", BASELINE_WRITER, str(tmp_path), tag], env=env)
        for tag in ("a", "b")
    ]
    assert [run.wait(timeout=120) for run in runs] == [0, 0]
    (path,) = tmp_path.glob("*.json")
    keys = set(json.loads(path.read_text())["cases"])
    assert keys == {f"{tag}::{i}" for tag in "ab" for i in range(25)}


BENCH = """
import pytest, torch

@pytest.mark.compile_benchmark(backend="eager")
def test_m(compile_benchmark):
    compile_benchmark(torch.sin, torch.randn(64))
"""


def test_a_damaged_baseline_is_reported_once(pytester: pytest.Pytester) -> None:
    pytester.makeini(
        "[pytest]\ntorchcompile_perf_max_time = 0.1\ntorchcompile_perf_threshold = 0.9\n"
    )
    pytester.makepyfile(test_m=BENCH)
    pytester.runpytest("--torchcompile-perf-update-baseline").assert_outcomes(passed=1)
    (path,) = (pytester.path / "perf-baselines").glob("*.json")
    data = json.loads(path.read_text())
    del data["cases"]["test_m.py::test_m::case_0"]["metrics"]
    path.write_text(json.dumps(data))
    result = pytester.runpytest("--torchcompile-perf-gate")
    damaged = [line for line in result.outlines if "skipped the damaged baseline" in line]
    assert len(damaged) == 1, result.outlines


# --- file systems that do not tell upper from lower case (macOS, Windows) ----------
# Linux here cannot mount one (no casefold support, no vfat), so the twin name a
# case-folding file system answers to is made by hand: a symlink `SNAPSHOTS` to
# `snapshots` is what `folds_case` sees on macOS.

CASE_TEST = """
import pytest, torch

MARK = pytest.mark.compile_snapshot(backend="eager", artifacts=("dynamo_graph",))

@MARK
def test_A(compile_model):
    compile_model(torch.sin, torch.randn(3))

@MARK
def test_a(compile_model):
    compile_model(torch.cos, torch.randn(3))

@MARK
def test_cases(compile_model):
    compile_model.case("Wide")(torch.sin, torch.randn(3))
    compile_model.case("wide")(torch.cos, torch.randn(3))
"""


def test_folds_case_answers_what_the_file_system_does(tmp_path: Path) -> None:
    folder = tmp_path / "Snapshots"
    folder.mkdir()
    assert not folds_case(folder / "test_m" / "test_x")  # Linux: `sNAPSHOTS` is another name
    (tmp_path / "sNAPSHOTS").symlink_to(folder)
    assert folds_case(folder)  # `sNAPSHOTS` names the same folder, as on macOS
    assert not folds_case(Path("/"))  # no cased name to probe: no refusal on a guess


def test_names_differing_in_case_share_nothing_where_the_file_system_folds_case(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_m=CASE_TEST)
    pytester.runpytest("--update-snapshots").assert_outcomes(
        passed=3
    )  # Linux tells them apart: no false alarm
    assert len(files_under(pytester.path / "snapshots")) == 4

    (pytester.path / "SNAPSHOTS").symlink_to(pytester.path / "snapshots")
    result = pytester.runpytest("--update-snapshots")
    result.assert_outcomes(failed=3)  # both tests, not only the second one to run
    result.stdout.fnmatch_lines(
        [
            "*usage error: snapshot folder snapshots/test_m/test_A would be shared by test_m.py::test_A and test_m.py::test_a *",
            "*usage error: snapshot folder snapshots/test_m/test_a would be shared by test_m.py::test_A and test_m.py::test_a "
            "on this file system, which does not tell upper from lower case; rename one of them*",
            "*usage error: cases 'Wide' and 'wide' would share one snapshot folder on this file system, "
            "which does not tell upper from lower case; give them names that differ in more than case*",
        ]
    )
    assert_no_crash(result)


# --- two tests, one folder, two xdist workers ------------------------------------
# Test files outside the rootdir keep only their file name, so `a/test_m.py` and
# `b/test_m.py` map to one folder. Every process collects both, so a worker that
# runs one of them refuses it without having seen the other run.

SHARED_TEST = """
import pytest, torch

@pytest.mark.compile_snapshot(backend="eager", artifacts=("dynamo_graph",))
def test_x(compile_model):
    compile_model(torch.{op}, torch.randn(3))
"""


@pytest.mark.parametrize(
    "workers", [[], ["-n", "2", "--dist", "loadfile"]], ids=["one process", "two workers"]
)
def test_two_tests_sharing_a_folder_are_both_refused_in_any_worker(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, workers: list[str]
) -> None:
    for folder, op in (("a", "sin"), ("b", "cos")):
        (pytester.path / folder).mkdir()
        (pytester.path / folder / "test_m.py").write_text(SHARED_TEST.format(op=op))
    project = pytester.path / "proj"
    project.mkdir()
    (project / "pytest.ini").write_text("[pytest]\n")
    monkeypatch.chdir(project)
    result = pytester.run(
        sys.executable,
        "-m",
        "pytest",
        "-p",
        "no:cacheprovider",
        "--rootdir=.",
        "--import-mode=importlib",
        "--update-snapshots",
        *workers,
        "../a/test_m.py",
        "../b/test_m.py",
        timeout=300,
    )
    # under xdist both items share the node id `::test_x` (pytest's, below), so xdist runs one
    assert " passed" not in result.stdout.str() and (
        "2 failed" in result.stdout.str() or workers
    ), result.stdout.str()
    # outside the rootdir pytest's node ids are both `::test_x`: the message names the files
    shared = f"snapshot folder snapshots/test_m/test_x would be shared by {pytester.path}/a/test_m.py::test_x and {pytester.path}/b/test_m.py::test_x; rename one of them"
    assert shared in result.stdout.str(), result.stdout.str()
    assert not (project / "snapshots").exists()  # nothing written for either
    assert_no_crash(result)
