"""`{torch}`, `{device}` and `{python}` in the snapshot folder: one snapshot set per torch version and device
(and per Python, where a suite asks for it)."""

from __future__ import annotations

import re
import sys

import pytest
import torch

from pytest_torchcompile.snapshot.files.placeholders import (
    PlaceholderError,
    device_key,
    placeholders,
    resolve,
    torch_minor,
)
from tests.conftest import model_test

TORCH = torch_minor(torch.__version__)
PYTHON = f"{sys.version_info.major}.{sys.version_info.minor}"

# --- the template, without torch ---------------------------------------------------


@pytest.mark.parametrize(
    ("template", "names"),
    [
        ("snapshots", set()),
        ("snapshots/{torch}/{device}", {"torch", "device"}),
        ("golden-{torch}", {"torch"}),
        ("snap{{x}}/{device}", {"device"}),
        ("snapshots/{torch}/py{python}", {"torch", "python"}),
    ],
)
def test_placeholders_of_a_template(template: str, names: set[str]) -> None:
    assert placeholders(template) == names


@pytest.mark.parametrize(
    ("template", "message"),
    [
        (
            "snapshots/{foo}",
            "unknown placeholder {foo}; known: {torch} (torch's major.minor version, e.g. 2.13); {device} (where",
        ),
        ("snapshots/{}", "unknown placeholder {}"),
        ("snapshots/{0}", "unknown placeholder {0}"),
        ("snapshots/{torch:>5}", "placeholder {torch} takes no format spec"),
        ("snapshots/{device!r}", "placeholder {device} takes no format spec or conversion"),
        ("snapshots/{torch", "is not a valid folder template"),
        ("snapshots/torch}", "is not a valid folder template"),
    ],
)
def test_bad_templates_name_what_is_wrong(template: str, message: str) -> None:
    with pytest.raises(PlaceholderError, match=re.escape(message)):
        placeholders(template)


@pytest.mark.parametrize(
    ("version", "minor"),
    [
        ("2.13.0+cpu", "2.13"),
        ("2.11.0+cu130", "2.11"),
        ("2.15.0.dev20260101+cu132", "2.15"),
        ("2.9.1", "2.9"),
        ("3.0", "3.0"),
    ],
)
def test_torch_minor(version: str, minor: str) -> None:
    assert torch_minor(version) == minor


def test_device_key() -> None:
    assert device_key("cpu", None) == "cpu"
    assert device_key("cuda", (9, 0)) == "cuda-sm90"
    assert device_key("cuda", (12, 0)) == "cuda-sm120"
    assert device_key("mps", None) == "mps"
    assert resolve("s/{torch}/{device}/{{x}}", torch="2.13", device="cpu") == "s/2.13/cpu/{x}"


# --- through pytest ----------------------------------------------------------------------


def test_ini_placeholders_pick_a_folder_per_torch_and_device(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\ntorchcompile_snapshot_dir = golden/{torch}/{device}\n")
    pytester.makepyfile(test_m=model_test("relu", extra=', artifacts=("summary",)'))
    pytester.runpytest("--update-snapshots").assert_outcomes(passed=1)
    assert sorted(
        str(p.relative_to(pytester.path)) for p in (pytester.path / "golden").rglob("*.txt")
    ) == [f"golden/{TORCH}/cpu/test_m/test_m/summary.txt"]
    pytester.runpytest().assert_outcomes(passed=1)
    pytester.makepyfile(test_m=model_test("sigmoid", extra=', artifacts=("dynamo_graph",)'))
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [f"*snapshot golden/{TORCH}/cpu/test_m/test_m/dynamo_graph.fx.txt does not exist yet*"]
    )


@pytest.mark.torch_independent
def test_python_placeholder_keeps_a_set_per_python(pytester: pytest.Pytester) -> None:
    """`{python}` is the running interpreter's major.minor: a set recorded here is not another Python's."""
    pytester.makeini("[pytest]\ntorchcompile_snapshot_dir = golden/{torch}/py{python}\n")
    pytester.makepyfile(test_m=model_test("relu", extra=', artifacts=("summary",)'))
    pytester.runpytest("--update-snapshots").assert_outcomes(passed=1)
    assert (pytester.path / f"golden/{TORCH}/py{PYTHON}/test_m/test_m/summary.txt").is_file()
    other = "3.10" if PYTHON != "3.10" else "3.11"
    (pytester.path / f"golden/{TORCH}/py{PYTHON}").rename(
        pytester.path / f"golden/{TORCH}/py{other}"
    )
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [f"*snapshot golden/{TORCH}/py{PYTHON}/test_m/test_m/summary.txt does not exist yet*"]
    )


