"""The upgrade report: planted changes in the zoo's snapshots, each classified; the command without torch.

The planted sets start from the committed zoo snapshots of torch 2.13
(`snapshots/2.13/cpu/fixtures/test_zoo/`, guards in the compact form), copied
and edited as a compiler change would edit them. Guards are planted in both
formats the plugin has stored: the compact one, and Dynamo's tree, read from
`tests/data/guards_tree_2.13/` (the same zoo's guards as the plugin stored them
before the compact form, kept here because every committed set is now compact).
Real pairs are recorded with the plugin (relu, then gelu; a reformatted line),
and a failing snapshot test shows the verdict.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest

import pytest_torchcompile
from pytest_torchcompile.snapshot.artifacts.compact import compact_guards
from pytest_torchcompile.snapshot.artifacts.older_forms import written_out
from pytest_torchcompile.snapshot.artifacts.sections import GraphKey, split_sections
from pytest_torchcompile.snapshot.compare.behaviour import (
    BEHAVIOUR,
    TEXT,
    UNCHANGED,
    CaseDiff,
    compare_case,
)
from pytest_torchcompile.snapshot.compare.reading.guard_reading import (
    Guard,
    guard_source,
    parse_guards,
)
from pytest_torchcompile.snapshot.compare.reading.readers import parse_graph
from pytest_torchcompile.snapshot.compare.upgrade import compare_sets, read_case, render_text
from pytest_torchcompile.snapshot.spec import ARTIFACT_EXTENSIONS
from tests.conftest import DATA, REPO, model_test

ZOO = REPO / "snapshots" / "2.13" / "cpu" / "fixtures" / "test_zoo"
#: the guards of the same zoo on the same torch, as stored before the compact form (Dynamo's tree)
TREE_GUARDS = DATA / "guards_tree_2.13"
FORMATS = ("compact", "tree")
PACKAGE_ROOT = Path(pytest_torchcompile.__file__).parents[1]
#: runs the command with `import torch` failing, and fails if anything imported a torch module anyway.
NO_TORCH = (
    "import sys; sys.modules['torch'] = None\n"
    "from pytest_torchcompile.diff_command import main\n"
    "rc = main()\n"
    "leaked = [m for m, v in sys.modules.items() if m.split('.')[0] == 'torch' and v is not None]\n"
    "assert not leaked, leaked\n"
    "sys.exit(rc)\n"
)

Texts = dict[str, str]


def zoo(case: str, guards: str = "compact") -> Texts:
    """A committed zoo case; with `guards="tree"`, its guards as Dynamo's tree."""
    texts = read_case(ZOO / case)
    if guards == "tree":
        texts["guards"] = (TREE_GUARDS / f"{case}.guards.txt").read_text(encoding="utf-8")
    return texts


def edited(texts: Texts, **edits: Callable[[str], str]) -> Texts:
    """A copy of `texts` with each named artifact passed through its edit."""
    out = dict(texts)
    for name, edit in edits.items():
        out[name] = edit(out[name])
    return out


def sub(pattern: str, repl: str, count: int = 0) -> Callable[[str], str]:
    def edit(text: str) -> str:
        new, n = re.subn(pattern, repl, text, count=count, flags=re.MULTILINE)
        assert n, f"planted edit {pattern!r} matched nothing"
        return new

    return edit


# ---------------------------------------------------------------- the planted changes


def plant_graph_break(texts: Texts) -> Texts:
    """mlp_training now breaks the graph in two: a second frame, a break reason."""
    resume = (
        "# ===== frame 1 compile 0: torch_dynamo_resume_in_forward_at_<N> =====\n"
        + texts["dynamo_graph"].split("\n", 1)[1]
    )
    return edited(
        texts,
        summary=lambda s: (
            s.replace(
                "graphs: 1\ngraph breaks: 0\n",
                "graphs: 2\ngraph breaks: 1\n  - Data-dependent branching at fixtures/zoo.py:<N>\n",
            )
            + "  - frame 1 compile 0: torch_dynamo_resume_in_forward_at_<N>: 3 ops, 0 kernels\n"
        ),
        dynamo_graph=lambda s: s + "\n" + resume,
    )


def plant_lost_fusion(texts: Texts) -> Texts:
    """nested_outputs: `cpp_fused_mean_silu_0` no longer fused, now two kernels (silu, mean); 2 -> 3 kernels."""
    code = texts["output_code"]
    start = code.index("cpp_fused_mean_silu_0 = ")
    end = code.index("''')", start) + len("''')")
    fused = code[start:end]
    silu = fused.replace("cpp_fused_mean_silu_0", "cpp_fused_silu_0").replace(
        "tmp_acc0_vec = tmp_acc0_vec + tmp0;", ""
    )
    mean = fused.replace("cpp_fused_mean_silu_0", "cpp_fused_mean_1").replace(
        "auto tmp2 = tmp1.exp();", ""
    )
    code = code[:start] + silu + "\n\n\n" + mean + code[end:]
    code = code.replace("cpp_fused__softmax_argmax_1", "cpp_fused__softmax_argmax_2")
    code = code.replace(
        "        cpp_fused_mean_silu_0(",
        "        cpp_fused_silu_0(buf0)\n        cpp_fused_mean_1(",
    )
    return edited(
        texts,
        output_code=lambda _: code,
        summary=sub(r"kernels: 2\n", "kernels: 3\n"),
    )


