"""The default artifacts' stored form: half the lines, every regression class kept.

`wrapper_code` is the output code with each kernel as a digest line, the AOT
graphs lose the `# File:` comments Dynamo's graph keeps, Dynamo's graph its
`l_x_ = L_x_` aliases. Each rule is pure and idempotent; and each regression
class a reviewer must see (graph break, recompile, lost fusion, kernel code,
op swap, guard) still reads as behaviour when only the default artifacts are
compared (the planted changes of the upgrade report's tests, applied to the
zoo's full texts, then cut down to the defaults).
"""

from __future__ import annotations

import re

import pytest

from pytest_torchcompile.snapshot.artifacts.catalogue import ARTIFACTS, DEFAULT_ARTIFACTS
from pytest_torchcompile.snapshot.artifacts.compact import (
    drop_fx_input_aliases,
    drop_fx_provenance,
    outline_output_code,
)
from pytest_torchcompile.snapshot.artifacts.normalize import (
    STATIC_RULES,
    Normalizer,
)
from pytest_torchcompile.snapshot.compare.behaviour import BEHAVIOUR, compare_case
from tests.snapshot.compare.test_upgrade_report import (
    Texts,
    edited,
    plant_graph_break,
    plant_lost_fusion,
    plant_new_guard,
    plant_op_swap,
    sub,
    zoo,
)

NORMALIZE = Normalizer(STATIC_RULES)
KERNEL = """\
# ===== frame 0 compile 0: forward =====
cpp_fused_relu_0 = async_compile.cpp_pybinding(['float*'], r'''
extern "C"  void  kernel(float* in_out_ptr0) {
    auto tmp0 = in_out_ptr0[0];
}
''')

    def call(self, args):
        buf0 = empty_strided_cpu((4, ), (1, ), torch.float32)
        # Topologically Sorted Source Nodes: [relu], Original ATen: [aten.relu]
        cpp_fused_relu_0(buf0)
        del arg0_1
        return (buf0, )
"""


def test_a_kernel_is_one_line_and_call_keeps_its_calls() -> None:
    outlined = outline_output_code(KERNEL)
    assert re.search(r"^<3 lines, sha256 [0-9a-f]{12}>$", outlined, re.MULTILINE)
    assert "auto tmp0" not in outlined and "del arg0_1" not in outlined
    assert "Topologically" not in outlined
    assert "        cpp_fused_relu_0(buf0)\n" in outlined and "empty_strided_cpu" in outlined
    renamed = KERNEL.replace("cpp_fused_relu_0", "cpp_fused_relu_7")
    assert outline_output_code(renamed) == outlined.replace("cpp_fused_relu_0", "cpp_fused_relu_7")
    changed = KERNEL.replace("in_out_ptr0[0]", "in_out_ptr0[1]")
    assert outline_output_code(changed) != outlined


def test_aliases_and_provenance_go_the_graph_stays() -> None:
    graph = (
        "# ===== frame 0 compile 0: forward =====\n"
        "class GraphModule(torch.nn.Module):\n"
        '    def forward(self, L_x_: "f32[4]"):\n'
        "        l_x_ = L_x_\n"
        "        # File: m.py:<N> in forward, code: return x.relu()\n"
        '        relu: "f32[4]" = l_x_.relu();  l_x_ = None\n'
        "        return (relu,)\n"
    )
    dynamo = drop_fx_input_aliases(graph)
    assert "l_x_" not in dynamo and 'relu: "f32[4]" = L_x_.relu();  L_x_ = None' in dynamo
    assert "# File: m.py" in dynamo
    assert "# File:" not in drop_fx_provenance(graph)


@pytest.mark.parametrize(
    "rule",
    [outline_output_code, drop_fx_input_aliases, drop_fx_provenance],
    ids=lambda r: r.__name__,
)
def test_idempotent_on_the_zoo(rule) -> None:  # type: ignore[no-untyped-def]
    for case in ("test_mlp_training", "test_graph_break", "test_nested_outputs"):
        for text in zoo(case).values():
            once = rule(text)
            assert rule(once) == once


def defaults(texts: Texts) -> Texts:
    """A zoo case's full texts cut to what a test without `artifacts=` stores."""
    names = {a.name for a in DEFAULT_ARTIFACTS}
    cut = {k: v for k, v in texts.items() if k in names and k != "wrapper_code"}
    cut["wrapper_code"] = ARTIFACTS["wrapper_code"].normalize(NORMALIZE, texts["output_code"])
    return cut


def plant_recompile(texts: Texts) -> Texts:
    return edited(
        texts,
        summary=sub(
            r"^recompiles: 0\n",
            "recompiles: 1\n  - size mismatch at index 0. expected 8, actual 4\n",
        ),
    )


def plant_kernel_code(texts: Texts) -> Texts:
    """The same fusion, one statement of its kernel changed (e.g. a lost vectorization)."""
    return edited(
        texts, output_code=sub(r"auto tmp2 = tmp1\.exp\(\);", "auto tmp2 = tmp1.exp2();", 1)
    )


@pytest.mark.parametrize(
    "case, plant, topic",
    [
        ("test_mlp_training", plant_graph_break, "graph breaks"),
        ("test_mlp_training", plant_recompile, "recompiles"),
        ("test_nested_outputs", plant_lost_fusion, "fusion"),
        ("test_nested_outputs", plant_kernel_code, "kernel code"),
        ("test_convbn_inference_no_grad", plant_op_swap, "ops"),
        ("test_buffer_mutation", plant_new_guard, "guards"),
    ],
    ids=["graph-break", "recompile", "lost-fusion", "kernel-code", "op-swap", "guard"],
)
def test_every_regression_class_reads_as_behaviour_in_the_defaults(case, plant, topic) -> None:  # type: ignore[no-untyped-def]
    old = zoo(case)
    diff = compare_case(defaults(old), defaults(plant(old)))
    assert diff.verdict == BEHAVIOUR, diff.findings
    assert topic in {f.topic for f in diff.findings if f.behaviour}, diff.findings
