"""The numerics comparison and stage logic on real tensors, without compiling.

What a compiler engineer relies on: every leaf of every structure is found and
named, tolerances follow the dtype, exact kinds are exact, metadata
differences are reported as such, and the fp64 reference excuses low-precision
noise but not a real bug.
"""

from __future__ import annotations

import dataclasses
from collections import OrderedDict
from typing import NamedTuple

import pytest
import torch

from pytest_torchcompile.snapshot.numerics.attribution import (
    attribute,
    random_ops,
    stages_for,
)
from pytest_torchcompile.snapshot.numerics.check import Tolerance, compare, compare_trees
from pytest_torchcompile.snapshot.numerics.fp64 import needs_fp64, tolerate_with_fp64
from pytest_torchcompile.snapshot.numerics.observe import argument_names, flatten, observe

DEFAULT = Tolerance()


class Pair(NamedTuple):
    hidden: torch.Tensor
    count: int


@dataclasses.dataclass
class Out:
    logits: torch.Tensor
    extra: tuple


class ModelOutput(OrderedDict):
    """Shaped like HuggingFace's: a mapping of named results."""


class Cache:
    """A plain object without __eq__ (like a KV cache): compared by its attributes."""

    def __init__(self, keys: torch.Tensor) -> None:
        self.keys = keys
        self.length = keys.shape[0]


def test_paths_through_every_kind_of_container() -> None:
    t = torch.zeros(2)
    value = {
        "a": [t, (t, Pair(t, 3))],
        "b": Out(t, (None, "s")),
        "c": ModelOutput(logits=t),
        "d": Cache(t),
    }
    assert [path for path, _ in flatten(value, "output")] == [
        "output['a'][0]",
        "output['a'][1][0]",
        "output['a'][1][1].hidden",
        "output['a'][1][1].count",
        "output['b'].logits",
        "output['b'].extra[0]",
        "output['b'].extra[1]",
        "output['c']['logits']",
        "output['d'].keys",
        "output['d'].length",
    ]


def test_worst_element_is_named_with_its_index() -> None:
    eager = torch.zeros(4, 20)
    compiled = eager.clone()
    compiled[3, 17] = 0.5
    compiled[1, 2] = 0.25
    [mismatch] = compare_trees({"logits": compiled}, {"logits": eager}, "output", DEFAULT)
    assert str(mismatch) == (
        "output['logits'][3, 17]: compiled 0.5, eager 0; max abs error 0.5, max rel error inf; "
        "2 of 80 elements exceed rtol=1.3e-06, atol=1e-05"
    )


def test_nested_object_mismatch_is_found() -> None:
    eager = Cache(torch.ones(3))
    compiled = Cache(torch.tensor([1.0, 1.0, 2.0]))
    [mismatch] = compare_trees(compiled, eager, "output", DEFAULT)
    assert mismatch.path == "output.keys[2]"


@pytest.mark.parametrize(
    ("compiled", "eager", "expected"),
    [
        (
            torch.tensor([1, 2]),
            torch.tensor([1, 3]),
            "output[1]: compiled 2, eager 3; max abs error 1, max rel error 0.333; 1 of 2 elements exceed rtol=0, atol=0",
        ),
        (
            torch.tensor([True, False]),
            torch.tensor([True, True]),
            "output[1]: compiled False, eager True; max abs error 1",
        ),
        (
            torch.zeros(2, 3),
            torch.zeros(3, 2),
            "output: shape differs: compiled torch.Size([2, 3]), eager torch.Size([3, 2])",
        ),
        (
            torch.zeros(2),
            torch.zeros(2, dtype=torch.float64),
            "output: dtype differs: compiled torch.float32, eager torch.float64",
        ),
        (3, 4, "output: compiled 3 != eager 4"),
        ("a", "b", "output: compiled 'a' != eager 'b'"),
        (None, 0, "output: type differs: compiled NoneType None, eager int 0"),
        (1.0, 1.1, "output: compiled 1.0, eager 1.1 (rtol=1.3e-06, atol=1e-05)"),
    ],
    ids=[
        "int-exact",
        "bool-exact",
        "shape",
        "dtype",
        "int-leaf",
        "str-leaf",
        "type",
        "python-float",
    ],
)
def test_mismatch_kinds_are_reported_not_raised(compiled, eager, expected: str) -> None:
    [mismatch] = compare_trees(compiled, eager, "output", DEFAULT)
    assert str(mismatch).startswith(expected)


