"""Behaviour fails, text is reported: a text-only difference passes, says so, and is accepted alone.

Unit tests on the split (no torch), then the plugin as a user drives it: a
stored graph renumbered by hand is the text-only difference a torch upgrade
brings; an op swapped beside it is the behaviour change that must still
fail, whatever the flags.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pytest_torchcompile.common.capture_log import FrameKey
from pytest_torchcompile.snapshot.artifacts.sections import MAX_HEADER, frame_header
from pytest_torchcompile.snapshot.compare.arguments import arguments, renamed_sides
from pytest_torchcompile.snapshot.compare.changes import ChangedCases
from pytest_torchcompile.snapshot.compare.text_only import split
from pytest_torchcompile.snapshot.files.store import Outcome

GRAPH = """\
class GraphModule(torch.nn.Module):
    def forward(self, arg0_1: "f32[4][1]cpu"):
        {name}: "f32[4][1]cpu" = torch.ops.aten.{op}.default(arg0_1);  arg0_1 = None
        return ({name},)
"""


def changed(name: str, old: str, new: str, case: str = "") -> Outcome:
    artifact = name.split(".", 1)[0]
    return Outcome(Path("/r") / case / name, "changed", "", old, new, case=case, artifact=artifact)


def test_renumbering_passes_an_op_swap_does_not() -> None:
    renumbered = changed(
        "aot_inference.fx.txt",
        GRAPH.format(name="relu_3", op="relu"),
        GRAPH.format(name="relu_7", op="relu"),
        case="a",
    )
    swapped = changed(
        "aot_inference.fx.txt",
        GRAPH.format(name="relu", op="relu"),
        GRAPH.format(name="relu", op="gelu"),
        case="b",
    )
    passing, rest = split(ChangedCases.of([renumbered, swapped]))
    assert [p.case for p in passing] == ["a"] and passing[0].reason.startswith("text only: ")
    assert list(rest.outcomes) == [swapped]


def test_an_artifact_the_verdict_cannot_read_keeps_its_case_failing() -> None:
    """`transformed_code` has no reading: its change is text to the verdict, but nobody read it."""
    outcomes = [changed("transformed_code.py.txt", "x = f(a)\n", "x = g(a)\n")]
    passing, rest = split(ChangedCases.of(outcomes))
    assert passing == [] and list(rest.outcomes) == outcomes


def test_a_summary_cut_short_keeps_its_case_failing() -> None:
    """The counters it no longer states were not compared: nothing says they stayed."""
    summary = "backend: inductor\ngraphs: 1\ngraph breaks: 0\nrecompiles: 0\nkernels: 2\n"
    outcomes = [changed("summary.txt", summary, summary.split("recompiles")[0])]
    passing, rest = split(ChangedCases.of(outcomes))
    assert passing == [] and list(rest.outcomes) == outcomes


def test_a_missing_file_fails_its_case_whole() -> None:
    renumbered = changed(
        "aot_inference.fx.txt",
        GRAPH.format(name="relu_3", op="relu"),
        GRAPH.format(name="relu_7", op="relu"),
    )
    missing = Outcome(Path("/r/summary.txt"), "missing", "does not exist yet", artifact="summary")
    passing, rest = split(ChangedCases.of([renumbered, missing]))
    assert passing == [] and list(rest.outcomes) == [renumbered, missing]


MODEL = """
import pytest, torch

class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.lin = torch.nn.Linear(8, 8)

    def forward(self, x):
        return torch.{op}(self.lin(x))

@pytest.mark.compile_snapshot(backend="aot_eager")
def test_renumbered(compile_model):
    with torch.no_grad():
        compile_model(M(), torch.randn(4, 8))

@pytest.mark.compile_snapshot(backend="aot_eager")
def test_swapped(compile_model):
    with torch.no_grad():
        compile_model(M(), torch.randn(2, 8))
