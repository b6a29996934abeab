"""What the plugin itself writes into a stored file fits in 200 characters and is explained there.

Torch's own text keeps its lines (an Inductor comment listing 40 source nodes is what torch
printed); the plugin's lines are each file's legend and its section headers, and a header
names a frame's arguments: a library's `forward` has 36 of them, 646 characters in full.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_torchcompile.snapshot.artifacts.legend import CUT_HEADER, LEGENDS, PREFIX, legend
from pytest_torchcompile.snapshot.artifacts.sections import SECTION_HEADER

REPO = Path(__file__).resolve().parents[3]
LONGEST = 200


@pytest.mark.parametrize("cut", [False, True])
def test_every_legend_fits(cut: bool) -> None:
    lines = [legend(artifact, cut) for artifact in LEGENDS]
    assert all(line and line.startswith(PREFIX) and len(line) <= LONGEST for line in lines), lines


def test_the_committed_sets_plugin_lines_fit_and_a_cut_list_is_explained() -> None:
    files = sorted((REPO / "snapshots").rglob("*.txt"))
    assert len(files) > 500
    too_long, unexplained, cut = [], [], 0
    for path in files:
        text = path.read_text()
        ours = [
            line
            for line in text.splitlines()
            if line.startswith(PREFIX) or SECTION_HEADER.match(line)
        ]
        too_long += [f"{path}: {line[:80]}" for line in ours if len(line) > LONGEST]
        if CUT_HEADER.search(text):
            cut += 1
            if "+N more" not in text.partition("\n")[0]:
                unexplained.append(str(path))
    assert too_long == [] and unexplained == []
    assert cut > 0  # the library suites' frames of 20-36 arguments are among them