def test_nan_and_inf_in_the_same_places_are_equal_and_elsewhere_not() -> None:
    eager = torch.tensor([float("nan"), float("inf"), -float("inf"), 1.0])
    assert compare_trees(eager.clone(), eager, "output", DEFAULT) == []
    moved = torch.tensor([1.0, float("inf"), -float("inf"), float("nan")])
    [mismatch] = compare_trees(moved, eager, "output", DEFAULT)
    assert "2 of 4 elements exceed" in mismatch.detail


def test_strides_fail_only_when_asked_and_are_noted_beside_a_value_mismatch() -> None:
    compiled, eager = torch.zeros(3, 2).t(), torch.zeros(2, 3)
    assert compare_trees(compiled, eager, "output", DEFAULT) == []
    [mismatch] = compare_trees(compiled, eager, "output", Tolerance(check_stride=True))
    assert (
        str(mismatch)
        == "output: stride differs: compiled stride (1, 2) (not contiguous), eager stride (3, 1) (contiguous)"
    )
    [mismatch] = compare_trees(compiled + 1, eager, "output", DEFAULT)
    assert mismatch.detail.endswith(
        "; stride differs: compiled stride (1, 2) (not contiguous), eager stride (3, 1) (contiguous)"
    )


def test_size_one_dimensions_may_have_any_stride() -> None:
    a = torch.zeros(1, 4)
    b = torch.zeros(4, 1).t()
    assert a.stride() != b.stride()
    assert compare_trees(a, b, "output", Tolerance(check_stride=True)) == []


def test_tolerances_follow_dtype_unless_given() -> None:
    eager = torch.ones(8, dtype=torch.bfloat16)
    slightly = eager + 0.0078125  # one bf16 ulp at 1.0: inside bf16's default rtol 1.6e-2
    assert compare_trees(slightly, eager, "output", DEFAULT) == []
    assert compare_trees(slightly, eager, "output", Tolerance(rtol=0.0, atol=0.0)) != []
    f32 = torch.ones(8)
    assert compare_trees(f32 + 1e-4, f32, "output", DEFAULT) != []
    assert compare_trees(f32 + 1e-4, f32, "output", Tolerance(rtol=1e-3, atol=0.0)) == []


def test_fp64_reference_excuses_low_precision_noise_but_not_a_bug() -> None:
    torch.manual_seed(0)
    exact = torch.randn(256, dtype=torch.float64)
    eager = exact.to(torch.bfloat16)
    # computed another way (e.g. in fp32, rounded once): off by about as much as eager is
    noisy = (exact + 0.003 * torch.randn(256, dtype=torch.float64)).to(torch.bfloat16)
    broken = (exact + 1.0).to(torch.bfloat16)
    reference = {"output": exact}
    for compiled, survives in ((noisy, False), (broken, True)):
        mismatches = compare({"output": compiled}, {"output": eager}, DEFAULT)
        assert mismatches and needs_fp64(mismatches, DEFAULT)
        kept = tolerate_with_fp64(mismatches, reference, DEFAULT)
        assert bool(kept) == survives
    [kept] = tolerate_with_fp64(
        compare({"output": broken}, {"output": eager}, DEFAULT), reference, DEFAULT
    )
    assert "fp64 reference: compiled rmse 1 > 3 x eager rmse" in kept.detail


