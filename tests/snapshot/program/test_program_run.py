"""`compile_snapshot(run_program=True)`: the program file runs fresh, torch.compile trapped, bit for bit.

Driven as a user drives it (pytester, in a subprocess): a passing model
passes and writes nothing beside its snapshots; a file that computes
something else fails naming the stage `program` and what differed; a case
the file cannot be written for fails with the reason; Inductor's own random
numbers (CPU) replay bit for bit; a wrong value for the
keyword is a usage error.
"""

from __future__ import annotations

import pytest

from tests.conftest import REPO

TRAINING = """
import pytest, torch

class MLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.fc1, self.fc2 = torch.nn.Linear(8, 16), torch.nn.Linear(16, 4)

    def forward(self, x):
        y = torch.tanh(self.fc1(x))
        if y.sum() > 0:  # a graph break: a resume frame of its own
            y = y * 2
        return self.fc2(y)

@pytest.mark.compile_snapshot(backend="{backend}", artifacts=("summary",), run_program={run})
def test_m(compile_model):
    torch.manual_seed(0)
    result = compile_model(MLP(), torch.randn(4, 8))
    with torch.no_grad():  # another grad mode: a recompile (an inference graph), tried first from now on
        result = result.call(-torch.randn(4, 8))
    report = result.program_report
    print("RAN", report and report.ran)
"""

#: a conftest that plants a fault in the file the plugin writes: the kernels compute `tanh` as `sigmoid`.
PLANTED = """
import pytest_torchcompile.snapshot.program.layout.writer as writer

original = writer.program_text

def program_text(log, facts, backend):
    return original(log, facts, backend).replace("torch.ops.aten.tanh.default", "torch.ops.aten.sigmoid.default")

writer.program_text = program_text
"""


def test_a_training_model_with_a_graph_break_and_a_recompile_runs_bitwise(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_m=TRAINING.format(backend="aot_eager", run=True))
    result = pytester.runpytest("--update-snapshots", "-s")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        ["*RAN*frame 0 compile 0 (forward)*frame 1 compile 0*frame 0 compile 1 (forward)*"]
    )
    assert sorted(p.name for p in (pytester.path / "snapshots/test_m/test_m").iterdir()) == [
        "summary.txt"
    ]


TWO_STEPS = """
import pytest, torch

@pytest.mark.compile_snapshot(backend="aot_eager", artifacts=(), run_program=True)
def test_two_steps(compile_model):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 4))
    result = compile_model(model, torch.randn(4, 8))
    result = result.call(torch.randn(4, 8))  # its backward adds to the gradients the first one left
    assert model[0].weight.grad is None  # the plugin runs copies; the user's model is untouched
    print("RAN", result.program_report.ran)
"""


def test_a_second_training_call_starts_from_the_gradients_the_first_left(
    pytester: pytest.Pytester,
) -> None:
    """The compiled model's second backward adds to the first's gradients; the program file's run of
    that call must start from them too, or a correct file fails with `diverges at stage: program`."""
    pytester.makepyfile(test_two_steps=TWO_STEPS)
    result = pytester.runpytest("-s")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*RAN*frame 0 compile 0 (*)*frame 0 compile 0 (*)*"])


def test_a_file_that_computes_something_else_fails_naming_the_stage(
    pytester: pytest.Pytester,
) -> None:
    pytester.makeconftest(PLANTED)
    pytester.makepyfile(test_m=TRAINING.format(backend="aot_eager", run=True))
    result = pytester.runpytest("--update-snapshots")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*the program file run in a fresh process (torch.compile trapped) differs from the compiled run (aot_eager):*",
            "*diverges at stage: program*",
            "*output*",
        ]
    )


def test_without_the_keyword_nothing_runs_in_a_fresh_process(
    pytester: pytest.Pytester,
) -> None:
    pytester.makeconftest(PLANTED)
    pytester.makepyfile(test_m=TRAINING.format(backend="aot_eager", run=False))
    result = pytester.runpytest("--update-snapshots", "-s")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*RAN None*"])


RANDOM = """
import pytest, torch

class Noisy(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.fc = torch.nn.Linear(8, 8)

    def forward(self, x):
        # Inductor's own random numbers (no fallback_random): its CPU code draws their seeds from torch's
        # generator; numerics=False, as eager draws other numbers
        return torch.nn.functional.dropout(self.fc(x), 0.5, training=True) + torch.randn(4, 8)

@pytest.mark.compile_snapshot(backend="inductor", artifacts=("summary",), run_program=True, numerics=False)
def test_noisy(compile_model):
    torch.manual_seed(0)
    result = compile_model(Noisy(), torch.randn(4, 8, requires_grad=True))
    print("RAN", result.program_report.ran)
"""


def test_inductors_own_random_numbers_replay_from_the_file_bit_for_bit(
    pytester: pytest.Pytester,
) -> None:
    """Dropout and randn in a training graph on Inductor's CPU code: outputs and gradients bitwise."""
    pytester.makepyfile(test_r=RANDOM)
    result = pytester.runpytest("--update-snapshots", "-s")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*RAN *'frame 0 compile 0 (forward)'*"])


CUSTOM_BACKEND = """
import pytest, torch

def plus_one(x):
    return x + 1

def backend(gm, example_inputs):
    return gm.forward

@pytest.mark.compile_snapshot(backend=backend, artifacts=("summary",), run_program=True)
def test_custom_backend(compile_model):
    compile_model(plus_one, torch.randn(3))
"""


def test_a_case_the_file_cannot_replay_fails_with_the_reason(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_r=CUSTOM_BACKEND)
    result = pytester.runpytest("--update-snapshots")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*run_program=True: write_program: the case: backend 'backend': the file runs*"]
    )


def test_a_wrong_value_is_a_usage_error_naming_the_keyword(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_m=TRAINING.format(backend="aot_eager", run='"yes"'))
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*usage error*run_program*"])


INDUCTOR = """
import sys, pytest, torch
sys.path.insert(0, {repo!r})
from fixtures import zoo

@pytest.mark.compile_snapshot(backend="inductor", artifacts=("summary",), run_program=True)
def test_block(compile_model):
    model, args, _ = zoo.transformer_block()
    with torch.no_grad():
        result = compile_model(model, *args)
    print("LOADED", result.program_report.load_seconds)
"""


def test_inductor_kernels_load_from_the_file_and_run_bitwise(
    pytester: pytest.Pytester,
) -> None:
    """The zoo's transformer block on Inductor: its C++ kernels compiled from the output code in the file."""
    pytester.makepyfile(test_i=INDUCTOR.format(repo=str(REPO)))
    result = pytester.runpytest("--update-snapshots", "-s")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*LOADED [[]*[]]*"])


CONSTANT_IN_TRAINING = """
import pytest, torch

class Scaled(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.fc = torch.nn.Linear(4, 4)

    def forward(self, x):
        # a tensor built in the compiled code: a constant of the training graph, which AOTAutograd
        # keeps behind the autograd Function it makes for the compile
        return self.fc(x) * torch.tensor([1.0, -2.0, 0.5, 3.0])

@pytest.mark.compile_snapshot(backend="aot_eager", artifacts=("summary",), run_program=True)
def test_scaled(compile_model):
    torch.manual_seed(0)
    report = compile_model(Scaled(), torch.randn(2, 4)).program_report
    print("RAN", report and report.ran)
"""


def test_a_tensor_constant_of_a_training_graph_is_found_and_runs_bitwise(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_scaled=CONSTANT_IN_TRAINING)
    result = pytester.runpytest("--update-snapshots", "-s")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*RAN*'frame 0 compile 0 (forward)'*"])
