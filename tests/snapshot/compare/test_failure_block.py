"""A snapshot failure a reviewer reads in seconds (snapshot/failure.py).

Unit tests on the composition (no torch), then the plugin as a user drives it:
the short test summary says what moved, a planted change in each artifact
fails with a diff that names it, `--torchcompile-full-diff` and `-vv` show
every diff, and `--update-snapshots` ends with what it wrote.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pytest_torchcompile.snapshot.compare.changes import ChangedCases, canonical_names
from pytest_torchcompile.snapshot.compare.failure import compose
from pytest_torchcompile.snapshot.files.store import Outcome
from pytest_torchcompile.snapshot.spec import ARTIFACT_EXTENSIONS

TEST_DIR = Path("/r/snapshots/test_m/test_m")

SUMMARY = """\
backend: inductor
graphs: 1
graph breaks: 0
recompiles: 0
kernels: {kernels}
frames:
  - frame 0 compile 0: forward: {ops} ops, {kernels} kernels
"""
GRAPH = """\
class GraphModule(torch.nn.Module):
    def forward(self, arg0_1: "f32[4][1]cpu"):
        {name}: "f32[4][1]cpu" = torch.ops.aten.{op}.default(arg0_1);  arg0_1 = None
        return ({name},)
"""


def changed(name: str, old: str, new: str, case: str = "") -> Outcome:
    folder = TEST_DIR / case if case else TEST_DIR
    artifact = name.split(".", 1)[0]
    return Outcome(folder / name, "changed", "", old, new, case=case, artifact=artifact)


def test_headline_says_what_moved() -> None:
    outcomes = [
        changed(
            "summary.txt", SUMMARY.format(kernels=5, ops=59), SUMMARY.format(kernels=7, ops=105)
        ),
        changed(
            "aot_inference.fx.txt",
            GRAPH.format(name="relu", op="relu"),
            GRAPH.format(name="sigmoid", op="sigmoid"),
        ),
    ]
    text = compose(ChangedCases.of(outcomes), "snapshots/test_m/test_m", full=False)
    # the counters a reviewer decides on first, then which op was swapped
    assert text.splitlines()[0] == "kernels 5 -> 7; ops: relu -> sigmoid; op count 59 -> 105"
    assert "verdict: behaviour changed: kernels 5 -> 7, op count 59 -> 105, ops" in text


def test_block_lists_every_change_then_summary_then_earliest_stage() -> None:
    outcomes = [
        Outcome(TEST_DIR / "guards.guards.txt", "matched", artifact="guards"),
        changed("output_code.code.txt", "a\nb\n", "a\nc\nd\n"),
        changed("summary.txt", SUMMARY.format(kernels=1, ops=1), SUMMARY.format(kernels=1, ops=2)),
        changed(
            "aot_inference.fx.txt",
            GRAPH.format(name="relu", op="relu"),
            GRAPH.format(name="sigmoid", op="sigmoid"),
        ),
        changed(
            "dynamo_graph.fx.txt",
            GRAPH.format(name="relu", op="relu"),
            GRAPH.format(name="gelu", op="gelu"),
        ),
    ]
    lines = compose(ChangedCases.of(outcomes), "snapshots/test_m/test_m", full=False).splitlines()
    assert lines[1] == "changed artifacts in snapshots/test_m/test_m:"
    table = lines[2:6]
    assert [row.split()[0] for row in table] == [
        "summary.txt",
        "dynamo_graph.fx.txt",
        "aot_inference.fx.txt",
        "output_code.code.txt",
    ]
    assert table[3].split()[1:] == ["+2", "-1"]
    text = "\n".join(lines)
    assert (
        text.index("snapshot snapshots/test_m/test_m/summary.txt differs:")
        < text.index("earliest pipeline stage that changed: dynamo_graph")
        < text.index("also changed:")
    )
    assert (
        "earliest pipeline stage that changed: dynamo_graph\nsnapshot snapshots/test_m/test_m/dynamo_graph.fx.txt differs:\n--- snapshot\n+++ this run"
        in text
    )
    assert (
        "+        gelu: " in text and "sigmoid" not in text
    )  # only the earliest stage's diff is shown
    assert (
        "also changed: aot_inference.fx.txt, output_code.code.txt; their diffs: pytest --torchcompile-full-diff (or -vv)"
        in text
    )
    assert lines[-1] == "if the change is intended: pytest --update-snapshots"


def test_full_diff_shows_every_artifact() -> None:
    outcomes = [
        changed(
            "aot_inference.fx.txt",
            GRAPH.format(name="relu", op="relu"),
            GRAPH.format(name="sigmoid", op="sigmoid"),
        ),
        changed("output_code.code.txt", "a\nb\n", "a\nc\n"),
    ]
    text = compose(ChangedCases.of(outcomes), "snapshots/test_m/test_m", full=True)
    assert "+        sigmoid: " in text and "+c" in text and "also changed" not in text
    assert "summary: unchanged" in text


def test_renumbering_alone_is_not_read_first() -> None:
    old = GRAPH.format(name="add_9", op="add") + "        mul_3 = add_9 * 2\n"
    new = GRAPH.format(name="add_7", op="add") + "        mul_1 = add_7 * 2\n"
    outcomes = [
        changed("dynamo_graph.fx.txt", old, new),
        changed("output_code.code.txt", "buf0 = f()\n", "buf0 = g()\n"),
    ]
    text = compose(ChangedCases.of(outcomes), "d", full=False)
    assert "earliest pipeline stage that changed: output_code" in text
    assert re.search(r"^  dynamo_graph.fx.txt +\+3 +-3 +names only$", text, re.MULTILINE)
    assert "also changed: dynamo_graph.fx.txt (names only)" in text
    assert text.splitlines()[0].startswith("text only: ")  # nothing the program does moved


def test_canonical_names_keep_dtypes_sizes_and_edges() -> None:
    assert canonical_names("add_9 = x; mul_3(add_9)") == canonical_names(
        "add_7 = x; mul(add_7)".replace("mul(", "mul_5(")
    )
    assert canonical_names('a: "f32[4]"') != canonical_names('a: "f16[4]"')
    assert canonical_names("buf1 = f(buf0)") != canonical_names("buf1 = f(buf1)")
    assert canonical_names("size=[2, 8]") != canonical_names("size=[2, 9]")


def test_cases_are_named_each_with_its_verdict() -> None:
    outcomes = [
        changed(
            "summary.txt",
            SUMMARY.format(kernels=1, ops=1),
            SUMMARY.format(kernels=2, ops=1),
            case="short",
        ),
        changed("output_code.code.txt", "a\n", "b\n", case="long"),
    ]
    text = compose(ChangedCases.of(outcomes), "d", full=False)
    assert text.splitlines()[0] == "[short] kernels 1 -> 2; [long] text only: wrapper text"
    assert "[short] verdict: behaviour changed: kernels 1 -> 2" in text
    assert "[long] verdict: text only" in text
    assert "  short/summary.txt" in text and "  long/output_code.code.txt" in text


def test_missing_files_say_so() -> None:
    outcomes = [
        Outcome(
            TEST_DIR / "summary.txt",
            "missing",
            "snapshot snapshots/x/summary.txt does not exist yet: run `pytest --update-snapshots`",
            artifact="summary",
        )
    ]
    text = compose(ChangedCases.of(outcomes), "d", full=False)
    assert text.splitlines()[0] == "snapshot missing: 1 file does not exist yet"
    assert "summary.txt does not exist yet" in text


# --- as a user runs it ------------------------------------------------------------

MODEL = """
import pytest, torch