"""


def renumber(folder: Path) -> str:
    """The stored Dynamo graph with its FX names numbered otherwise: text a torch upgrade changes."""
    path = folder / "dynamo_graph.fx.txt"
    text = path.read_text()
    renamed = re.sub(r"\b(linear|relu)\b(?= *[:=,)])", r"\1_7", text)
    assert renamed != text
    path.write_text(renamed)
    return renamed


def test_text_only_passes_is_reported_and_accepted_alone(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_m=MODEL.format(op="relu"))
    pytester.runpytest("--update-snapshots").assert_outcomes(passed=2)
    root = pytester.path / "snapshots/test_m"
    stored = renumber(root / "test_renumbered")
    swapped_before = (root / "test_swapped/dynamo_graph.fx.txt").read_text()

    plain = pytester.runpytest("-v")
    plain.assert_outcomes(passed=2)
    plain.stdout.fnmatch_lines(
        [
            "test_m.py::test_renumbered PASSED (snapshot text only)*",
            "torch.compile snapshots: 1 case changed in text only and passed (the stored files are kept: "
            "--torchcompile-update-text-only writes them, --torchcompile-strict-text fails on them):",
            "  test_m.py::test_renumbered: text only: *",
        ]
    )
    assert (root / "test_renumbered/dynamo_graph.fx.txt").read_text() == stored
    workers = pytester.runpytest("-n", "2")  # the note travels from the worker to the summary
    workers.assert_outcomes(passed=2)
    workers.stdout.fnmatch_lines(["  test_m.py::test_renumbered: text only: *"])

    strict = pytester.runpytest("--torchcompile-strict-text")
    strict.assert_outcomes(passed=1, failed=1)
    strict.stdout.fnmatch_lines(["FAILED test_m.py::test_renumbered - Failed: text only: *"])
    ini = pytester.makeini("[pytest]\ntorchcompile_strict_text = true\n")
    pytester.runpytest().assert_outcomes(passed=1, failed=1)

    # one command accepts the text-only case and leaves the behaviour change failing, unwritten
    ini.unlink()
    pytester.makepyfile(
        test_m=MODEL.format(op="relu").replace(
            "compile_model(M(), torch.randn(2, 8))",
            "compile_model(torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.GELU()), torch.randn(2, 8))",
        )
    )
    accepted = pytester.runpytest("--torchcompile-update-text-only")
    accepted.assert_outcomes(passed=1, failed=1)
    accepted.stdout.fnmatch_lines(
        [
            "torch.compile snapshots: 1 case changed in text only and passed (their snapshots were rewritten):",
            "FAILED test_m.py::test_swapped - Failed: *",
        ]
    )
    assert (root / "test_renumbered/dynamo_graph.fx.txt").read_text() != stored
    assert (root / "test_swapped/dynamo_graph.fx.txt").read_text() == swapped_before
    again = pytester.runpytest("-k", "renumbered")
    again.assert_outcomes(passed=1)
    again.stdout.no_fnmatch_line("*text only*")


SWAP = """
import pytest, torch

def f({args}):
    return torch.tanh({body})

@pytest.mark.compile_snapshot(backend="aot_eager")
def test_f(compile_model):
    torch.manual_seed(0)
    compile_model(f, torch.randn(4, 4), torch.randn(4, 4))
"""


def test_arguments_swapped_fail_and_renamed_pass(pytester: pytest.Pytester) -> None:
    """`x - y` -> `y - x` changes no name, no op and no shape: it read as text only, and passed."""
    pytester.makepyfile(test_m=SWAP.format(args="x, y", body="x - y"))
    pytester.runpytest("--update-snapshots").assert_outcomes(passed=1)

    pytester.makepyfile(test_m=SWAP.format(args="x, y", body="y - x"))
    swapped = pytester.runpytest("--torchcompile-update-text-only")
    swapped.assert_outcomes(failed=1)
    swapped.stdout.fnmatch_lines(["*behaviour changed*", "*L_y_*L_x_*"])
    swapped.stdout.no_fnmatch_line("*text only*")

    pytester.makepyfile(test_m=SWAP.format(args="a, b", body="a - b"))
    renamed = pytester.runpytest("-v")
    renamed.assert_outcomes(passed=1)
    renamed.stdout.fnmatch_lines(
        [
            "test_m.py::test_f PASSED (snapshot text only)*",
            "*test_f: text only: *arguments renamed*",
        ]
    )


def test_a_long_argument_list_is_cut_and_pairs_only_the_arguments_it_names() -> None:
    """A frame of 40 arguments gets a header under 200 characters; a rename among the arguments
    it names is text, one among those it cut is never paired (it reads as another argument)."""
    names = [f"argument_number_{i}" for i in range(40)]

    def side(first: str, last: str) -> dict[str, str]:
        listed = ", ".join([first, *names[1:-1], last])
        header = frame_header(FrameKey(0, 0), f"forward(self, {listed})")
        assert len(header) <= MAX_HEADER and re.search(r", \.\.\., \+\d+ more\) =====$", header)
        check = (
            f"TENSOR_MATCH: check_tensor(L['{first}'])\nTENSOR_MATCH: check_tensor(L['{last}'])\n"
        )
        return {"guards": f"{header}\n{check}"}

    old = side(names[0], names[-1])
    renamed_first, said = renamed_sides(old, side("inp", names[-1]))
    assert said == [f"{names[0]} -> inp"] and "L['inp']" in renamed_first["guards"]
    renamed_last, said = renamed_sides(old, side(names[0], "other"))
    assert said == [] and f"L['{names[-1]}']" in renamed_last["guards"]
    positional, keyword = arguments(old["guards"].split("\n")[0]) or ([], [])
    assert 2 < len(positional) < 41 and keyword == []
    assert positional == ["self", *names[: len(positional) - 1]]