def plant_new_guard(texts: Texts) -> Texts:
    """buffer_mutation now reads a global float: an EQUALS_MATCH guard on G['SCALE'], in the guards' own format."""
    if "| +- DEFAULT_DEVICE: " in texts["guards"]:
        guard = (
            "| +- GuardManager: source=G['SCALE'], accessed_by=DictGetItemGuardAccessor('SCALE'), type=<class 'float'>, tag_safe=(True, False)\n"
            "| | +- EQUALS_MATCH: G['SCALE'] == 2.0  # return x * SCALE  # zoo.py:<N> in forward\n"
        )
        return edited(
            texts,
            guards=sub(
                r"^(\| \+- DEFAULT_DEVICE: .*\n)", r"\1" + guard.replace("\\", "\\\\"), count=1
            ),
        )
    guard = "EQUALS_MATCH: G['SCALE'] == 2.0  # return x * SCALE  # zoo.py:<N> in forward\n"
    return edited(texts, guards=sub(r"^(DEFAULT_DEVICE: .*\n)", r"\1" + guard, count=1))


def plant_op_swap(texts: Texts) -> Texts:
    """convbn: relu -> gelu in every graph (the stored set keeps no post-grad graph)."""
    return edited(
        texts,
        dynamo_graph=sub(r"torch\.nn\.functional\.relu\(", "torch.nn.functional.gelu("),
        aot_inference=sub(r"aten\.relu\.default", "aten.gelu.default"),
    )


def plant_renumbering(texts: Texts) -> Texts:
    """mlp_training's AOT and post-grad graphs with every node renumbered (`mul_2` -> `mul_9`), nothing else."""

    def renumber(text: str) -> str:
        def bump(m: re.Match[str]) -> str:
            return f"{m[1]}_{int(m[2] or 0) + 7}"

        return re.sub(
            r"(?<![\w.])(mul|add|addmm|permute|erf|view|sum|mm|gelu)(?:_(\d+))?(?![\w.(])",
            bump,
            text,
        )

    return edited(texts, aot_forward=renumber, aot_backward=renumber)


def plant_artifact_gone(texts: Texts) -> Texts:
    """graph_break recorded by a torch that no longer emits runtime_wrapper."""
    return {k: v for k, v in texts.items() if k != "runtime_wrapper"}


PLANTS = {
    "test_mlp_training": (plant_graph_break, BEHAVIOUR),
    "test_nested_outputs": (plant_lost_fusion, BEHAVIOUR),
    "test_buffer_mutation": (plant_new_guard, BEHAVIOUR),
    "test_convbn_inference_no_grad": (plant_op_swap, BEHAVIOUR),
    "test_custom_autograd_function": (plant_renumbering, TEXT),
    "test_graph_break": (plant_artifact_gone, TEXT),
    "test_transformer_block": (lambda t: t, UNCHANGED),
}


# ---------------------------------------------------------------- each planted change, classified


def test_added_graph_break_is_behaviour() -> None:
    diff = compare_case(zoo("test_mlp_training"), plant_graph_break(zoo("test_mlp_training")))
    assert diff.verdict == BEHAVIOUR
    assert diff.line().startswith(
        "behaviour changed: graphs 1 -> 2, graph breaks 0 -> 1, op count 3 -> 3+3"
    )
    assert _messages(diff, behaviour=True) >= {
        "graph break added: Data-dependent branching at fixtures/zoo.py:<N>",
        "frame 1/0: graph only in NEW (dynamo_graph)",
    }


def test_lost_fusion_is_behaviour_and_told_from_a_rename() -> None:
    diff = compare_case(zoo("test_nested_outputs"), plant_lost_fusion(zoo("test_nested_outputs")))
    assert diff.verdict == BEHAVIOUR
    assert diff.line().startswith("behaviour changed: kernels 2 -> 3")
    assert _messages(diff, behaviour=True) >= {
        "output_code frame 0/0: kernel fused differently: cpp_fused_mean_silu_0 -> cpp_fused_silu_0",
        "output_code frame 0/0: kernel added: cpp_fused_mean_1",
    }
    # the softmax kernel only moved from _1 to _2: same code, told as a rename, not as behaviour
    assert (
        "output_code: kernel renamed, same code: cpp_fused__softmax_argmax_1 -> cpp_fused__softmax_argmax_2"
        in _messages(diff, behaviour=False)
    )