def test_fp32_reduction_noise_passes_by_default_but_one_wrong_element_does_not() -> None:
    """A gradient summed in another order: one element of 4,096 off by 1.5e-5 (above atol 1e-5)."""
    torch.manual_seed(0)
    exact = torch.randn(64, 64, dtype=torch.float64) * 4
    eager = exact.to(torch.float32)
    reordered = eager.clone()
    reordered[2, 3] += 1.5e-5
    wrong = eager.clone()
    wrong[2, 3] += 0.5
    reference = {"grad of w": exact}
    for compiled, survives in ((reordered, False), (wrong, True)):
        mismatches = compare({"grad of w": compiled}, {"grad of w": eager}, DEFAULT)
        assert len(mismatches) == 1 and needs_fp64(mismatches, DEFAULT)
        assert bool(tolerate_with_fp64(mismatches, reference, DEFAULT)) == survives


@pytest.mark.parametrize(
    ("setting", "dtype", "expected"),
    [
        (None, torch.bfloat16, True),
        (None, torch.float16, True),
        (None, torch.float32, True),
        (True, torch.float32, True),
        (False, torch.float32, False),
        (False, torch.bfloat16, False),
        (True, torch.float64, False),
    ],
)
def test_which_results_use_the_fp64_reference(setting, dtype, expected) -> None:
    assert Tolerance(fp64=setting).uses_fp64(dtype) is expected


def test_observe_names_grads_buffers_and_mutated_inputs() -> None:
    torch.manual_seed(0)
    model = torch.nn.BatchNorm1d(3).train()
    x = torch.randn(4, 3, requires_grad=True)
    out = model(x)
    out.sum().backward()
    seen = observe(out, model, argument_names(model, (x,), {}), grads=True)
    assert list(seen) == [
        "output",
        "grad of input",
        "grad of weight",
        "grad of bias",
        "buffer running_mean",
        "buffer running_var",
        "buffer num_batches_tracked",
    ]

    def scale_(x, *, by):
        return x.mul_(by)

    x = torch.ones(2)
    seen = observe(
        scale_(x, by=torch.tensor(2.0)),
        scale_,
        argument_names(scale_, (x,), {"by": torch.tensor(2.0)}),
        grads=False,
    )
    assert list(seen) == ["output", "input x after the call", "input by after the call"]


def test_random_ops_are_found_in_printed_graphs() -> None:
    graph = "native_dropout = torch.ops.aten.native_dropout.default(addmm, 0.5, True)\nrand = torch.ops.aten.rand.default([4])\nrelu = torch.ops.aten.relu.default(x)"
    assert random_ops([graph]) == ["aten.native_dropout", "aten.rand"]
    assert random_ops(["relu = torch.ops.aten.relu.default(x)"]) == []


def test_stages_follow_torch_pipeline_and_custom_backends_follow_dynamo() -> None:
    assert [s for s, _ in stages_for("inductor", True)] == [
        "dynamo",
        "aot_autograd",
        "decompositions",
        "inductor",
    ]
    assert [s for s, _ in stages_for("aot_eager", True)] == ["dynamo", "aot_autograd"]
    assert [s for s, _ in stages_for("eager", True)] == ["dynamo"]
    assert stages_for("my_backend", False) == [("dynamo", "eager"), ("my_backend", "my_backend")]


def test_attribute_stops_at_the_first_diverging_stage() -> None:
    ran: list[str] = []

    def replay(backend: str) -> str | None:
        ran.append(backend)
        return "output[0]: off" if backend == "aot_eager" else None

    found = attribute("inductor", True, replay)
    assert ran == ["eager", "aot_eager"]
    assert found.lines() == [
        "diverges at stage: aot_autograd",
        "stages re-run: dynamo ok, aot_autograd diverges",
    ]


def test_attribute_blames_the_requested_backend_when_earlier_stages_agree_or_cannot_run() -> None:
    def replay(backend: str) -> str | None:
        if backend == "aot_eager":
            raise RuntimeError("no fake kernel for my_op\nmore")
        return None

    found = attribute("inductor", True, replay)
    assert found.lines() == [
        "diverges at stage: inductor",
        "stages re-run: dynamo ok, aot_autograd could not run: RuntimeError: no fake kernel for my_op, decompositions ok",
    ]
