"""The stored form keeps a one-line model change to the lines it changed.

Dynamo guards each layer of a model on its own, and FX frees each value on
the line that uses it last: one layer changed, or one node inserted, rewrote
lines that say nothing new. `drop_fx_frees` (compact.py) drops the frees and
keeps every fact a comparison reads; guards an earlier version folded over
layers (`[* = 0, 1]`) read as the same guards. The tests below plant a change
and see the verdict name it. The text is x-transformers' (a 2-layer decoder,
torch 2.13).
"""

from __future__ import annotations

import difflib

from pytest_torchcompile.snapshot.artifacts.compact import drop_fx_frees, renumber_fx_names
from pytest_torchcompile.snapshot.compare.behaviour import BEHAVIOUR, compare_case
from pytest_torchcompile.snapshot.compare.reading.readers import parse_graph

HEADER = "# ===== frame 0 compile 0: forward =====\n"
#: the decoder's first LayerNorm, then the first projection's use of it (AOT, inference)
GRAPH = (
    HEADER
    + """class <lambda>(torch.nn.Module):
    def forward(
        arg0_1: "i64[2, 16][16, 1]cpu",
        arg3_1: "f32[32][1]cpu",
        arg4_1: "f32[128, 32][32, 1]cpu",
    ):
        embedding_1: "f32[2, 16, 32][512, 32, 1]cpu" = torch.ops.aten.embedding.default(arg2_1, arg0_1);  arg2_1 = arg0_1 = None
        clone: "f32[2, 16, 32][512, 32, 1]cpu" = torch.ops.aten.clone.default(embedding_1);  embedding_1 = None
        var_mean = torch.ops.aten.var_mean.correction(clone, [2], correction = 0, keepdim = True)
        getitem: "f32[2, 16, 1][16, 1, 1]cpu" = var_mean[0]
        getitem_1: "f32[2, 16, 1][16, 1, 1]cpu" = var_mean[1];  var_mean = None
        add_2: "f32[2, 16, 1][16, 1, 1]cpu" = torch.ops.aten.add.Tensor(getitem, 1e-05);  getitem = None
        rsqrt: "f32[2, 16, 1][16, 1, 1]cpu" = torch.ops.aten.rsqrt.default(add_2);  add_2 = None
        sub: "f32[2, 16, 32][512, 32, 1]cpu" = torch.ops.aten.sub.Tensor(clone, getitem_1);  getitem_1 = None
        mul_1: "f32[2, 16, 32][512, 32, 1]cpu" = torch.ops.aten.mul.Tensor(sub, rsqrt);  sub = rsqrt = None
        add_3: "f32[32][1]cpu" = torch.ops.aten.add.Tensor(arg3_1, 1.0);  arg3_1 = None
        mul_2: "f32[2, 16, 32][512, 32, 1]cpu" = torch.ops.aten.mul.Tensor(mul_1, add_3);  mul_1 = add_3 = None
        permute: "f32[32, 128][1, 32]cpu" = torch.ops.aten.permute.default(arg4_1, [1, 0]);  arg4_1 = None
        view: "f32[32, 32][32, 1]cpu" = torch.ops.aten.view.default(mul_2, [32, 32])
        mm: "f32[32, 128][128, 1]cpu" = torch.ops.aten.mm.default(view, permute);  view = permute = None
        view_1: "f32[2, 16, 128][2048, 128, 1]cpu" = torch.ops.aten.view.default(mm, [2, 16, 128]);  mm = None
        mul_3: "f32[2, 16, 128][2048, 128, 1]cpu" = torch.ops.aten.mul.Tensor(view_1, 0.5);  view_1 = None
        add_4: "f32[2, 16, 128][2048, 128, 1]cpu" = torch.ops.aten.add.Tensor(mul_3, 1.0);  mul_3 = None
        return (add_4,)
"""
)


def changed(old: str, new: str) -> int:
    diff = difflib.unified_diff(old.splitlines(), new.splitlines(), lineterm="", n=0)
    return sum(1 for line in list(diff)[2:] if line[:1] in "+-")


def stored(text: str) -> str:
    return renumber_fx_names(drop_fx_frees(text))