@pytest.mark.parametrize("guards", FORMATS)
def test_new_guard_is_behaviour(guards: str) -> None:
    old = zoo("test_buffer_mutation", guards)
    diff = compare_case(old, plant_new_guard(old))
    assert diff.verdict == BEHAVIOUR
    assert diff.line() == "behaviour changed: guards"
    assert _messages(diff, behaviour=True) == {
        "guards frame 0/0: added EQUALS_MATCH: G['SCALE'] == 2.0"
    }


def test_swapped_op_is_behaviour_in_every_graph_that_shows_it() -> None:
    diff = compare_case(
        zoo("test_convbn_inference_no_grad"), plant_op_swap(zoo("test_convbn_inference_no_grad"))
    )
    assert diff.verdict == BEHAVIOUR
    assert "frame 0/0 ops: -aten.relu.default +aten.gelu.default (aot_inference)" in _messages(
        diff, behaviour=True
    )
    assert (
        "frame 0/0 ops: -torch.nn.functional.relu +torch.nn.functional.gelu (dynamo_graph)"
        in _messages(diff, behaviour=True)
    )


def test_pure_renumbering_is_text_only() -> None:
    old = zoo("test_custom_autograd_function")
    new = plant_renumbering(old)
    assert new["aot_forward"] != old["aot_forward"] and "addmm_7" in new["aot_forward"]
    diff = compare_case(old, new)
    assert diff.verdict == TEXT, diff.findings
    # the stored form renumbers in order of definition, which undoes the shift in aot_forward; where a
    # family is left alone (a new name would collide), the dataflow comparison sees the same graph
    assert diff.line() == "text only: stored form, FX renumbering"


def test_reordered_independent_nodes_are_the_same_dataflow() -> None:
    graph = (
        '    def forward(self, a: "f32[4]", b: "f32[4]"):\n'
        '        x: "f32[4]" = torch.ops.aten.sin.default(a);  a = None\n'
        '        y: "f32[4]" = torch.ops.aten.cos.default(b);  b = None\n'
        '        z: "f32[4]" = torch.ops.aten.add.Tensor(x, y);  x = y = None\n'
        "        return (z,)\n"
    )
    swapped = graph.replace('        x: "f32[4]" = torch.ops.aten.sin.default(a);  a = None\n', "")
    swapped = swapped.replace("return (z,)", "return (z, )").replace(
        "        z:", '        x: "f32[4]" = torch.ops.aten.sin.default(a);  a = None\n        z:'
    )
    assert parse_graph(graph).dataflow == parse_graph(swapped).dataflow
    # but the same ops wired otherwise (sin of b, cos of a) are not
    crossed = graph.replace("sin.default(a)", "sin.default(b)").replace(
        "cos.default(b)", "cos.default(a)"
    )
    assert parse_graph(graph).ops == parse_graph(crossed).ops
    assert parse_graph(graph).dataflow != parse_graph(crossed).dataflow


def test_artifact_no_longer_emitted_is_text_only() -> None:
    diff = compare_case(zoo("test_graph_break"), plant_artifact_gone(zoo("test_graph_break")))
    assert diff.verdict == TEXT
    assert diff.line() == "text only: runtime_wrapper only in old"


def test_identical_is_unchanged() -> None:
    diff = compare_case(zoo("test_transformer_block"), zoo("test_transformer_block"))
    assert (diff.verdict, diff.findings, diff.moved(), diff.line()) == (
        UNCHANGED,
        (),
        [],
        "unchanged",
    )


# ---------------------------------------------------------------- the finer rules


def test_kernel_renamed_with_the_same_code_is_text_only() -> None:
    old = zoo("test_transformer_block")
    rename = sub(
        r"cpp_fused_add_native_layer_norm_view_1\b",
        "cpp_fused__unsafe_view_add_native_layer_norm_1",
    )
    diff = compare_case(old, edited(old, output_code=rename, summary=rename))
    assert diff.verdict == TEXT
    assert diff.line() == "text only: kernels renamed"


def test_kernel_with_other_code_is_behaviour() -> None:
    old = zoo("test_function_with_kwargs")
    diff = compare_case(
        old, edited(old, output_code=sub(r"auto tmp9 = ", "auto tmp9 = -", count=1))
    )
    assert diff.verdict == BEHAVIOUR
    assert _messages(diff, behaviour=True) == {
        "output_code frame 0/0: kernel cpp_fused_add_div_mul_softplus_0: same fusion, code changed (-1 +1 lines)"
    }