class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.lin = torch.nn.Linear(8, 8)

    def forward(self, x):
        return torch.{op}(self.lin(x)){extra}

@pytest.mark.compile_snapshot(backend="inductor", artifacts={artifacts})
def test_m(compile_model):
    torch.manual_seed(0)
    with torch.no_grad():
        compile_model(M(), torch.randn(4, 8))
"""
ALL = (
    "summary",
    "dynamo_graph",
    "guards",
    "aot_inference",
    "post_grad_graph",
    "output_code",
    "runtime_wrapper",
    "transformed_code",
    "program",
)


def model(op: str = "relu", extra: str = "", artifacts: object = None) -> str:
    return MODEL.format(op=op, extra=extra, artifacts=artifacts)


def test_short_summary_says_what_moved_and_update_counts(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_m=model())
    done = pytester.runpytest("--update-snapshots")
    done.assert_outcomes(passed=1)
    assert done.outlines[-2].startswith(
        "torch.compile snapshots: 5 written, 0 updated, 0 deleted"  # the default artifacts
    ), done.outlines[-3:]
    pytester.makepyfile(test_m=model(extra=" * 2 + 1"))
    failed = pytester.runpytest("-rf")
    failed.assert_outcomes(failed=1)
    failed.stdout.fnmatch_lines(
        [
            "ops: +add +mul; kernels fused differently: cpp_fused_relu_0 -> cpp_fused_add_mul_relu_0; op count 2 -> 4",
            "verdict: behaviour changed: op count 2 -> 4, ops, fusion",
        ]
    )
    failed.stdout.fnmatch_lines(["FAILED test_m.py::test_m - Failed: ops: +add +mul; *"])
    failed.stdout.fnmatch_lines(
        [
            "changed artifacts in snapshots/test_m/test_m:",
            "  summary.txt *",
            "snapshot snapshots/test_m/test_m/summary.txt differs:",
        ]
    )
    failed.stdout.fnmatch_lines(
        [
            "earliest pipeline stage that changed: dynamo_graph",
            "snapshot snapshots/test_m/test_m/dynamo_graph.fx.txt differs:",
            "+*mul*",
        ]
    )
    failed.stdout.fnmatch_lines(
        [
            "also changed: *wrapper_code.code.txt*; their diffs: pytest --torchcompile-full-diff (or -vv)"
        ]
    )
    pytester.makepyfile(test_m=model(op="sigmoid"))
    updated = pytester.runpytest("--update-snapshots")
    counts = re.search(
        r"torch.compile snapshots: (\d+) written, (\d+) updated, (\d+) deleted",
        updated.stdout.str(),
    )
    assert (
        counts and counts.group(1) == "0" and int(counts.group(2)) >= 3 and counts.group(3) == "0"
    ), updated.stdout.str()[-800:]


def test_a_planted_change_in_each_artifact_fails_with_a_diff_naming_it(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_m=model(artifacts=ALL))
    pytester.runpytest("--update-snapshots").assert_outcomes(passed=1)
    folder = pytester.path / "snapshots/test_m/test_m"
    files = sorted(folder.iterdir())
    assert [f.name.split(".")[0] for f in files] == sorted(ALL)
    for path in files:
        lines = path.read_text().splitlines()
        lines.insert(len(lines) // 2, f"planted line in {path.name}")
        path.write_text("\n".join(lines) + "\n")
    for flag in ("--torchcompile-full-diff", "-vv"):
        result = pytester.runpytest(flag)
        result.assert_outcomes(failed=1)
        out = result.stdout.str()
        for path in files:
            assert re.search(rf"^  {re.escape(path.name)} +\+0 +-1\b", out, re.MULTILINE), path.name
            assert (
                f"snapshot snapshots/test_m/test_m/{path.name} differs:" in out
                and f"-planted line in {path.name}" in out
            ), path.name
    removed = pytester.runpytest()
    listed = re.search(r"^also changed: (.*); their diffs", removed.stdout.str(), re.MULTILINE)
    shown = re.search(
        r"^earliest pipeline stage that changed: (\w+)$", removed.stdout.str(), re.MULTILINE
    )
    assert listed and shown and shown.group(1) == "dynamo_graph"
    assert sorted(n.split(".")[0] for n in listed.group(1).split(", ")) == sorted(
        set(ALL) - {"summary", "dynamo_graph"}
    )


# --- the first line of each planted regression names what moved ---------------------


@pytest.mark.parametrize(
    "case, plant, first_line",
    [
        (
            "test_mlp_training",
            "plant_graph_break",
            "graphs 1 -> 2; graph breaks 0 -> 1; graph break added: Data-dependent branching at fixtures/zoo.py:<N>",
        ),
        (
            "test_nested_outputs",
            "plant_lost_fusion",
            "kernels 2 -> 3; kernels fused differently: cpp_fused_mean_silu_0 -> cpp_fused_silu_0; kernels added: cpp_fused_mean_1",
        ),
        ("test_buffer_mutation", "plant_new_guard", "guards added: EQUALS_MATCH on G['SCALE']"),
        ("test_convbn_inference_no_grad", "plant_op_swap", "ops: relu -> gelu"),
        (
            "test_custom_autograd_function",
            "plant_renumbering",
            "text only: stored form, FX renumbering",
        ),
    ],
    ids=["graph-break", "lost-fusion", "new-guard", "op-swap", "renumbering"],
)
def test_first_line_names_what_moved(case: str, plant: str, first_line: str) -> None:
    from tests.snapshot.compare import test_upgrade_report as sets

    old = sets.zoo(case)
    new = getattr(sets, plant)(old)
    outcomes = [
        changed(f"{name}.{ARTIFACT_EXTENSIONS[name]}", old[name], new[name])
        if old[name] != new[name]
        else Outcome(TEST_DIR, "matched", "", old[name], new[name], artifact=name)
        for name in sorted(old)
    ]
    assert (
        compose(ChangedCases.of(outcomes), "d", full=False).splitlines()[0].startswith(first_line)
    )


# --- the headline ranks what a reviewer decides on, in about 200 characters ----------

DECODER = """\
# ===== frame 0 compile 0: forward =====
class GraphModule(torch.nn.Module):
    def forward(self, L_x_: "f32[2, 8, 32][256, 32, 1]cpu", {params}):
        linear: "f32[2, 8, {h}][{s}, {h}, 1]cpu" = torch._C._nn.linear(L_x_, L_self_modules_layers_modules_0_modules_1_modules_to_q_parameters_weight_)
        linear_1: "f32[2, 8, {h}][{s}, {h}, 1]cpu" = torch._C._nn.linear(L_x_, L_self_modules_layers_modules_2_modules_1_modules_to_q_parameters_weight_)
        add: "f32[2, 8, {h}][{s}, {h}, 1]cpu" = linear + linear_1
        return (add,)
