"""`CompileResult.write_program(path)`: one file that runs the case without torch.compile, as a user uses it.

The file defines `load(module=None, *, state_dict=None)` and `GuardFailure`;
the callable `load` returns gives the compiled results bit for bit, raises
`GuardFailure` naming the guard when no compile accepts the inputs, runs
from a state_dict (listing the guards it cannot check), runs as a script on
random inputs and says what ran, and warns when loaded under other versions.
What cannot be written as Python is refused naming the frame and the reason.
The `program` snapshot is the same file, normalized, its runtime and `load`
(the same in every file) folded to one line each.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys

import pytest

USE = """
import runpy, pytest, torch

class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.norm, self.lin = torch.nn.LayerNorm(8), torch.nn.Linear(8, 8)
        self.register_buffer("steps", torch.zeros(()))

    def forward(self, x, *, scale=2.0):
        self.steps.add_(1)
        return torch.relu(self.lin(self.norm(x))) * scale

@pytest.mark.compile_snapshot(backend="aot_eager", artifacts=("summary",))
def test_use(compile_model, tmp_path):
    torch.manual_seed(0)
    x = torch.randn(4, 8)
    model = Block()
    result = compile_model(model, x, scale=3.0)
    path = result.write_program(tmp_path / "block.py")
    program = runpy.run_path(str(path))

    fresh = Block()
    run = program["load"](fresh)
    out = run(x, scale=3.0)
    assert torch.equal(out.detach(), result.output.detach()) and fresh.steps.item() == 1
    assert run.ran == ["frame 0 compile 0 (forward)"]

    with pytest.raises(program["GuardFailure"]) as failed:
        run(torch.randn(4, 8, dtype=torch.float64), scale=3.0)
    print("GUARD", str(failed.value).splitlines()[-1])

    state = program["load"](state_dict=Block().state_dict())
    assert torch.equal(state(x, scale=3.0).detach(), out.detach())
    assert any("L['self']" in line for line in state.skipped)
    print("SCRIPT", path)
"""


def test_the_file_runs_bitwise_names_the_failing_guard_and_runs_from_a_state_dict(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_use=USE)
    result = pytester.runpytest("--update-snapshots", "-s", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        ["*GUARD*frame 0 compile 0 (forward): L?'x'?.dtype == torch.float32"]
    )


def test_as_a_script_it_runs_on_random_inputs_says_what_ran_and_warns_under_another_torch(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_use=USE)
    result = pytester.runpytest("--update-snapshots", "-s", "-p", "no:cacheprovider")
    path = next(line.split("SCRIPT ", 1)[1] for line in result.outlines if "SCRIPT " in line)
    done = subprocess.run(
        [sys.executable, path],
        capture_output=True,
        text=True,
        cwd=pytester.path,
        env=_env(pytester),
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "ran forward (aot_eager) on random inputs of the recorded shapes:" in done.stdout
    assert "frame 0 compile 0 (forward)" in done.stdout and "output: float32 [4, 8]" in done.stdout

    with open(path) as file:
        text = file.read()
    with open(path, "w") as file:
        file.write(text.replace("TORCH_VERSION = '", "TORCH_VERSION = '0.0.0-"))
    done = subprocess.run(
        [sys.executable, path],
        capture_output=True,
        text=True,
        cwd=pytester.path,
        env=_env(pytester),
    )
    assert (
        "UserWarning: this program file runs under torch" in done.stderr
        and "written with torch 0.0.0-" in done.stderr
    )
    assert "note: torch" in done.stdout


def _env(pytester: pytest.Pytester) -> dict[str, str]:
    import os

    return {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(pytester.path), *sys.path]),
    }


REFUSED = """
import pytest, torch

def plus_one(x):
    return x + 1

def backend(gm, example_inputs):
    return gm.forward

@pytest.mark.compile_snapshot(backend=backend, artifacts=("summary",))
def test_custom_backend(compile_model, tmp_path):
    result = compile_model(plus_one, torch.randn(3))
    from pytest_torchcompile.snapshot.program.layout.refusals import ProgramRefused
    with pytest.raises(ProgramRefused) as refused:
        result.write_program(tmp_path / "p.py")
    print("REFUSED", refused.value)
    assert not (tmp_path / "p.py").exists()
"""


def test_what_the_file_cannot_run_is_refused_naming_where_and_why(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_refused=REFUSED)
    result = pytester.runpytest("--update-snapshots", "-s", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            "*REFUSED write_program: the case: backend 'backend': the file runs Inductor's output code*"
        ]
    )


SNAPSHOT = """
import pytest, torch

class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x):
        return torch.{op}(self.lin(x))

@pytest.mark.compile_snapshot(backend="aot_eager", artifacts=("program",))
def test_m(compile_model):
    torch.manual_seed(0)
    compile_model(M(), torch.randn(2, 4))
"""


def test_the_program_snapshot_is_the_file_normalized_and_shows_a_change(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_m=SNAPSHOT.format(op="relu"))
    pytester.runpytest("--update-snapshots").assert_outcomes(passed=1)
    program = (pytester.path / "snapshots/test_m/test_m/program.py.txt").read_text()
    tree = ast.parse(program)
    defined = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    assert {"guards_f0c0_forward", "f0c0_forward", "compiled_fn_f0c0"} <= defined
    assert (
        "# ---- runtime: the helpers every program file carries (not snapshotted) ----" in program
    )
    assert (
        "# ---- load: `load`, `Program` and the script entry point (not snapshotted) ----"
        in program
    )
    # one snapshot set serves every Python and every build of the torch release
    assert "PYTHON_VERSION = '3.<N>.<N>'" in program and "'code': '<hash>'" in program
    assert re.search(r"^TORCH_VERSION = '\d+\.\d+\.\d+[^+']*'$", program, re.M)
    pytester.runpytest().assert_outcomes(passed=1)

    pytester.makepyfile(test_m=SNAPSHOT.format(op="sigmoid"))
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*snapshot snapshots/test_m/test_m/program.py.txt differs:*",
            "*-*aten.relu*",
            "*+*aten.sigmoid*",
        ]
    )