def test_extern_call_swapped_is_behaviour() -> None:
    old = zoo("test_transformer_block")
    diff = compare_case(
        old, edited(old, output_code=sub(r"extern_kernels\.addmm\(", "extern_kernels.mm(", count=1))
    )
    assert diff.verdict == BEHAVIOUR
    assert (
        "output_code frame 0/0: extern calls -extern_kernels.addmm +extern_kernels.mm"
        in _messages(diff, behaviour=True)
    )


def test_kernels_called_in_another_order_is_behaviour() -> None:
    """Two kernels swapped where one reads what the other writes: the wrapper computes otherwise."""
    old = zoo("test_nested_outputs")
    lines = old["output_code"].split("\n")
    first = next(
        i for i, line in enumerate(lines) if line.startswith("        cpp_fused_mean_silu_0(")
    )
    second = next(
        i for i, line in enumerate(lines) if line.startswith("        cpp_fused__softmax_argmax_1(")
    )
    lines[first], lines[second] = lines[second], lines[first]
    diff = compare_case(old, edited(old, output_code=lambda _: "\n".join(lines)))
    assert (diff.verdict, diff.line()) == (BEHAVIOUR, "behaviour changed: call arguments")


def test_wrapper_asserts_regrouped_are_text_only() -> None:
    """torch 2.15 checks its inputs with `assert_size_stride_grouped`, which the stored form keeps:
    the same kernels, called the same way (a check of sizes computes nothing)."""
    old = zoo("test_function_with_kwargs")
    grouped = "        assert_size_stride_grouped((arg0_1, arg1_1), ((4, 8), (8, )), ((8, 1), (1, )), 'input')\n"
    new = edited(old, output_code=sub(r"^(        args\.clear\(\)\n)", r"\1" + grouped, count=1))
    diff = compare_case(old, new)
    assert (diff.verdict, diff.line()) == (TEXT, "text only: wrapper text")


@pytest.mark.parametrize("guards", FORMATS)
def test_tensor_guard_with_another_dtype_is_behaviour(guards: str) -> None:
    old = zoo("test_mlp_training", guards)
    diff = compare_case(
        old,
        edited(
            old,
            guards=sub(
                r"(check_tensor\(L\['x'\], Tensor, .*?), torch\.float32", r"\1, torch.float16"
            ),
        ),
    )
    assert diff.verdict == BEHAVIOUR
    [message] = _messages(diff, behaviour=True)
    assert (
        message.startswith("guards frame 0/0: changed TENSOR_MATCH: check_tensor(L['x'], Tensor,")
        and "torch.float16" in message
    )


@pytest.mark.parametrize("guards", FORMATS)
def test_global_state_switch_only_one_torch_knows_is_text_but_a_flipped_switch_is_behaviour(
    guards: str,
) -> None:
    old = zoo("test_mlp_training", guards)
    added = compare_case(
        old,
        edited(
            old, guards=sub(r'"default_dtype":6,', '"cuda_matmul_precision":0,"default_dtype":6,')
        ),
    )
    assert added.verdict == TEXT
    assert _messages(added, behaviour=False) == {
        "guards: GLOBAL_STATE checks a switch only one side knows (cuda_matmul_precision), the others equal"
    }
    flipped = compare_case(old, edited(old, guards=sub(r'"grad_mode":true', '"grad_mode":false')))
    assert flipped.verdict == BEHAVIOUR
    assert _messages(flipped, behaviour=True) == {
        "guards frame 0/0: GLOBAL_STATE grad_mode True -> False"
    }


@pytest.mark.parametrize("guards", FORMATS)
def test_guard_relabelled_or_moved_is_text_only(guards: str) -> None:
    """torch 2.15 installs `G['F'] is G[...].F` as OBJECT_ALIASING after G['F']'s ID_MATCH instead of a LAMBDA_GUARD at the end."""
    old = zoo("test_mlp_training", guards)
    prefix = "+- " if guards == "tree" else ""
    lambda_line = next(
        line
        for line in old["guards"].splitlines()
        if line.startswith(f"{prefix}LAMBDA_GUARD: G['F'] is ")
    )
    check = lambda_line.removeprefix(f"{prefix}LAMBDA_GUARD: ")
    moved = old["guards"].replace(lambda_line + "\n", "").replace(lambda_line, "")
    indent = "| | | +- " if guards == "tree" else ""
    moved = re.sub(
        rf"^({re.escape(indent)}ID_MATCH: ___check_obj_id\(G\['F'\], <id>\).*\n)",
        lambda m: m[1] + f"{indent}OBJECT_ALIASING: {check}\n",
        moved,
        count=1,
        flags=re.M,
    )
    assert moved != old["guards"].replace(lambda_line + "\n", "")
    diff = compare_case(old, edited(old, guards=lambda _: moved))
    assert diff.verdict == TEXT, diff.findings
    assert _messages(diff, behaviour=False) == {
        "guards: same checks, other kind or place: LAMBDA_GUARD -> OBJECT_ALIASING"
    }


