"""The program file under hostile conditions: a full disk, models the writer cannot name as
Python, meta tensors, an edited file, and settings the call ran under (see docs/program.md)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

FULL_DISK = """
import resource, signal, pytest, torch

class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x):
        return torch.relu(self.lin(x))

@pytest.mark.compile_snapshot(backend="aot_eager", artifacts=("summary",))
def test_full(compile_model, tmp_path):
    result = compile_model(Model(), torch.randn(2, 4))
    path = tmp_path / "p.py"
    earlier = "# the user's earlier program\\n" * 2000
    path.write_text(earlier)
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails as on a full disk
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (4096, hard))
    try:
        with pytest.raises(OSError):
            result.write_program(path)
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
    assert path.read_text() == earlier
    assert [p.name for p in tmp_path.iterdir()] == ["p.py"]  # no temp file left
"""


def test_write_program_on_a_full_disk_leaves_the_earlier_file_whole(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_full=FULL_DISK)
    pytester.runpytest_subprocess("--update-snapshots").assert_outcomes(passed=1)


META = """
import pytest, torch

class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x):
        return torch.relu(self.lin(x))

@pytest.mark.compile_snapshot(backend="aot_eager", artifacts=("summary",), run_program=True)
def test_meta(compile_model):
    with torch.device("meta"):
        model, x = Model(), torch.randn(2, 4)
    out = compile_model(model, x).output
    assert out.is_meta and out.shape == (2, 4)
"""


def test_run_program_on_a_meta_model_compares_shapes_not_values(pytester: pytest.Pytester) -> None:
    """A meta tensor holds no values: the program's run matches by dtype, shape and device."""
    pytester.makepyfile(test_meta=META)
    result = pytester.runpytest_subprocess("--update-snapshots")
    result.assert_outcomes(passed=1)
    assert "internal error" not in result.stdout.str()


LAMBDA = """
import runpy, pytest, torch

double_relu = lambda x: torch.relu(x) * 2

@pytest.mark.compile_snapshot(backend="aot_eager", artifacts=("summary", "program"))
def test_lambda(compile_model, tmp_path):
    x = torch.randn(3, 4)
    result = compile_model(double_relu, x)
    program = runpy.run_path(str(result.write_program(tmp_path / "p.py")))
    assert torch.equal(program["load"](double_relu)(x), result.output)

@pytest.mark.compile_snapshot(backend="aot_eager", artifacts=("summary",), run_program=True)
def test_lambda_fresh(compile_model):
    compile_model(double_relu, torch.randn(3, 4))
"""


def test_a_lambda_as_the_model_writes_a_program_that_runs(pytester: pytest.Pytester) -> None:
    """`<lambda>` is no name for a `def`: the file names its frame `f0c0__lambda_`."""
    pytester.makepyfile(test_lambda=LAMBDA)
    result = pytester.runpytest_subprocess("--update-snapshots")
    result.assert_outcomes(passed=1, failed=1)  # a lambda cannot be pickled to a fresh process
    result.stdout.fnmatch_lines(
        [
            "*run_program=True: the model and inputs must be picklable*Can't pickle <function <lambda>>*"
        ]
    )
    assert "internal error" not in result.stdout.str()
    (program,) = pytester.path.rglob("program.py.txt")
    assert "def f0c0__lambda_(" in program.read_text()


EDITED = """
import runpy, pytest, torch

def affine(x):  # floats: from 3.14 on a small int is an instruction's argument, not a constant
    return x * 2.5 + 1.5

def affine_edited(x):  # the same bytecode, other constants
    return x * 3.5 + 5.5

def act(x):
    return torch.relu(x)

def act_edited(x):  # the same bytecode, another name read
    return torch.sigmoid(x)

@pytest.mark.compile_snapshot(backend="aot_eager", artifacts=("summary",))
@pytest.mark.parametrize("recorded, edited", [(affine, affine_edited), (act, act_edited)])
def test_edited(compile_model, tmp_path, recorded, edited):
    assert recorded.__code__.co_code == edited.__code__.co_code
    x = torch.randn(3)
    program = runpy.run_path(str(compile_model(recorded, x).write_program(tmp_path / "p.py")))
    assert torch.equal(program["load"](recorded)(x), recorded(x))
    with pytest.raises(RuntimeError, match="is not the .* this file was written from"):
        program["load"](edited)
"""