def test_frees_dropped_read_as_the_same_graph() -> None:
    once = stored(GRAPH)
    assert "= None" not in once and stored(once) == once
    assert parse_graph(once) == parse_graph(renumber_fx_names(GRAPH))
    assert (
        compare_case({"aot_inference": renumber_fx_names(GRAPH)}, {"aot_inference": once}).verdict
        != BEHAVIOUR
    )


#: the same graph with a node more at the end that reads `view_1` once more (a residual)
LATER_USE = GRAPH.replace(
    "torch.ops.aten.mul.Tensor(view_1, 0.5);  view_1 = None",
    "torch.ops.aten.mul.Tensor(view_1, 0.5)",
).replace(
    "        return (add_4,)",
    """        add_5: "f32[2, 16, 128][2048, 128, 1]cpu" = torch.ops.aten.add.Tensor(add_4, view_1);  add_4 = view_1 = None
        return (add_5,)""",
)


def test_a_node_added_moves_no_free() -> None:
    """The node added is `view_1`'s last use now: FX moved its free, changing a line that
    computes the same; without frees, the new node and the return are all that changes."""
    assert changed(renumber_fx_names(GRAPH), renumber_fx_names(LATER_USE)) == 5
    assert changed(stored(GRAPH), stored(LATER_USE)) == 3
    assert (
        compare_case({"aot_inference": stored(GRAPH)}, {"aot_inference": stored(LATER_USE)}).verdict
        == BEHAVIOUR
    )


LAYER = """TYPE_MATCH: ___check_type_id(L['self']._modules['layers']._modules['{i}']._modules['0'], <id>), type=<class 'x_transformers.x_transformers.LayerNorm'>  # if exists(pre_norm):  # x_transformers.py:<N> in forward
EQUALS_MATCH: L['self']._modules['layers']._modules['{i}']._modules['0']._modules['ln'].eps == 1e-05  # return F.layer_norm(  # normalization.py:<N> in forward
TENSOR_MATCH: check_tensor(L['self']._modules['layers']._modules['{i}']._modules['0']._parameters['gamma'], Parameter, torch.float32, size=[32], stride=[1])"""
GUARDS = (
    HEADER + "\n".join(LAYER.format(i=i) for i in range(4)) + "\nNONE_MATCH: L['mask'] is None\n"
)


def _folded(guards: str) -> str:
    """`guards` as an earlier version stored them: each layer's copies of a guard as one line."""
    lines = guards.splitlines()
    kept = [line for line in lines if "._modules['layers']._modules['" not in line]
    first = [line for line in lines if "._modules['layers']._modules['0']" in line]
    folded = [
        line.replace(
            "._modules['layers']._modules['0']", "._modules['layers']._modules[*]", 1
        ).replace("  # ", "  [* = 0, 1, 2, 3]  # ", 1)
        if "  # " in line
        else line.replace("._modules['layers']._modules['0']", "._modules['layers']._modules[*]", 1)
        + "  [* = 0, 1, 2, 3]"
        for line in first
    ]
    return "\n".join(kept[:1] + folded + kept[1:]) + "\n"


def test_guards_an_earlier_version_folded_read_as_the_same_guards() -> None:
    folded = _folded(GUARDS)
    assert len(folded.splitlines()) == 1 + 3 + 1 and "[* = 0, 1, 2, 3]" in folded
    diff = compare_case({"guards": folded}, {"guards": GUARDS})
    assert diff.verdict != BEHAVIOUR, diff.findings


def test_a_guard_one_layer_changed_against_the_folded_form_is_behaviour() -> None:
    changed_layer = GUARDS.replace(
        "['2']._modules['0']._modules['ln'].eps == 1e-05",
        "['2']._modules['0']._modules['ln'].eps == 1e-06",
    )
    assert compare_case({"guards": _folded(GUARDS)}, {"guards": changed_layer}).verdict == BEHAVIOUR
    lost = "\n".join(
        line for line in GUARDS.splitlines() if "['3']._modules['0']._parameters" not in line
    )
    assert compare_case({"guards": _folded(GUARDS)}, {"guards": lost}).verdict == BEHAVIOUR