@pytest.mark.parametrize("guards", FORMATS)
def test_guards_keep_their_source_and_drop_provenance(guards: str) -> None:
    parsed = [
        (g.kind, g.source, g.check) for g in parse_guards(zoo("test_graph_break", guards)["guards"])
    ]
    assert ("ID_MATCH", "G['torch'].tanh", "___check_obj_id(G['torch'].tanh, <id>)") in parsed
    assert (
        "DIMENSION_DYNAMIC_MARKING_GUARD",
        "L['x']",
        "hasattr(L['x'], '_dynamo_static_indices') == False",
    ) in parsed
    assert all("#" not in check for _, _, check in parsed)


@pytest.mark.parametrize("case", sorted(p.name for p in ZOO.iterdir()))
def test_tree_and_compact_guards_are_the_same_guards(case: str) -> None:
    """The zoo's guards stored as a tree (before) and in the compact form (now, recorded anew) parse to the same guards.

    Also after `compact_guards`, the function the plugin stores with: no guard is lost or
    invented by the conversion.
    """
    tree, compact = (
        (TREE_GUARDS / f"{case}.guards.txt").read_text(),
        written_out(read_case(ZOO / case)["guards"]),
    )
    assert "| +- " in tree and "+- " not in compact

    def guards(text: str) -> dict[GraphKey, Counter[Guard]]:
        return {
            key: Counter(parse_guards(section)) for key, section in split_sections(text).items()
        }

    assert guards(tree) == guards(compact) == guards(compact_guards(tree))
    assert sum(map(len, guards(compact).values())) > 10
    diff = compare_case(zoo(case, "tree"), zoo(case))
    # the same checks: a stored form of them (and, where the committed set was recorded with
    # frame headers that name the function's arguments, the tree's other header lines)
    assert diff.verdict == TEXT and diff.line() in (
        "text only: stored form",
        "text only: guards text",
    ), diff.findings


@pytest.mark.parametrize(
    ("check", "source"),
    [
        (
            "check_tensor(L['x'], Tensor, DispatchKeySet(CPU), torch.float32, device=None, size=[8, 16], stride=[16, 1])",
            "L['x']",
        ),
        ("___check_obj_id(G['F'].linear, <id>)", "G['F'].linear"),
        (
            "___check_type_id(L['self']._modules['fc1']._parameters, <id>)",
            "L['self']._modules['fc1']._parameters",
        ),
        (
            "not ___dict_contains('forward', dict(type(L['self']._modules['bn']).__dict__))",
            "L['self']._modules['bn']",
        ),
        ("L['self']._modules['bn'].eps == 1e-05", "L['self']._modules['bn'].eps"),
        ("L['x'].size()[0] == 4", "L['x']"),
        ("len(L['self']._modules['conv'].stride) == 2", "L['self']._modules['conv'].stride"),
        ("L['self'].cfg['a]b'].dim == 2", "L['self'].cfg['a]b'].dim"),
        ("G['F'] is G['__import_torch_dot_nn_dot_modules_dot_linear'].F", "G['F']"),
        ('___check_global_state() against {"grad_mode":true}', ""),
        ("utils_device.CURRENT_DEVICE == None", ""),
        ("L['x'][", "L['x']"),
    ],
)
def test_a_guard_source_is_read_from_its_check(check: str, source: str) -> None:
    assert guard_source(check) == source


def test_graph_arguments_are_behaviour_whatever_the_generated_code_says() -> None:
    """A graph read with other arguments is never excused by generated code whose calls read
    the same (an offset, an alpha, a view's shape change nothing in the wrapper's names)."""
    old = zoo("test_dynamic_true")
    change = sub(r"sum\.dim_IntList\(pow, \[-1\]", "sum.dim_IntList(pow, [0]")
    diff = compare_case(old, edited(old, aot_inference=change))
    assert diff.verdict == BEHAVIOUR
    assert _messages(diff, behaviour=True) == {
        "frame 0/0: same ops, 1 node with other arguments or types: "
        "aten.sum.dim_IntList(_, [1], True) -> (_, [0], True) (aot_inference)"
    }


def test_a_dimension_counted_from_the_end_is_the_same_dimension() -> None:
    """torch 2.15 prints `sum(pow, [1], True)` where 2.13 printed `[-1]` (a 2-D input): the same
    sum. Counted from the start once the input's rank is read from its printed type."""
    old = zoo("test_dynamic_true")
    change = sub(r"sum\.dim_IntList\(pow, \[-1\]", "sum.dim_IntList(pow, [1]")
    diff = compare_case(old, edited(old, aot_inference=change))
    assert diff.verdict == TEXT, diff.line()


