"""AOTAutograd's metadata record read back (`_torch/program/aot_meta.py`), strings inside it included.

The record's text holds reprs that are not Python (`<OutputType.non_alias: 1>`,
`<class '...'>`) and, for a training graph, the stack traces of the outputs
whose gradients the backward takes. A model that calls an FX GraphModule
(`torch.fx.symbolic_trace`, e3nn's generated code) has `File "<eval_with_key>.0
from model.py:8 in forward"` in those traces: a string, which the reader must
leave alone. The record in tests/data was captured from such a model on torch
2.13 (`aot_forward_graph_fw_metadata`).
"""

from __future__ import annotations

import pytest

from pytest_torchcompile._torch.program.aot_meta import MetaFormatError, parse_meta, parse_repr
from tests.conftest import DATA

#: a training model whose output comes from an FX-traced submodule, captured on torch 2.13
FX_TRACE_RECORD = DATA / "aot_metadata_fx_stack_trace_2.13.txt"
#: LoRA adapters over two frozen torchao NF4 weights, training, captured on torch 2.13: each
#: weight's `SubclassCreationMeta` holds the subclass's own repr, two lines of prose
NF4_RECORD = DATA / "aot_metadata_nf4_training_2.13.txt"

FX_SUBMODULE = """
import pytest, torch, torch.fx

class Inner(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x):
        return {inner}

class Outer(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.inner = torch.fx.symbolic_trace(Inner())

    def forward(self, x):
        return self.inner(x)

@pytest.mark.compile_snapshot(backend="aot_eager", artifacts=("summary",), run_program=True)
def test_m(compile_model):
    torch.manual_seed(0)
    compile_model(Outer(), torch.randn(3, 4, requires_grad=True))
"""


def test_a_stack_trace_through_an_fx_graph_module_is_read_as_the_string_it_is() -> None:
    meta = parse_meta(FX_TRACE_RECORD.read_text())
    (trace,) = meta.raw["tangent_source_stack_traces"]
    assert (
        '  File "<eval_with_key>.0 from /tmp/proj/model.py:8 in forward", line 7, in forward\n'
        in trace
    )
    assert len(meta.inputs) == 3 and [o.output_type for o in meta.outputs] == ["non_alias"]
    assert meta.tangent_returns() == [0]


def test_a_subclass_whose_repr_is_prose_is_read_with_its_inner_tensors() -> None:
    meta = parse_meta(NF4_RECORD.read_text())
    assert "Quantized Data:" in NF4_RECORD.read_text()
    assert meta.subclass_inputs == (0, 4)
    assert not any(meta.inputs[i].requires_grad for i in meta.subclass_inputs)
    weight = meta.raw["subclass_inp_meta"][0]
    assert weight["original_subclass"] is None
    assert sorted(weight["attrs"]) == [
        "nf4",
        "quantization_factor",
        "quantized_data",
        "quantized_scalers",
        "scaler_mean",
    ]
    assert not meta.subclass_outputs and not meta.subclass_symints


def test_reprs_that_are_not_python_become_strings_and_strings_stay_as_written() -> None:
    parsed = parse_repr(
        "M(kind=<OutputType.alias_of_input: 3>, raw_type=<class 'torch.Tensor'>, "
        'fn=<function f at 0x7f3a>, note=\'a <b> "c" <eval_with_key>.1\', other="it\'s <x>")'
    )
    assert parsed.fields == {
        "kind": "alias_of_input",
        "raw_type": "torch.Tensor",
        "fn": "<function f at 0x7f3a>",
        "note": 'a <b> "c" <eval_with_key>.1',
        "other": "it's <x>",
    }


def test_a_lambdas_repr_with_angle_brackets_inside_is_one_string() -> None:
    fn = "<function M.__init__.<locals>.<lambda> at 0x7f3a>"
    assert parse_repr(f"M(fn={fn}, n=1)").fields == {"fn": fn, "n": 1}


def test_an_unknown_expression_is_named_with_file_names_not_paths() -> None:
    text = (
        "ViewAndMutationMeta(input_info=[], x=load('/home/ci/checkout/models/deep/model.py') + 1)"
    )
    with pytest.raises(MetaFormatError) as failure:
        parse_meta(text)
    message = str(failure.value)
    assert "(BinOp): load('model.py') + 1" in message
    assert "/home/ci" not in message


def test_a_long_unknown_expression_is_cut_at_a_mark() -> None:
    with pytest.raises(MetaFormatError) as failure:
        parse_repr("M(x=" + " + ".join(["value"] * 40) + ")")
    assert str(failure.value).endswith("...")
    assert len(str(failure.value).split(": ", 1)[1]) <= 80


def test_the_program_of_a_model_calling_an_fx_graph_module_runs_bitwise(
    pytester: pytest.Pytester,
) -> None:
    """The record above, end to end: once refused as `an unexpected expression`, now run fresh."""
    pytester.makepyfile(test_m=FX_SUBMODULE.format(inner="self.lin(x).tanh() * 2"))
    result = pytester.runpytest("--update-snapshots")
    result.assert_outcomes(passed=1)


def test_an_fx_graph_module_that_reads_its_globals_runs_bitwise(pytester: pytest.Pytester) -> None:
    """`torch.tanh` in FX's generated code reads the globals FX ran it in, a dict no module holds:
    Dynamo guards it as `G['___unnamed_scope_...']`. The file writes that dict by value (`torch`
    by import; `inf`, `nan`, `NoneType` and the builtins FX and `exec` put there by expression)."""
    pytester.makepyfile(test_m=FX_SUBMODULE.format(inner="torch.tanh(self.lin(x)) * 2"))
    result = pytester.runpytest("--update-snapshots")
    result.assert_outcomes(passed=1)
