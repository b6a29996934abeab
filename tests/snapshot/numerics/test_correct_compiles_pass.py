"""Correct compiles pass: bf16 inference, a training step, a real transformers model.

The other half of a trustworthy check: no false alarm on low precision, on
gradients of every parameter, or on the nested outputs of a real model.
"""

from __future__ import annotations

import pytest

from tests.conftest import REPO

BF16_BLOCK = f"""
import sys
import pytest, torch
sys.path.insert(0, {str(REPO)!r})
from fixtures import zoo

def bf16_block():
    model, args, _ = zoo.transformer_block()
    return model.to(torch.bfloat16), args[0].to(torch.bfloat16)

@pytest.mark.compile_snapshot(backend="inductor", artifacts=())
def test_fp64_reference(compile_model):
    model, x = bf16_block()
    with torch.no_grad():
        compile_model(model, x)

@pytest.mark.compile_snapshot(backend="inductor", artifacts=(), fp64_reference=False, bisect=False)
def test_plain_tolerance(compile_model):
    model, x = bf16_block()
    with torch.no_grad():
        compile_model(model, x)
"""


def test_bf16_inference_passes_with_fp64_reference_and_cries_wolf_without(
    pytester: pytest.Pytester,
) -> None:
    """Inductor computes bf16 attention in fp32; eager rounds at every op. Neither is wrong."""
    pytester.makepyfile(test_m=BF16_BLOCK)
    result = pytester.runpytest()
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*test_plain_tolerance*",
            "  output[[]*[]]: compiled *; * of 384 elements exceed rtol=0.016, atol=1e-05",
        ]
    )


GPT2 = """
import pytest, torch
from transformers import GPT2Config, GPT2LMHeadModel

def tiny_gpt2():
    torch.manual_seed(0)
    config = GPT2Config(n_layer=2, n_embd=32, n_head=4, vocab_size=128, n_positions=32, bos_token_id=0, eos_token_id=0)
    return GPT2LMHeadModel(config), torch.randint(0, 128, (2, 8))

@pytest.mark.compile_snapshot(backend="inductor", artifacts=("summary",))
def test_inference(compile_model):
    model, ids = tiny_gpt2()
    with torch.no_grad():
        result = compile_model(model.eval(), input_ids=ids)
    assert set(result.output.keys()) == {"logits", "past_key_values"}

@pytest.mark.compile_snapshot(backend="aot_eager", artifacts=("summary",))
def test_training(compile_model):
    model, ids = tiny_gpt2()
    result = compile_model(model.train(), input_ids=ids, labels=ids)
    assert result.output.loss.requires_grad
    assert model.transformer.h[0].attn.c_attn.weight.grad is None  # gradients stay on the plugin's copies

@pytest.mark.compile_snapshot(backend=__import__("tests_backends").scale_grads, artifacts=())
def test_wrong_gradient_is_found_by_parameter_name(compile_model):
    model, ids = tiny_gpt2()
    compile_model(model.train(), input_ids=ids, labels=ids)
"""

SCALE_GRADS_BACKEND = """
import torch
from torch._dynamo.backends.common import aot_autograd

def _scale_first_grad(gm, example_inputs):
    # a buggy backend: the backward graph's first real gradient comes out 1.5x too large
    output = next(node for node in gm.graph.nodes if node.op == "output")
    grads = list(output.args[0])
    first = next(i for i, g in enumerate(grads) if isinstance(g, torch.fx.Node))
    with gm.graph.inserting_before(output):
        grads[first] = gm.graph.call_function(torch.ops.aten.mul.Tensor, (grads[first], 1.5))
    output.args = (tuple(grads),)
    gm.recompile()
    return gm

scale_grads = aot_autograd(fw_compiler=lambda gm, example_inputs: gm, bw_compiler=_scale_first_grad)
scale_grads.__name__ = "scale_grads"
"""


def test_tiny_gpt2_from_transformers(pytester: pytest.Pytester) -> None:
    pytest.importorskip("transformers", reason="the dev extra installs transformers for this test")
    pytester.makepyfile(test_m=GPT2, tests_backends=SCALE_GRADS_BACKEND)
    result = pytester.runpytest("--update-snapshots", "-p", "no:randomly")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(
        ["diverges at stage: scale_grads", "  grad of transformer.*[[]*[]]: compiled *, eager *"]
    )
    summary = (pytester.path / "snapshots/test_m/test_inference/summary.txt").read_text()
    assert "graph breaks: 0" in summary


USER_MODEL_UNTOUCHED = """
import pytest, torch

class Counting(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 3)
        self.register_buffer("calls", torch.zeros(()))

    def forward(self, x):
        self.calls.add_(1)
        return self.lin(x).relu()

@pytest.mark.compile_snapshot(backend="aot_eager", artifacts=())
def test_used_twice_and_holding_grad(compile_model):
    torch.manual_seed(0)
    model = Counting()
    x = torch.randn(2, 4, requires_grad=True)
    compile_model(model, x)
    assert model.lin.weight.grad is None and x.grad is None
    assert model.calls.item() == 0
    compile_model(model, torch.randn(5, 4))  # the same model again: judged as a fresh one
    model(x).sum().backward()  # a training step of the user's own: .grad everywhere
    weight_grad = model.lin.weight.grad.clone()
    compile_model(model, x)
    assert torch.equal(model.lin.weight.grad, weight_grad)
"""


def test_the_users_model_and_inputs_are_never_changed(pytester: pytest.Pytester) -> None:
    """No `.grad` or buffer update left behind; a model used twice or holding `.grad` passes."""
    pytester.makepyfile(test_m=USER_MODEL_UNTOUCHED)
    pytester.runpytest("-p", "no:randomly").assert_outcomes(passed=1)


X_TRANSFORMERS = """
import pytest, torch
from x_transformers import AutoregressiveWrapper, Decoder, TransformerWrapper

@pytest.mark.compile_snapshot
def test_training(compile_model):
    torch.manual_seed(0)
    decoder = Decoder(dim=32, depth=2, heads=2)
    model = AutoregressiveWrapper(TransformerWrapper(num_tokens=64, max_seq_len=16, attn_layers=decoder))
    ids = torch.randint(0, 64, (2, 16), generator=torch.Generator().manual_seed(1))
    compile_model(model.train(), ids)
    compile_model(model, ids)  # the same model again: judged as a fresh one
"""


def test_a_library_never_tuned_on_trains_without_a_false_alarm(pytester: pytest.Pytester) -> None:
    """x-transformers' 2-layer decoder in training, with the bare marker (Inductor, fp32)."""
    pytest.importorskip(
        "x_transformers",
        reason="x-transformers is not installed (pip install x-transformers): "
        "a model library the plugin was never tuned on",
    )
    pytester.makepyfile(test_m=X_TRANSFORMERS)
    pytester.runpytest("--update-snapshots", "-p", "no:randomly").assert_outcomes(passed=1)