def test_recompile_reason_changed_is_behaviour() -> None:
    old = zoo("test_two_shapes_recompile_then_dynamic")
    diff = compare_case(
        old, edited(old, summary=sub(r"expected 4, actual 6", "expected 4, actual 8"))
    )
    assert diff.verdict == BEHAVIOUR
    assert diff.line() == "behaviour changed: recompile reasons"


def test_graph_missing_on_one_side_is_behaviour_but_a_missing_summary_is_not_read() -> None:
    old = zoo("test_mlp_training")
    lost = compare_case(old, {k: v for k, v in old.items() if k != "aot_backward"})
    assert (lost.verdict, lost.line()) == (BEHAVIOUR, "behaviour changed: aot_backward only in old")
    unrecorded = compare_case(old, {k: v for k, v in old.items() if k != "summary"})
    assert (unrecorded.verdict, unrecorded.counters) == (TEXT, {})


def test_a_counter_one_summary_does_not_state_is_not_compared() -> None:
    """Sets written by another version of the plugin may word the summary otherwise: no counter 'moves' to nothing."""
    old = zoo("test_mlp_training")
    diff = compare_case(
        old, edited(old, summary=sub(r"^graph breaks: 0\n", "breaks in the graph: none\n"))
    )
    assert (diff.verdict, diff.counters["graph breaks"], diff.moved()) == (TEXT, ("0", None), [])


def test_guards_in_another_format_are_compared_line_by_line() -> None:
    old = {"guards": "L['x'].size(0) == 4\nL['y'] is None  # from f.py:3\n"}
    assert (
        compare_case(
            old, {"guards": "L['x'].size(0) == 4\nL['y'] is None  # from g.py:3\n"}
        ).verdict
        == TEXT
    )
    changed = compare_case(old, {"guards": "L['x'].size(0) == 8\nL['y'] is None\n"})
    assert changed.verdict == BEHAVIOUR
    assert _messages(changed, behaviour=True) == {
        "guards frame 0/0: changed line: L['x'].size(0) == 4 -> L['x'].size(0) == 8"
    }


def test_garbage_text_never_raises() -> None:
    junk = {
        name: "\x00 +- | | ===== frame x compile y =====\n'''\n" * 3
        for name in zoo("test_graph_break")
    }
    assert isinstance(compare_case(zoo("test_graph_break"), junk), CaseDiff)
    assert isinstance(compare_case(junk, {}), CaseDiff)


def _messages(diff: CaseDiff, behaviour: bool) -> set[str]:
    return {f.render() for f in diff.findings if f.behaviour == behaviour}


# ---------------------------------------------------------------- the command


