"""A frame Dynamo declined to compile again runs as Python in the file, as it ran under torch.compile.

The model's own forward can be declined on its first call (a graph break
inside a context manager Dynamo cannot run in pieces, as peft's adapter
hooks are): it runs as Python, and the functions it calls are the frames.
A function called from compiled code that Dynamo compiled as a frame of its
own (pyro's `DistributionMeta.__call__`, called for each distribution a
model builds) can later be called with inputs every compile refuses, and
nothing to compile: Dynamo then runs it as Python, and from then on every
call of it, even one an old compile would accept. The file does the same,
from what the capture saw Dynamo decide, and says so in `Program.ran`;
without that record it would refuse the inputs Dynamo ran. Driven as a user
drives it: pytester, the file run in a fresh process, two calls (the second
file starts with the frame declined).
"""

from __future__ import annotations

import subprocess
import sys

import pytest

CASE = """
import pytest, torch


def scaled(x, factor):
    y = x * factor
    print("scaled")  # a graph break: Dynamo compiles the function as a frame of its own
    return y


class Model(torch.nn.Module):
    def forward(self, x):
        y = scaled(x, 2.0)  # compiled: frame `scaled`, compile 0
        n = scaled(3, 4)  # no tensor: compile 0 refuses it, a new compile finds nothing: declined
        return scaled(y, 2.0) + n  # compile 0 would accept it; Dynamo runs it as Python now


@pytest.mark.compile_snapshot(backend="aot_eager", artifacts=("summary",), run_program=True)
def test_declined(compile_model):
    result = compile_model(Model(), torch.randn(4))
    print("RAN", result.program_report.ran[-1])
    result = result.call(torch.randn(4))
    print("RAN", result.program_report.ran[-1])
"""

DECLINED = "'scaled (Dynamo declined to compile it again: its own code ran, as Python)'"
HAD_DECLINED = "'scaled (Dynamo had declined to compile it: its own code ran, as Python)'"


def test_a_frame_dynamo_declined_runs_as_python_from_then_on(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_declined=CASE)
    result = pytester.runpytest("--update-snapshots", "-s")
    result.assert_outcomes(passed=1)
    first, second = [line for line in result.stdout.lines if "RAN [" in line]
    # call 1: compile 0 ran, then Dynamo declined (the int call), then ran it as Python after
    assert first.index("'frame 1 compile 0 (scaled)'") < first.index(DECLINED)
    assert first.index(DECLINED) < first.index(HAD_DECLINED)
    assert "compile 1 (scaled)" not in first
    # call 2: the frame starts declined, all three calls of it run as Python
    assert second.count(HAD_DECLINED) == 3 and "(scaled)'" not in second


def test_without_the_record_the_file_refuses_what_dynamo_ran(pytester: pytest.Pytester) -> None:
    """The record is what lets the file run the frame as Python: a file written without it fails
    the case naming the guard, as any file whose guards refuse what torch.compile ran."""
    pytester.makeconftest(
        "import pytest_torchcompile.snapshot.program.layout.frames as frames\n"
        "frames.declined = lambda log, code: ''\n"
    )
    pytester.makepyfile(test_declined=CASE)
    result = pytester.runpytest("--update-snapshots")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*diverges at stage: program*", "*no compile of frame 'scaled' accepts these inputs*"]
    )


ENTRY = """
import contextlib
import pytest, torch


@contextlib.contextmanager
def hooks(module):
    module.active = True
    try:
        yield
    finally:
        module.active = False


class Adapted(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.fc = torch.nn.Linear(4, 4)

    def forward(self, x):
        with hooks(self):  # a graph break inside: Dynamo declines forward, compiles `inner`
            print("a graph break inside a context manager Dynamo cannot run in pieces")
            return self.inner(x)

    def inner(self, x):
        return torch.relu(self.fc(x))


@pytest.mark.compile_snapshot(backend="aot_eager", artifacts=(), run_program=True)
def test_adapted(compile_model, tmp_path_factory):
    result = compile_model(Adapted(), torch.randn(2, 4, requires_grad=True))
    result = result.call(torch.randn(2, 4, requires_grad=True))
    print("RAN", result.program_report.ran[-1])
    print("SCRIPT", result.write_program(tmp_path_factory.mktemp("files") / "adapted.py"))
"""


def test_a_forward_dynamo_declined_runs_as_python_and_the_frames_it_calls_compiled(
    pytester: pytest.Pytester, tmp_path
) -> None:
    """Training, two calls, and `python program.py`: the forward runs as Python, `inner` from its
    compile (before, the file was refused: its first compiled frame was not the model's)."""
    pytester.makepyfile(test_entry=ENTRY)
    result = pytester.runpytest("-s", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    ran = next(line for line in result.stdout.lines if "RAN [" in line)
    forward = "RAN ['forward (Dynamo had declined to compile it: its own code ran, as Python)', "
    assert forward in ran and ran.endswith(" compile 0 (inner)']"), ran
    script = next(line.split("SCRIPT ", 1)[1] for line in result.outlines if "SCRIPT " in line)
    done = subprocess.run([sys.executable, script], capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
