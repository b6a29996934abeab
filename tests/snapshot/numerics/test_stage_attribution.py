"""Planted bugs, one per pipeline stage: the failure names the stage that broke.

Each test writes a user's test module with a bug in one place, runs it, and
checks the `diverges at stage:` line. Attribution re-runs only after a
mismatch, so the passing runs here compile once.
"""

from __future__ import annotations

import pytest

WRONG_DECOMPOSITION = """
import pytest, torch
import torch.nn.functional as F
from torch._inductor.decomposition import select_decomp_table

def wrong_mish(x):
    return x * torch.tanh(F.softplus(x)) * 1.5  # wrong on purpose

@pytest.fixture
def broken_mish(monkeypatch):
    monkeypatch.setitem(select_decomp_table(), torch.ops.aten.mish.default, wrong_mish)

def mish_head(x):
    return F.mish(x) + 1

# a shape no other test compiles, so no cache entry made with the right decomposition exists
@pytest.mark.compile_snapshot(backend="inductor", artifacts=())
def test_m(broken_mish, compile_model):
    compile_model(mish_head, torch.linspace(-2, 2, 17))
"""


def test_wrong_decomposition_is_blamed_on_decompositions(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_m=WRONG_DECOMPOSITION)
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "[[]case_0[]] compiled (inductor) differs from eager:",
            "diverges at stage: decompositions",
            "stages re-run: dynamo ok, aot_autograd ok, decompositions diverges",
            "narrowed by torch's compiler bisector: aot_eager_decomp_partition decomposition*mish*",
            "  output[[]*[]]: compiled *, eager *; max abs error *, max rel error *; * of 17 elements exceed rtol=*, atol=*",
        ]
    )


PERTURBING_BACKEND = """
import pytest, torch

def perturb(gm, example_inputs):
    def run(*args):
        return tuple(o * 1.01 for o in gm(*args))
    return run

@pytest.mark.compile_snapshot(backend=perturb, artifacts=())
def test_m(compile_model):
    torch.manual_seed(0)
    compile_model(torch.nn.Linear(4, 3), torch.randn(2, 4))
"""


def test_custom_backend_that_perturbs_output_is_named(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_m=PERTURBING_BACKEND)
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["diverges at stage: perturb", "stages re-run: dynamo ok", "  output[[]*, *[]]: compiled *"]
    )
    result.stdout.no_fnmatch_line("*bisector*")


DROPOUT = """
import pytest, torch

@pytest.mark.compile_snapshot(backend="aot_eager_decomp_partition", artifacts=(){extra})
def test_m(compile_model):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.Dropout(0.5)).train()
    compile_model(model, torch.randn(4, 8))
"""


def test_randomness_is_explained_and_fallback_random_makes_it_fair(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_m=DROPOUT.format(extra=""))
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*the compiled graph draws random numbers (aten.*)*set compile_snapshot(fallback_random=True)*",
            "  output[[]*[]]: compiled *",
        ]
    )
    result.stdout.no_fnmatch_line("diverges at stage:*")

    pytester.makepyfile(test_m=DROPOUT.format(extra=", fallback_random=True"))
    pytester.runpytest().assert_outcomes(passed=1)


INPUT_WRITER = """
import pytest, torch

def writes_inputs(gm, example_inputs):
    def run(*args):
        out = gm(*args)
        for a in args:
            if isinstance(a, torch.Tensor) and not a.requires_grad:
                a.add_(1)
        return out
    return run

class Counter(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("total", torch.zeros(3))

    def forward(self, x):
        self.total.add_(x.sum(0))
        return x * 2

@pytest.mark.compile_snapshot(backend=writes_inputs, artifacts=())
def test_m(compile_model):
    compile_model(Counter(), torch.ones(2, 3))
"""


def test_buffers_and_inputs_written_in_place_are_compared(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_m=INPUT_WRITER)
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "diverges at stage: writes_inputs",
            "  buffer total[[]0[]]: compiled 3, eager 2; *",
            "  input x after the call[[]0, 0[]]: compiled 2, eager 1; *",
        ]
    )
