"""A model's repeated layers are stored once, and read whole.

`fold_repeats` (repeats.py) writes each later copy of a layer's code as one
`# again:` line; the readers write it out again. The text is a 2-layer
x-transformers decoder's (tests/data/x_transformers_2.13), as the plugin stored
it before folding: read through today's rules, it folds; every planted change,
one layer's included, still reads as behaviour.
"""

from __future__ import annotations

import difflib
import re

import pytest

from pytest_torchcompile.snapshot.artifacts.catalogue import ARTIFACTS
from pytest_torchcompile.snapshot.artifacts.compact import renumber_fx_names
from pytest_torchcompile.snapshot.artifacts.repeats import MARKER, fold_repeats, unfold_repeats
from pytest_torchcompile.snapshot.compare.behaviour import BEHAVIOUR, TEXT, compare_case
from pytest_torchcompile.snapshot.compare.readers import parse_graph, parse_output_code
from tests.conftest import DATA

DECODER = DATA / "x_transformers_2.13"
#: artifact -> its file and the set it is in
FILES = {
    "aot_inference": "aot_inference.fx.txt",
    "aot_backward": "aot_backward.fx.txt",
    "wrapper_code": "wrapper_code.code.txt",
}


def before(artifact: str, config: str = "base") -> str:
    """The artifact as the plugin stored it before folding."""
    return (DECODER / config / FILES[artifact]).read_text()


def stored(artifact: str, text: str) -> str:
    """`text` through the artifact's rules today (they are idempotent: a stored text reads as raw)."""
    for rule in ARTIFACTS[artifact].rules:
        text = rule(text)
    return text


def changed(old: str, new: str) -> int:
    diff = difflib.unified_diff(old.splitlines(), new.splitlines(), lineterm="", n=0)
    return sum(1 for line in list(diff)[2:] if line[:1] in "+-")


def parse(artifact: str, text: str) -> object:
    return (parse_output_code if artifact == "wrapper_code" else parse_graph)(text)


@pytest.mark.parametrize("artifact", FILES)
def test_a_layers_copy_is_written_once_and_read_whole(artifact: str) -> None:
    old = before(artifact)
    new = stored(artifact, old)
    assert MARKER in new and len(new.splitlines()) < 0.9 * len(old.splitlines())
    assert parse(artifact, new) == parse(artifact, old)  # the same ops, dataflow, kernels and calls
    assert stored(artifact, new) == new
    diff = compare_case({artifact: old}, {artifact: new})
    assert diff.verdict == TEXT, diff.findings


def test_the_fold_line_names_what_it_repeats() -> None:
    folded = stored("aot_inference", before("aot_inference"))
    fold = next(line for line in folded.splitlines() if MARKER in line)
    assert re.fullmatch(
        r"        # again: lines \d+-\d+, names _R1, with \w+ for \w+(, \w+ for \w+)*", fold
    ), fold
    first, last = map(int, re.findall(r"lines (\d+)-(\d+)", fold)[0])
    assert last - first + 1 >= 8  # a layer, not a view and its mm


#: one layer's own change in each artifact: the second attention's LayerNorm epsilon (graph),
#: the second attention's first batched matmul (wrapper)
ONE_LAYER = {
    "aot_inference": ("add.Tensor(getitem_4, 1e-05)", "add.Tensor(getitem_4, 1e-06)"),
    "aot_backward": ("mul.Tensor(where_11, 0.125)", "mul.Tensor(where_11, 0.25)"),
    "wrapper_code": (
        "extern_kernels.bmm(reinterpret_tensor(buf32,",
        "extern_kernels.baddbmm(reinterpret_tensor(buf32,",
    ),
}


@pytest.mark.parametrize("artifact", ONE_LAYER)
def test_a_change_in_one_layer_only_is_behaviour(artifact: str) -> None:
    old, (was, now) = before(artifact), ONE_LAYER[artifact]
    assert old.count(was) == 1
    new = old.replace(was, now)
    assert (
        compare_case({artifact: stored(artifact, old)}, {artifact: stored(artifact, new)}).verdict
        == BEHAVIOUR
    )
    assert parse(artifact, stored(artifact, new)) == parse(artifact, new)


def test_a_change_to_every_layer_is_written_once() -> None:
    """The same change in both layers: the fold still holds, the diff is half the old form's."""
    old = before("aot_inference")
    new = old.replace("1e-05)", "1e-06)")
    assert new.count("1e-06") == 5  # four layers' norms and the final one
    written = changed(stored("aot_inference", old), stored("aot_inference", new))
    unfolded = changed(renumber_fx_names(old), renumber_fx_names(new))
    assert written <= unfolded / 2 + 2, (written, unfolded)
    assert (
        compare_case(
            {"aot_inference": stored("aot_inference", old)},
            {"aot_inference": stored("aot_inference", new)},
        ).verdict
        == BEHAVIOUR
    )


def test_more_heads_keep_the_layers_folded() -> None:
    old, new = (
        stored("aot_inference", before("aot_inference", config)) for config in ("base", "heads")
    )
    markers = [line for line in old.splitlines() if MARKER in line]
    assert markers == [line for line in new.splitlines() if MARKER in line]
    assert (
        changed(old, new)
        <= changed(
            renumber_fx_names(before("aot_inference")),
            renumber_fx_names(before("aot_inference", "heads")),
        )
        * 0.6
    )


def test_a_name_a_copy_would_take_leaves_it_written_out() -> None:
    """A fold renames a copy's names `<first's name>_R1`; if one is taken, the copy stays."""
    old = stored("aot_inference", before("aot_inference"))
    raw = unfold_repeats(old)
    first_defined = re.search(r"^        (\w+)(?::| =)", raw.split("):\n", 1)[1], re.MULTILINE)
    assert first_defined is not None
    taken = raw.replace("return (", f"return ({first_defined[1]}_R1, ", 1)
    assert parse_graph(fold_repeats(taken)) == parse_graph(taken)