@pytest.mark.torch_independent
def test_flag_placeholders_override_the_ini(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\ntorchcompile_snapshot_dir = golden\n")
    pytester.makepyfile(test_m=model_test("relu", extra=', artifacts=("summary",)'))
    pytester.runpytest(
        "--update-snapshots", "--torchcompile-snapshot-dir=other-{device}-{torch}"
    ).assert_outcomes(passed=1)
    assert (pytester.path / f"other-cpu-{TORCH}/test_m/test_m/summary.txt").is_file()
    assert not (pytester.path / "golden").exists()


@pytest.mark.torch_independent
def test_unknown_placeholder_in_the_ini_is_a_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\ntorchcompile_snapshot_dir = snapshots/{torch}/{gpu}\n")
    pytester.makepyfile(test_m=model_test("relu"))
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "*torchcompile_snapshot_dir: 'snapshots/{torch}/{gpu}' has unknown placeholder {gpu}; known: {torch}*{device}*"
        ]
    )
    assert not (pytester.path / "snapshots").exists()


@pytest.mark.torch_independent
def test_unknown_placeholder_in_the_flag_is_a_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_m=model_test("relu"))
    result = pytester.runpytest("--torchcompile-snapshot-dir=s/{version}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*--torchcompile-snapshot-dir: 's/{version}' has unknown placeholder {version}*"]
    )


@pytest.mark.fresh_interpreter  # it checks that torch is not imported
def test_placeholders_resolve_without_importing_torch_until_a_case_runs(
    pytester: pytest.Pytester,
) -> None:
    """Collection and plain tests of a suite keyed by {torch}/{device} never import torch."""
    pytester.makeini("[pytest]\ntorchcompile_snapshot_dir = snapshots/{torch}/{device}\n")
    pytester.makepyfile(
        test_plain="import sys\n\ndef test_plain():\n    assert 'torch' not in sys.modules\n"
    )
    pytester.runpytest().assert_outcomes(passed=1)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_device_is_the_cases_device_not_the_machines(pytester: pytest.Pytester) -> None:
    """On a GPU machine: a CUDA case goes to cuda-sm<cc>, a CPU case to cpu, a mixed test is a usage error."""
    major, minor = torch.cuda.get_device_capability()
    pytester.makeini("[pytest]\ntorchcompile_snapshot_dir = snapshots/{device}\n")
    pytester.makepyfile(
        test_m="""
        import pytest, torch

        def f(x):
            return torch.relu(x) + 1

        @pytest.mark.compile_snapshot(backend="aot_eager", artifacts=("summary",))
        def test_gpu(compile_model):
            compile_model(torch.nn.Linear(4, 4).cuda(), torch.randn(2, 4, device="cuda"))

        @pytest.mark.compile_snapshot(backend="aot_eager", artifacts=("summary",))
        def test_cpu(compile_model):
            compile_model(f, torch.randn(2, 4))

        @pytest.mark.compile_snapshot(backend="aot_eager", artifacts=("summary",))
        def test_mixed(compile_model):
            compile_model(f, torch.randn(2, 4))
            compile_model(f, torch.randn(2, 4, device="cuda"))
        """
    )
    result = pytester.runpytest("--update-snapshots")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*usage error: the cases of test_m*test_mixed ran on cpu and cuda-sm*, but the snapshot folder*"
        ]
    )
    files = sorted(
        str(p.relative_to(pytester.path / "snapshots"))
        for p in (pytester.path / "snapshots").rglob("*.txt")
    )
    assert files == [
        "cpu/test_m/test_cpu/summary.txt",
        f"cuda-sm{major}{minor}/test_m/test_gpu/summary.txt",
    ]


@pytest.mark.torch_independent
def test_literal_braces_around_a_placeholder_name_are_a_folder_name(
    pytester: pytest.Pytester,
) -> None:
    """`{{torch}}` is the folder `{torch}`, not the placeholder (and no internal error)."""
    pytester.makeini("[pytest]\ntorchcompile_snapshot_dir = snap/{{torch}}/{torch}\n")
    pytester.makepyfile(test_m=model_test("relu", extra=', artifacts=("summary",)'))
    result = pytester.runpytest("--update-snapshots")
    result.assert_outcomes(passed=1)
    assert (pytester.path / f"snap/{{torch}}/{TORCH}/test_m/test_m/summary.txt").is_file()
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()


@pytest.mark.torch_independent
def test_stale_folders_of_every_devices_set_are_reported(pytester: pytest.Pytester) -> None:
    """A set this machine never writes (`meta`, `cuda-sm90` on a CPU runner) is judged too."""
    pytester.makeini("[pytest]\ntorchcompile_snapshot_dir = snapshots/{torch}/{device}\n")
    pytester.makepyfile(test_m=model_test("relu", extra=', artifacts=("summary",)'))
    for device in ("meta", "cuda-sm90"):
        for test in ("test_m", "test_gone"):
            folder = pytester.path / f"snapshots/{TORCH}/{device}/test_m/{test}"
            folder.mkdir(parents=True)
            (folder / "summary.txt").write_text("backend: eager\ngraphs: 1\n")
    result = pytester.runpytest("--update-snapshots")
    result.assert_outcomes(passed=1)
    lines = sorted(line for line in result.outlines if "test_gone" in line)
    assert lines == [
        f"removed stale: snapshots/{TORCH}/{device}/test_m/test_gone/ (no test in test_m.py has this name)"
        for device in ("cuda-sm90", "meta")
    ]
    assert (pytester.path / f"snapshots/{TORCH}/meta/test_m/test_m/summary.txt").is_file()


