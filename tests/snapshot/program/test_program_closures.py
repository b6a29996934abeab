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


def test_a_decorators_wrappers_are_found_by_what_refers_to_their_code() -> None:
    """The wrapper's code belongs to as many functions as the decorator wrapped (gpytorch's
    operators), none of them by the code's own name: each is found, by the name `functools.wraps`
    gave it; a function made per call (a lambda) has no name, and the refusal says so."""
    from pytest_torchcompile.snapshot.program.facts.homes import frame_home

    home = frame_home(_Operator.evaluate.__code__)
    assert home.function is None and home.why == ""
    assert sorted(path for _, path in home.closures) == [
        f"{__name__}:_Operator.diagonal",
        f"{__name__}:_Operator.evaluate",
    ]
    made = (lambda: lambda y: y)()
    assert frame_home(made.__code__).why.endswith(
        "(a closure made per call, such as a lambda), so no name imports it"
    )


DECORATED = """
import functools
import pytest, torch


def announced(method):
    @functools.wraps(method)
    def wrapped(self, x):
        print("calling")  # a graph break in the wrapper: Dynamo compiles it as a frame of its own
        return method(self, x)

    return wrapped


class Block(torch.nn.Module):
    @announced
    def scale(self, x):
        return x * 2

    @announced
    def shift(self, x):
        return x + 1

    def forward(self, x):
        return self.shift(self.scale(torch.sin(x)))


@pytest.mark.compile_snapshot(backend="aot_eager", artifacts=("summary",), run_program=True)
def test_block(compile_model):
    result = compile_model(Block(), torch.randn(2, 4))
    print("RAN", result.program_report.ran[-1])
"""


def test_a_decorators_wrappers_compiled_as_frames_run_bitwise(pytester: pytest.Pytester) -> None:
    """Both wrappers share one code, so Dynamo's compiles of its resume function are told apart
    only by the guard that the wrapped method is the one inlined: the file routes each wrapper to a
    frame over its own cells and reads that guard's id from the wrapper the compile was made for, so
    `scale`'s call runs `x * 2`'s compile, not the newer `x + 1`'s (which the same shapes pass)."""
    pytester.makepyfile(test_decorated=DECORATED)
    result = pytester.runpytest("--update-snapshots", "-s")
    if _torch_before_2_13():  # the wrapper's resume function reads `method`: see above
        result.assert_outcomes(failed=1)
        result.stdout.fnmatch_lines(["*its code cannot be written as Python: it makes a function*"])
        return
    result.assert_outcomes(passed=1)
    ran = next(line for line in result.stdout.lines if "RAN [" in line)
    # the wrapper's one compile reads no cell before its graph break: it runs for both wrappers
    assert ran.count("'frame 1 compile 0 (wrapped)'") == 2
    resumes = [part for part in ran.split("', '") if "resume_in_wrapped" in part]
    assert [r.split(" (")[0].split("frame ")[-1] for r in resumes] == ["2 compile 0", "2 compile 1"]


def test_a_wrapper_with_a_cell_not_set_yet_is_still_tied_to_its_compile() -> None:
    """A cell the wrapper reads later, empty when the file is written, is left out of the cells
    the compile's guards are read over (reading it raised, which tied the compile to no wrapper
    and refused the file)."""
    from pytest_torchcompile._torch.guard_tree import GuardRow
    from pytest_torchcompile.snapshot.program.facts.homes import Home
    from pytest_torchcompile.snapshot.program.facts.reading import _closures_of

    def decorate(method):
        def wrapped(self, x):
            return later(method(self, x))

        if False:
            later = None  # noqa: F841 - assigned nowhere that runs: its cell stays empty
        return wrapped

    wrapper = decorate(_Operator.evaluate.__wrapped__)
    check = f"___check_obj_id(L['method'], {id(_Operator.evaluate.__wrapped__)})"
    home = Home({}, None, None, "", ((wrapper, f"{__name__}:wrapper"),))
    routed, closure = _closures_of([GuardRow("ID_MATCH", "", check, "", 0)], home)
    assert closure is not None and set(closure[1]) == {"method"}


DISPATCHED = """
import pytest, torch


class Backend:
    @staticmethod
    def scale(x):
        print("the backend breaks the graph")
        return x * 3

    @staticmethod
    def shift(x):
        print("the backend breaks the graph")
        return x + 1


def dispatch(name):
    def dispatched(*args):
        return getattr(Backend, name)(*args)

    dispatched.__module__, dispatched.__qualname__ = "math", name  # another library's names
    return dispatched


scale, shift = dispatch("scale"), dispatch("shift")


def registered():
    def cached(x):
        print("a registered closure breaks the graph")
        return x - 1

    return cached


Backend.cached = staticmethod(registered())


class Model(torch.nn.Module):
    def forward(self, x):
        return Backend.cached(shift(scale(torch.sin(x))))


@pytest.mark.compile_snapshot(backend="aot_eager", artifacts=("summary",), run_program=True)
def test_dispatched(compile_model):
    result = compile_model(Model(), torch.randn(2, 4))
    print("RAN", result.program_report.ran[-1])
"""


def test_dispatchers_told_apart_by_a_cells_value_and_a_registered_closure_run_bitwise(
    pytester: pytest.Pytester,
) -> None:
    """tensorly's dispatchers: one code made once per backend function, each named after the
    function it stands for in another module (numpy's `einsum`) and kept as a module global; its
    compiles are told apart only by the guard on the name in its cell (`L['name'] == 'scale'`).
    And a closure a library registers on a class (tensorly's `cached_einsum`, a backend's
    `einsum`). The file finds each where a module's globals or a class hold it, ties each
    compile to its dispatcher by that guard, and runs bitwise."""
    pytester.makepyfile(test_dispatched=DISPATCHED)
    result = pytester.runpytest("--update-snapshots", "-s")
    result.assert_outcomes(passed=1)
    ran = next(line for line in result.stdout.lines if "RAN [" in line)
    assert "(dispatched)" in ran and "(cached)" in ran, ran
