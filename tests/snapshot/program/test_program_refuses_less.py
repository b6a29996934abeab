"""`run_program=True` on the code people write that the file once refused: it now runs bitwise.

Each case is everyday tensor code whose compile used to be refused when
the file was written: outputs that are views of an input or of an
intermediate (slicing, transposes: AOTAutograd makes them views again after
the graph, and so does the file), a tensor built inside the compiled
function (a constant of the graph, written into the file by value, on
aot_eager and on Inductor), numpy code, a namedtuple built or made inside
the function (and returned: Dynamo rebuilds it with the class's `_make`, a
method the file writes as the class's attribute), a `torch.distributions`
object (torch.compile switches the process's argument validation off and
guards on it; the file does the same), `print(y.shape)` (a graph break with a `torch.Size`
constant), dropout on aot_eager (its random ops run eagerly on the
generator the file seeds alike), `nn.TransformerEncoderLayer` in eval
under `no_grad` (its first compiled frame is a function it calls) and a
graph break inside a `with torch.no_grad():` block (Dynamo runs the
breaking call between the context manager's `__enter__` and `__exit__`, in
a try whose handler exits and raises again), an input the graph writes a
gradient into (AOTAutograd's copy after the graph is autograd's to record),
a module's numpy integer (Dynamo guards it as a tensor) and a model holding
`SDPBackend` members (whose class does not pickle by its own name). Driven
as a user drives it: pytester, the program run in a fresh process.
"""

from __future__ import annotations

import builtins
import math

import pytest
import torch

from pytest_torchcompile.snapshot.program.facts.reading import installed_global

CASES = """
import collections
import numpy as np
import pytest, torch
from torch.nn.attention import SDPBackend

RUN = pytest.mark.compile_snapshot(backend="aot_eager", artifacts=("summary",), run_program=True)


def ran(result):
    print("RAN", result.program_report.ran)


def views_of_the_input(x):
    return x[1:], x.t(), x * 2


def views_of_an_intermediate(x):
    y = x + 1
    return y.view(-1), y[0]


class Linear(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.fc = torch.nn.Linear(4, 4)

    def forward(self, x):
        y = self.fc(x)
        return y.t(), y[0]


def a_constant(x):
    return x + torch.tensor(range(4))


def numpy_code(x):
    return np.sin(x.numpy()) * 2


Pair = collections.namedtuple("Pair", ["a", "b"])


def a_namedtuple_built(x):
    return Pair(x, x + 1)


def a_namedtuple_made(x):
    Local = collections.namedtuple("Local", ["a", "b"])
    q = Local(x, x + 1)
    return q.a * q.b


def a_namedtuple_made_and_returned(x):
    Local = collections.namedtuple("Local", ["a", "b"], defaults=[None])
    return Local(x, x + 1)


def a_distribution(x):
    return torch.distributions.Normal(x, torch.ones_like(x)).log_prob(x + 1)


def prints_a_shape(x):
    y = x * 2
    print(y.shape)
    return y + 1


def dropout(x):
    return torch.nn.functional.dropout(x * 2, 0.5, training=True)


def a_break_in_no_grad(x):
    with torch.no_grad():
        y = x * 2
        print("a graph break inside the with block")
        y = y + 1
    return y


def shifted(y):
    print("a graph break in a function called inside the with block")
    return y - 1


def a_call_in_no_grad(x):
    with torch.no_grad():
        y = shifted(x * 2)
    return y + 1


@pytest.mark.parametrize(
    "fn, shape",
    [
        (views_of_the_input, (4, 4)),
        (views_of_an_intermediate, (4, 4)),
        (Linear, (4, 4)),
        (a_constant, (4,)),
        (numpy_code, (4,)),
        (a_namedtuple_built, (4,)),
        (a_namedtuple_made, (4,)),
        (a_namedtuple_made_and_returned, (4,)),
        (a_distribution, (4,)),
        (prints_a_shape, (4,)),
        (dropout, (4, 8)),
        (a_break_in_no_grad, (4,)),
        (a_call_in_no_grad, (4,)),
    ],
    ids=lambda v: getattr(v, "__name__", ""),
)
@RUN
def test_case(compile_model, fn, shape):
    torch.manual_seed(0)
    ran(compile_model(fn() if isinstance(fn, type) else fn, torch.randn(*shape)))


@pytest.mark.compile_snapshot(backend="inductor", artifacts=("summary",), run_program=True)
def test_a_constant_on_inductor(compile_model):
    ran(compile_model(a_constant, torch.randn(4)))


class WritesASlice(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.fc = torch.nn.Linear(4, 2)

    def forward(self, x, out):
        out[:, :2] = self.fc(x)
        return out.sum()


@RUN
def test_an_input_written_with_a_gradient(compile_model):
    torch.manual_seed(0)
    ran(compile_model(WritesASlice(), torch.randn(4, 4), torch.zeros(4, 4)))


class NumpySize(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.d = np.prod((2, 3))

    def forward(self, x):
        return x * self.d - 0.5 * self.d * np.log(2 * np.pi)


@RUN
def test_a_numpy_integer_attribute(compile_model):
    ran(compile_model(NumpySize(), torch.randn(4)))


class Attention(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.backends = [SDPBackend.MATH, SDPBackend.EFFICIENT_ATTENTION]

    def forward(self, x):
        return torch.nn.functional.scaled_dot_product_attention(x, x, x)


@RUN
def test_a_model_holding_attention_backends(compile_model):
    ran(compile_model(Attention(), torch.randn(1, 2, 4, 8)))


@RUN
def test_an_encoder_layer_in_eval(compile_model):
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(16, 2, 32, batch_first=True).eval()
    with torch.no_grad():
        ran(compile_model(layer, torch.randn(2, 5, 16)))
"""


def test_everyday_code_the_file_once_refused_runs_bitwise(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_cases=CASES)
    result = pytester.runpytest("--update-snapshots", "-s", "-p", "no:randomly")
    result.assert_outcomes(passed=18)
    result.stdout.fnmatch_lines(
        [
            "*RAN*'frame 0 compile 0 (views_of_the_input)'*",
            "*RAN*'frame 0 compile 0 (prints_a_shape)', 'frame 1 compile 0 (torch_dynamo_resume_in_prints_a_shape*",
            "*RAN*'frame 0 compile 0 (a_break_in_no_grad)', 'frame 1 compile 0 (torch_dynamo_resume_in_a_break_in_no_grad*",
            "*RAN*'frame 0 compile 0 (a_call_in_no_grad)', 'frame 1 compile 0 (shifted)'*",
            "*RAN*'frame 0 compile 0 (a_constant)'*",
            "*RAN*'frame 0 compile 0 (forward)'*",
        ]
    )


def test_generated_globals_the_file_cannot_write_are_refused_naming_them() -> None:
    """A value in such a dict that is neither a literal, importable, nor FX's own (an object of a
    class made in a function) is refused when the file is written, never a KeyError when it runs."""

    class Local:
        pass

    namespace = {"torch": torch, "inf": math.inf, "nan": math.nan, "NoneType": type(None)}
    namespace["__builtins__"] = builtins.__dict__
    written = installed_global("___unnamed_scope_obj0", namespace)
    assert written.kind == "dict", written
    refused = installed_global("___unnamed_scope_obj0", {**namespace, "helper": Local()})
    assert refused.kind == "refused"
    assert "the globals of a function no module holds" in refused.target