def run_cli(
    *args: str | Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """`python -m pytest_torchcompile ...` in a subprocess where `import torch` fails."""
    environ = {**os.environ, "PYTHONPATH": str(PACKAGE_ROOT), **(env or {})}
    return subprocess.run(
        [sys.executable, "-c", NO_TORCH, *map(str, args)],
        capture_output=True,
        text=True,
        env=environ,
        timeout=120,
    )


@pytest.fixture
def planted(tmp_path: Path) -> tuple[Path, Path]:
    """OLD: a copy of the zoo snapshots; NEW: the same with one planted change per case (PLANTS)."""
    return plant_sets(tmp_path, "compact")


def plant_sets(tmp_path: Path, old_guards: str) -> tuple[Path, Path]:
    """The planted pair; with `old_guards="tree"`, OLD's guards are stored as Dynamo's tree (a set recorded before the compact form)."""
    old, new = tmp_path / "old", tmp_path / "new"
    shutil.copytree(ZOO, old / "fixtures" / "test_zoo")
    shutil.copytree(ZOO, new / "fixtures" / "test_zoo")
    if old_guards == "tree":
        for case in TREE_GUARDS.iterdir():
            shutil.copyfile(
                case, old / "fixtures" / "test_zoo" / case.name.split(".")[0] / "guards.guards.txt"
            )
    for case, (plant, _) in PLANTS.items():
        folder = new / "fixtures" / "test_zoo" / case
        before = read_case(folder)
        after = plant(before)
        for name in before:
            path = folder / f"{name}.{ARTIFACT_EXTENSIONS[name]}"
            if name in after:
                path.write_text(after[name], encoding="utf-8")
            else:
                path.unlink()
    return old, new


@pytest.mark.parametrize("old_guards", FORMATS)
def test_command_reports_each_planted_change_without_torch(tmp_path: Path, old_guards: str) -> None:
    """NEW: the compact form; OLD: the same, or with its guards as Dynamo's tree, which changes no verdict but `unchanged`."""
    old, new = plant_sets(tmp_path, old_guards)
    result = run_cli(
        "diff", old, new, "--markdown", tmp_path / "report.md", "--json", tmp_path / "report.json"
    )
    assert result.returncode == 0, result.stderr
    report = json.loads((tmp_path / "report.json").read_text())
    verdicts = {c["case"].rsplit("/", 1)[-1]: c["verdict"] for c in report["cases"]}
    untouched = (
        UNCHANGED if old_guards == "compact" else TEXT
    )  # the tree is another stored form of the same guards
    assert {case: verdicts[case] for case in PLANTS} == {
        case: verdict if verdict != UNCHANGED else untouched
        for case, (_, verdict) in PLANTS.items()
    }
    assert verdicts["test_dynamic_true"] == untouched  # not planted
    lines = result.stdout.splitlines()
    assert lines[0] == f"snapshot diff: {old} (OLD) -> {new} (NEW), cases under fixtures/test_zoo/"
    assert any(
        re.fullmatch(r"test_nested_outputs +1 +0 +0 +2 -> 3 +6 +behaviour changed", line)
        for line in lines
    ), result.stdout
    assert "  - frame 0/0 ops: -aten.relu.default +aten.gelu.default (aot_inference)" in lines
    assert lines[-1] == (
        "10 cases: 4 behaviour changed, 2 text only, 4 unchanged"
        if old_guards == "compact"
        else "10 cases: 4 behaviour changed, 6 text only, 0 unchanged"
    )
    assert "guards frame 0/0: added EQUALS_MATCH: G['SCALE'] == 2.0" in result.stdout
    markdown = (tmp_path / "report.md").read_text()
    assert "| `test_nested_outputs` | 1 | 0 | 0 | 2 -> 3 | 6 | **behaviour changed** |" in markdown
    assert len(lines) < 50


def test_command_says_which_case_is_on_one_side_only(planted: tuple[Path, Path]) -> None:
    old, new = planted
    shutil.rmtree(new / "fixtures" / "test_zoo" / "test_dynamic_true")
    shutil.copytree(
        old / "fixtures" / "test_zoo" / "test_graph_break",
        new / "fixtures" / "test_zoo" / "test_graph_break_2",
    )
    result = run_cli("diff", old, new)
    assert result.returncode == 0, result.stderr
    assert re.search(
        r"^test_dynamic_true +1 +0 +0 +1 +3 +only in OLD$", result.stdout, re.MULTILINE
    ), result.stdout
    assert re.search(
        r"^test_graph_break_2 +2 +1 +0 +4 +4\+1 +only in NEW$", result.stdout, re.MULTILINE
    ), result.stdout
    assert result.stdout.splitlines()[-1].endswith(", 1 only in OLD, 1 only in NEW")


def test_markdown_is_appended_to_the_github_step_summary(
    planted: tuple[Path, Path], tmp_path: Path
) -> None:
    summary = tmp_path / "step_summary.md"
    summary.write_text("earlier step output\n")
    result = run_cli(
        "diff", *planted, "--markdown", summary, env={"GITHUB_STEP_SUMMARY": str(summary)}
    )
    assert result.returncode == 0, result.stderr
    text = summary.read_text()
    assert text.startswith("earlier step output\n**Snapshot diff** ")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("diff", "{tmp}/nowhere", "{zoo}"), "{tmp}/nowhere: no such folder"),
        (("diff", "{zoo}", "{tmp}/empty"), "{tmp}/empty: no snapshot case found"),
        (
            ("diff", "{zoo}", "{zoo}", "--json", "{tmp}/no/such/dir/r.json"),
            "cannot write {tmp}/no/such/dir/r.json",
        ),
        (("diff", "{zoo}"), "the following arguments are required: NEW"),
        ((), "the following arguments are required: COMMAND"),
    ],
)
def test_bad_arguments_exit_2_with_a_message(
    tmp_path: Path, args: tuple[str, ...], message: str
) -> None:
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "notes.txt").write_text("not a snapshot")
    fill = {"tmp": str(tmp_path), "zoo": str(ZOO)}
    result = run_cli(*(a.format(**fill) for a in args))
    assert result.returncode == 2
    assert message.format(**fill) in result.stderr
    assert "Traceback" not in result.stderr


def test_text_every_changed_case_shares_is_said_once_artifact_by_artifact(tmp_path: Path) -> None:
    """`transformed_code` differs in both cases, `program` in one: the first is said once, the second under its case."""
    old, new = tmp_path / "old", tmp_path / "new"
    for case, names in (("a", ("transformed_code", "program")), ("b", ("transformed_code",))):
        for side, text in ((old, "x = 1\n"), (new, "x = 2\n")):
            (side / case).mkdir(parents=True)
            for name in names:
                (side / case / f"{name}.{ARTIFACT_EXTENSIONS[name]}").write_text(text)
    text = render_text(compare_sets(old, new))
    assert (
        "shared by several cases (said once here, not under each case):\n"
        "  2 of 2: text differs, not read for behaviour (transformed_code)\n"
        "a: text only: text differs, not read for behaviour (program)\n2 cases:" in text
    ), text


