"""`run_program=True` on frames with closures: resume functions with free variables run bitwise.

A graph break in a function whose variables a nested function reads (a
closure), or in a function that is itself a closure, leaves Dynamo a resume
function with free variables: it installs a factory that the transformed
code calls with the frame's cells, and a nested function alive across the
break is made again (`_create_nested_fn`) from its code. The file does the
same: the factory makes the resume frame over the cells it is given, and
the nested function's code is found again in the function that makes it,
by name, line and digest. Driven as a user drives it: pytester, the program
run in a fresh process, training included (a codebook-style update of a
buffer through a nested function, as vector-quantize-pytorch's EMA does).
On torch 2.11, whose transformed code makes the resume function itself, the
file refuses each case, naming what it cannot write.
"""

from __future__ import annotations

import functools

import pytest

CASES = """
import pytest, torch

RUN = pytest.mark.compile_snapshot(backend="aot_eager", artifacts=("summary",), run_program=True)


def ran(result):
    print("RAN", result.program_report.ran)


def a_closure_alive_after_a_break(x):
    scale = x.sum()

    def f(y):
        return y * scale

    y = f(x)
    print("a graph break")
    return f(y) + scale


def make_scaled(k):
    def scaled(x):
        y = x * k
        print("a graph break")
        return y + k

    return scaled


scaled = make_scaled(3.0)


class CallsAClosure(torch.nn.Module):
    # its forward calls a closure that breaks the graph: Dynamo compiles the closure as a frame
    # of its own, and that frame's resume function reads the closure's cell

    def forward(self, x):
        return scaled(x * 2) - 1


class EMA(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.proj = torch.nn.Linear(4, 4)
        self.register_buffer("avg", torch.zeros(4))
        self.decay = 0.9

    def forward(self, x):
        def update(v):
            self.avg.mul_(self.decay).add_(v.detach().mean(0), alpha=1 - self.decay)

        y = self.proj(x)
        update(y)
        print("a graph break")
        update(y + 1)
        return y + self.avg


@RUN
def test_closure_alive(compile_model):
    torch.manual_seed(0)
    ran(compile_model(a_closure_alive_after_a_break, torch.randn(4, 4)))


@RUN
def test_closure_frame(compile_model):
    torch.manual_seed(0)
    ran(compile_model(CallsAClosure(), torch.randn(4, 4)))


@RUN
def test_ema_training(compile_model):
    torch.manual_seed(0)
    ran(compile_model(EMA(), torch.randn(4, 4)))


@RUN
def test_ema_inference(compile_model):
    torch.manual_seed(0)
    with torch.no_grad():
        ran(compile_model(EMA().eval(), torch.randn(4, 4)))
"""


def _torch_before_2_13() -> bool:
    import torch

    return tuple(int(p) for p in torch.__version__.split("+")[0].split(".")[:2]) < (2, 13)


def test_frames_with_closures_run_bitwise(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_cases=CASES)
    result = pytester.runpytest("--update-snapshots", "-s", "-p", "no:randomly")
    if _torch_before_2_13():
        # torch 2.11's Dynamo makes such a resume function in the transformed code itself
        # (MAKE_FUNCTION over a code object), which the file refuses, naming it
        result.assert_outcomes(failed=4)
        result.stdout.fnmatch_lines(["*its code cannot be written as Python: it makes a function*"])
        return
    result.assert_outcomes(passed=4)
    result.stdout.fnmatch_lines(
        [
            "*RAN*'frame 0 compile 0 (a_closure_alive_after_a_break)', 'frame 1 compile 0 (torch_dynamo_resume_in_a_closure_alive_after_a_break*",
            "*RAN*'frame 1 compile 0 (scaled)', 'frame 2 compile 0 (torch_dynamo_resume_in_scaled*",
            "*RAN*'frame 0 compile 0 (forward)', 'frame 1 compile 0 (torch_dynamo_resume_in_forward*",
            "*RAN*'frame 0 compile 0 (forward)', 'frame 1 compile 0 (torch_dynamo_resume_in_forward*",
        ]
    )


def _cached(method):
    """A decorator as linear_operator's `cached`: one wrapper code for every method it wraps."""

    @functools.wraps(method)
    def wrapped(self, x):
        return method(self, x)

    return wrapped


class _Operator:
    @_cached
    def evaluate(self, x):
        return x

    @_cached
    def diagonal(self, x):
        return x


def test_a_decorators_wrapper_called_as_a_frame_is_refused_naming_it_a_closure() -> None:
    """The wrapper's code belongs to as many functions as the decorator wrapped (gpytorch's
    operators), none of them by the code's own name: the refusal says so."""
    from pytest_torchcompile.snapshot.program.facts.homes import frame_home

    home = frame_home(_Operator.evaluate.__code__)
    assert home.function is None
    assert home.why.startswith("_cached.<locals>.wrapped is made at run time (a closure")