"""


def decoder(heads: int) -> str:
    h = 64 * heads
    params = ", ".join(
        f'L_self_modules_layers_modules_{i}_modules_1_modules_to_q_parameters_weight_: "f32[{h}, 32][32, 1]cpu"'
        for i in (0, 2)
    )
    return DECODER.format(params=params, h=h, s=8 * h)


def test_changed_parameter_shapes_are_said_by_name_folded_over_layers() -> None:
    outcomes = [changed("dynamo_graph.fx.txt", decoder(2), decoder(4))]
    first = compose(ChangedCases.of(outcomes), "d", full=False).splitlines()[0]
    assert first.startswith("shapes: layers.*.*.to_q.weight [128, 32] -> [256, 32] (x2)")


def test_a_headline_stays_short_and_the_rest_is_one_v_away() -> None:
    kernel = "cpp_fused__log_softmax__to_copy_add_embedding_mean_mul_pow_rsqrt_{}"
    wrapper = "{k} = async_compile.cpp_pybinding(['float*'], '''\n{body}\n''')\n\ndef call(args):\n    {k}(buf0)\n"
    outcomes = [
        changed(
            "summary.txt", SUMMARY.format(kernels=21, ops=59), SUMMARY.format(kernels=18, ops=60)
        ),
        changed("dynamo_graph.fx.txt", decoder(2), decoder(4)),
        changed(
            "output_code.code.txt",
            wrapper.format(k=kernel.format(0), body="a"),
            wrapper.format(k=kernel.format(0).replace("add", "sub"), body="b"),
        ),
    ]
    short = compose(ChangedCases.of(outcomes), "d", full=False)
    first = short.splitlines()[0]
    assert len(first) <= 200 and first.startswith("kernels 21 -> 18; shapes: ")
    assert first.endswith(" more, -v)")
    full = compose(ChangedCases.of(outcomes), "d", full=True)
    assert "  behaviour: op count: 59 -> 60" in full.splitlines()
    assert kernel.format(0) in full  # whole in the verdict's findings
    # -v: every finding, without the diffs -vv adds
    listed = compose(ChangedCases.of(outcomes), "d", full=False, findings=True)
    assert "  behaviour: op count: 59 -> 60" in listed.splitlines()
    assert kernel.format(0) in listed
    assert len(listed.splitlines()) < len(full.splitlines())


def test_the_html_first_screen_leads_with_the_headline_and_breaks_long_lines() -> None:
    from pytest_torchcompile.snapshot.compare.html import failure_fragment

    outcomes = [
        changed(
            "summary.txt", SUMMARY.format(kernels=21, ops=59), SUMMARY.format(kernels=18, ops=59)
        ),
        changed("dynamo_graph.fx.txt", decoder(2) * 8, decoder(4) * 8),
    ]
    page = failure_fragment(ChangedCases.of(outcomes))
    headline, counters = page.index('class="headline"'), page.index('class="counters"')
    shapes = page.index("dynamo_graph arguments: layers.*.*.to_q.weight [128, 32] -&gt; [256, 32]")
    assert headline < counters < shapes < page.index('class="diff"')
    assert "<td>kernels</td><td>21</td><td>18</td>" in page


def test_a_changed_argument_of_a_long_signature_is_a_few_rows() -> None:
    import difflib

    from pytest_torchcompile.snapshot.compare.html import side_by_side

    def signature(changed_layer: int) -> str:
        return (
            "    def forward(self, "
            + ", ".join(
                f'L_self_modules_layers_modules_{i}_parameters_weight_: "f32[{256 if i == changed_layer else 128}, 32][32, 1]cpu"'
                for i in range(96)
            )
            + "):\n"
        )

    old, new = signature(-1), signature(90)
    wrapped = difflib.HtmlDiff(wrapcolumn=80).make_table(
        old.splitlines(), new.splitlines(), context=True
    )
    assert side_by_side(old, new, "a", "b").count("<tr>") * 4 < wrapped.count("<tr>")