def test_identical_sets_report_unchanged() -> None:
    result = run_cli("diff", ZOO, ZOO)
    assert result.returncode == 0, result.stderr
    assert (
        result.stdout.splitlines()[-1] == "10 cases: 0 behaviour changed, 0 text only, 10 unchanged"
    )


# ---------------------------------------------------------------- a real pair, recorded with the plugin


def test_real_relu_to_gelu_pair_recorded_with_the_plugin(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_m=model_test(op="relu", backend="aot_eager"))
    pytester.runpytest("--update-snapshots").assert_outcomes(passed=1)
    shutil.copytree(pytester.path / "snapshots", pytester.path / "relu")
    pytester.runpytest("--update-snapshots").assert_outcomes(passed=1)
    shutil.copytree(pytester.path / "snapshots", pytester.path / "relu_again")
    pytester.makepyfile(test_m=model_test(op="nn.functional.gelu", backend="aot_eager"))
    pytester.runpytest("--update-snapshots").assert_outcomes(passed=1)

    same = run_cli("diff", pytester.path / "relu", pytester.path / "relu_again")
    assert (
        same.stdout.splitlines()[-1] == "1 cases: 0 behaviour changed, 0 text only, 1 unchanged"
    ), same.stdout
    result = run_cli("diff", pytester.path / "relu", pytester.path / "snapshots")
    assert result.returncode == 0, result.stderr
    assert re.search(r"^test_m +1 +0 +0 +0 +2 +behaviour changed$", result.stdout, re.MULTILINE), (
        result.stdout
    )
    assert "  - frame 0/0 ops: -torch.relu +torch._C._nn.gelu (dynamo_graph)" in result.stdout
    assert re.search(
        r"^  - frame 0/0 ops: -aten.*\.relu\.default \+aten\.gelu\.default \(aot_forward\)$",
        result.stdout,
        re.MULTILINE,
    ), result.stdout
    assert (
        "  - frame 0/0 ops: -aten.threshold_backward.default +aten.gelu_backward.default (aot_backward)"
        in result.stdout
    )
    assert (
        "  - guards frame 0/0: added 4 ID_MATCH on G['torch'].nn, G['torch'].nn.functional, G['torch'].nn.functional.gelu, "
        in result.stdout
    )


# ---------------------------------------------------------------- the verdict in a failing snapshot test


def test_a_failing_snapshot_test_says_behaviour_changed_or_text_only(
    pytester: pytest.Pytester,
) -> None:
    """The first block of a snapshot failure carries the verdict: relu -> gelu moved the graphs; a reformatted line did not."""
    pytester.makepyfile(test_m=model_test(op="relu", backend="aot_eager"))
    pytester.runpytest("--update-snapshots").assert_outcomes(passed=1)

    pytester.makepyfile(test_m=model_test(op="nn.functional.gelu", backend="aot_eager"))
    swapped = pytester.runpytest()
    swapped.assert_outcomes(failed=1)
    # a set: on CI (env CI or BUILD_NUMBER) pytest's short summary repeats the whole message
    said = {line.strip() for line in swapped.outlines if "verdict:" in line}
    assert said == {"verdict: behaviour changed: ops, guards"}, swapped.outlines

    reformatted = model_test(op="relu", backend="aot_eager").replace(
        "torch.relu(self.lin(x))", "torch.relu(self.lin( x ))"
    )
    pytester.makepyfile(test_m=reformatted)
    passed = pytester.runpytest()  # the graphs' and guards' comments quote the line: text moved
    passed.assert_outcomes(passed=1)
    passed.stdout.fnmatch_lines(["  test_m.py::test_m: text only: FX renumbering, guards text"])
    text_only = pytester.runpytest("--torchcompile-strict-text")
    text_only.assert_outcomes(failed=1)
    said = {line.strip() for line in text_only.outlines if "verdict:" in line}
    assert said == {"verdict: text only: FX renumbering, guards text"}, text_only.outlines


def test_a_fact_a_kind_of_case_adds_to_the_summary_is_read() -> None:
    """A distributed case's summary ends with `ddp buckets: N`: another bucket count is a change
    of the compiled program that the first line names as such."""
    summary = (
        "backend: inductor\ngraphs: 1\ngraph breaks: 0\nrecompiles: 0\nkernels: 0\nframes:\n"
        "  - frame 0 compile 0: forward: 3 ops, 0 kernels\nddp buckets: 4\n"
    )
    diff = compare_case({"summary": summary}, {"summary": summary.replace(": 4", ": 3")})
    assert (diff.verdict, diff.headline()) == (BEHAVIOUR, "ddp buckets 4 -> 3")