def test_load_refuses_a_function_with_the_same_bytecode_and_other_constants_or_names(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_edited=EDITED)
    pytester.runpytest_subprocess("--update-snapshots").assert_outcomes(passed=2)


SETTINGS = """
import runpy, pytest, torch

class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x):
        return torch.relu(self.lin(x))

@pytest.fixture
def settings(request):
    yield
    torch.use_deterministic_algorithms(False)
    torch.set_default_dtype(torch.float32)

@pytest.mark.compile_snapshot(backend="aot_eager", artifacts=("summary",), run_program=True)
@pytest.mark.parametrize("switch", ["deterministic", "float64"])
def test_fresh(compile_model, settings, switch):
    if switch == "deterministic":
        torch.use_deterministic_algorithms(True)
    else:
        torch.set_default_dtype(torch.float64)
    compile_model(Model(), torch.randn(2, 4))

@pytest.mark.compile_snapshot(backend="aot_eager", artifacts=("summary",))
def test_named(compile_model, tmp_path):
    model, x = Model(), torch.randn(2, 4)
    program = runpy.run_path(str(compile_model(model, x).write_program(tmp_path / "p.py")))
    run = program["load"](model)
    with torch.no_grad(), pytest.raises(program["GuardFailure"]) as failed:
        run(x)
    print("FAILED:", str(failed.value).splitlines()[-1])
"""


def test_the_fresh_process_runs_under_the_calls_settings_and_a_differing_one_is_named(
    pytester: pytest.Pytester,
) -> None:
    """Deterministic algorithms and the default dtype reach the fresh process; a GLOBAL_STATE
    guard that fails names the switch, not the whole recorded state."""
    pytester.makepyfile(test_settings=SETTINGS)
    result = pytester.runpytest_subprocess("--update-snapshots", "-s")
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines(
        [
            "*FAILED:   frame 0 compile 0 (forward): GLOBAL_STATE differs: grad_mode: recorded true, here false"
        ]
    )


SCRIPT = """
import pytest, torch

class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)
        self.skips = torch.nn.ModuleList([None, torch.nn.ReLU(), None])  # slots without parameters

    def forward(self, x):
        for skip in self.skips:
            if skip is not None:
                x = skip(x)
        return self.lin(x)

@pytest.mark.compile_snapshot(backend="aot_eager", artifacts=("summary",))
def test_no_grad(compile_model, tmp_path):
    with torch.no_grad():
        result = compile_model(Block(), torch.randn(2, 4))
    print("PROGRAM", result.write_program(tmp_path / "program.py"))
"""


def test_python_program_py_runs_a_case_recorded_under_no_grad_with_empty_module_slots(
    pytester: pytest.Pytester,
) -> None:
    """The script restores the grad mode the case was recorded with; the rebuilt module has
    the None slots and parameterless submodules Dynamo counted."""
    pytester.makepyfile(test_script=SCRIPT)
    result = pytester.runpytest_subprocess("--update-snapshots", "-s")
    result.assert_outcomes(passed=1)
    (line,) = [line for line in result.outlines if "PROGRAM " in line]
    program = line.split("PROGRAM ", 1)[1].strip()
    env = {
        **os.environ,
        "PYTHONPATH": f"{pytester.path}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
    }
    done = subprocess.run(
        [sys.executable, program], capture_output=True, text=True, timeout=300, env=env
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "ran forward (aot_eager) on random inputs" in done.stdout


BUILTIN = """
import pytest, torch

@pytest.mark.compile_snapshot(backend="aot_eager", artifacts=("summary",), run_program=True)
def test_builtin(compile_model):
    compile_model(torch.sin, torch.randn(3))
"""


def test_a_builtin_as_the_model_is_refused_with_the_fix(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_builtin=BUILTIN)
    result = pytester.runpytest_subprocess("--update-snapshots")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*(a builtin such as torch.sin has no Python code*compile a Python function that calls it*"
        ]
    )
    assert "internal error" not in result.stdout.str()
