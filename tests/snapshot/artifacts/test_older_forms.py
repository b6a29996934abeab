"""Files an earlier version stored folded are read written out, bounded and checked.

`tests/data/older_forms/` holds two cases as that version stored them (a
transformer block and an x-transformers decoder, torch 2.13): each fold line
stands for the lines of its layer, counted from the section's header.
"""

from __future__ import annotations

import time

import pytest

from pytest_torchcompile.snapshot.artifacts.older_forms import (
    MARKER,
    DamagedText,
    written_out,
)
from pytest_torchcompile.snapshot.compare.behaviour import BEHAVIOUR, TEXT, compare_case
from pytest_torchcompile.snapshot.compare.text_only import passes
from pytest_torchcompile.snapshot.compare.upgrade import read_case
from tests.conftest import DATA

pytestmark = pytest.mark.torch_independent

FOLDED = DATA / "older_forms"
CASES = sorted(p.name for p in FOLDED.iterdir() if p.is_dir())


@pytest.mark.parametrize("case", CASES)
def test_a_folded_case_reads_as_its_own_text_written_out(case: str) -> None:
    """Each fold line counts from its section's header: read from the header on, each copy is
    the layer it names, and the case compares with itself written out as text only."""
    folded = read_case(FOLDED / case)
    assert any(MARKER in text or "  [* = " in text for text in folded.values())
    plain = {name: written_out(text) for name, text in folded.items()}
    assert not any(MARKER in text or "  [* = " in text for text in plain.values())
    diff = compare_case(folded, plain)
    assert diff.verdict == TEXT and passes(diff), [f.render() for f in diff.findings]
    assert diff.line() == "text only: stored form"


def test_a_change_in_the_last_layer_reads_as_that_change() -> None:
    """Reading a fold one line off blamed a constant of the last layer on new ops."""
    folded = read_case(FOLDED / "x_transformers_lm_folded")
    plain = {name: written_out(text) for name, text in folded.items()}
    graph = plain["aot_inference"]
    last = graph.rindex("torch.ops.aten.mul.Tensor(")
    end = graph.index("\n", last)
    line = graph[last:end]
    assert ", " in line
    changed = graph[:last] + line.rsplit(", ", 1)[0] + ", 3.25)" + graph[end:]
    diff = compare_case(folded, {**plain, "aot_inference": changed})
    assert diff.verdict == BEHAVIOUR
    assert all(f.topic != "ops" for f in diff.findings if f.behaviour), diff.line()


def _section(body: list[str]) -> str:
    return "# ===== frame 0 compile 0: forward =====\n" + "\n".join(body) + "\n"


LAYER = [
    f'        mul_{k}: "f32[4][1]cpu" = torch.ops.aten.mul.Tensor(arg0_1, {k})' for k in range(8)
]


@pytest.mark.parametrize(
    ("fold", "said"),
    [
        (
            "        # again: lines 2-9, names _R1, with a for b for c",
            "names an input in no form written",
        ),
        ("        # again: lines 2-" + "9" * 5000 + ", names _R1", "in no form written"),
        ("        # again: lines 12-40, names _R1", "which are not lines before it"),
        ("        # again: lines 0-3, names _R1", "which are not lines before it"),
        ("        # again: lines 9-2, names _R1", "which are not lines before it"),
    ],
)
def test_a_damaged_fold_is_reported_as_a_damaged_file(fold: str, said: str) -> None:
    text = _section([*LAYER, fold])
    with pytest.raises(DamagedText, match=said):
        written_out(text)
    diff = compare_case({"aot_inference": text}, {"aot_inference": _section(LAYER)})
    assert diff.verdict == BEHAVIOUR
    assert diff.headline().startswith("damaged file: aot_inference"), diff.headline()
    assert "--update-snapshots" in diff.findings[0].message


def test_a_fold_that_repeats_a_fold_is_damaged() -> None:
    text = _section(
        [*LAYER, "        # again: lines 2-9, names _R1", "        # again: lines 2-10, names _R2"]
    )
    with pytest.raises(DamagedText, match="hold a fold"):
        written_out(text)


def test_folds_that_would_write_out_too_much_stop_early() -> None:
    """A few hundred KB of folds once wrote out gigabytes; the budget stops it at 32 MB."""
    wide = [
        f'        v_{k}: "f32[4][1]cpu" = torch.ops.aten.mul.Tensor(arg0_1, {"7" * 200})'
        for k in range(2000)
    ]
    folds = ["        # again: lines 2-2001, names _R1"] * 3000
    text = _section([*wide, *folds])
    started = time.perf_counter()
    with pytest.raises(DamagedText, match="would exceed 32 MB"):
        written_out(text)
    assert time.perf_counter() - started < 10