# --- a test's own folder (the marker's snapshot_dir) ---------------------------------------

OWN_FOLDER_TESTS = """
import pytest, torch

def f(x):
    return torch.{op}(x) + 1

@pytest.mark.compile_snapshot(backend="aot_eager", artifacts=("summary", "dynamo_graph"))
def test_shared(compile_model):
    compile_model(f, torch.randn(2, 4))

@pytest.mark.compile_snapshot(
    backend="aot_eager", artifacts=("summary", "dynamo_graph"), snapshot_dir={folder!r}
)
def test_own(compile_model):
    compile_model(f, torch.randn(2, 4))
"""


def own_folder_tests(op: str = "relu", folder: str = "golden/py{python}/{torch}/{device}") -> str:
    return OWN_FOLDER_TESTS.format(op=op, folder=folder)


@pytest.mark.torch_independent
def test_a_tests_own_snapshot_dir_keeps_its_set_beside_the_runs(
    pytester: pytest.Pytester,
) -> None:
    """`snapshot_dir=` moves one test's set (one per Python here) and leaves the run's set alone:
    the files that test has there (another Python's) are neither used nor judged unused or stale."""
    pytester.makeini("[pytest]\ntorchcompile_snapshot_dir = golden/{torch}/{device}\n")
    pytester.makepyfile(test_m=own_folder_tests())
    kept = pytester.path / f"golden/{TORCH}/cpu/test_m/test_own/summary.txt"
    kept.parent.mkdir(parents=True)
    kept.write_text("backend: aot_eager\ngraphs: 7\n")  # another Python's set: never read here
    result = pytester.runpytest("--update-snapshots")
    result.assert_outcomes(passed=2)
    assert sorted(
        str(p.relative_to(pytester.path)) for p in (pytester.path / "golden").rglob("*.txt")
    ) == [
        f"golden/{TORCH}/cpu/test_m/test_own/summary.txt",
        f"golden/{TORCH}/cpu/test_m/test_shared/dynamo_graph.fx.txt",
        f"golden/{TORCH}/cpu/test_m/test_shared/summary.txt",
        f"golden/py{PYTHON}/{TORCH}/cpu/test_m/test_own/dynamo_graph.fx.txt",
        f"golden/py{PYTHON}/{TORCH}/cpu/test_m/test_own/summary.txt",
    ]
    assert kept.read_text() == "backend: aot_eager\ngraphs: 7\n"
    assert "stale" not in result.stdout.str() and "unused" not in result.stdout.str()
    pytester.runpytest().assert_outcomes(passed=2)
    pytester.makepyfile(test_m=own_folder_tests(op="sigmoid"))
    result = pytester.runpytest()
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(
        [f"*changed artifacts in golden/py{PYTHON}/{TORCH}/cpu/test_m/test_own:*"]
    )


@pytest.mark.torch_independent
def test_a_tests_own_folder_inside_the_runs_is_a_usage_error(pytester: pytest.Pytester) -> None:
    """The run's update judges its set by its own layout: a test's set inside it would look like
    a deleted test's folder there."""
    pytester.makeini("[pytest]\ntorchcompile_snapshot_dir = golden/{torch}/{device}\n")
    pytester.makepyfile(test_m=own_folder_tests(folder="golden/{torch}/{device}/py{python}"))
    result = pytester.runpytest("--update-snapshots")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            f"*usage error: the snapshot folder *golden/{TORCH}/cpu/py{PYTHON} of test_m.py::test_own "
            f"(the marker's snapshot_dir) lies inside the run's snapshot folder *golden/{TORCH}/cpu, *"
        ]
    )
    assert not (pytester.path / f"golden/{TORCH}/cpu/py{PYTHON}").exists()


@pytest.mark.torch_independent
@pytest.mark.parametrize(
    ("folder", "message"),
    [
        (
            "golden/{gpu}",
            "*compile_snapshot(snapshot_dir=...): 'golden/{gpu}' has unknown placeholder {gpu}; known: {torch}*",
        ),
        ("  ", "*compile_snapshot(snapshot_dir='  ') must name a folder relative to the rootdir*"),
    ],
)
def test_a_bad_snapshot_dir_fails_the_test_naming_the_keyword(
    pytester: pytest.Pytester, folder: str, message: str
) -> None:
    pytester.makepyfile(test_m=own_folder_tests(folder=folder))
    result = pytester.runpytest("--update-snapshots")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines([message])
