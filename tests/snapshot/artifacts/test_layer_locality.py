"""A change in one layer touches only that layer's lines, in every stored artifact.

A 2- and a 4-layer model, each layer's LayerNorm epsilon changed in turn:
the lines each change rewrites in an artifact lie apart from those any other
layer's change rewrites, and there are as few of them as the change needs
(not the layer's whole code, not the lines of the layers after it). In
`wrapper_code` a change rewrites kernel digests only: a kernel Inductor fused
from two layers' code is a line of both, and `call` does not move.
"""

from __future__ import annotations

import difflib
from pathlib import Path

import pytest
import torch
from torch import nn

from pytest_torchcompile.snapshot.artifacts.compact import digest_lines
from pytest_torchcompile.snapshot.artifacts.normalize import Normalizer
from pytest_torchcompile.snapshot.case import CompileCase
from pytest_torchcompile.snapshot.spec import CompileSpec

ROOT = Path(__file__).resolve().parents[3]
NORMALIZER = Normalizer.for_paths(str(ROOT), str(Path(torch.__file__).parent))
#: the lines one epsilon may rewrite in one artifact (it appears once per graph that holds it)
MOST = 4


class Layers(nn.Module):
    def __init__(self, depth: int, changed: int | None) -> None:
        super().__init__()
        self.layers = nn.ModuleList(
            nn.Sequential(nn.LayerNorm(8), nn.Linear(8, 8), nn.GELU()) for _ in range(depth)
        )
        if changed is not None:
            self.layers[changed][0].eps = 1e-3

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self.layers:
            x = x + layer(x)
        return x


def _artifacts(depth: int, changed: int | None, backend: str) -> dict[str, str]:
    torch.manual_seed(0)
    model = Layers(depth, changed).eval()
    case = CompileCase(CompileSpec(backend=backend, numerics=False), "case", model, NORMALIZER)
    try:
        result = case.start((torch.randn(2, 8),), {})
    finally:
        case.close()
    assert result is not None
    return dict(result.artifacts)


def _rewritten(old: str, new: str) -> list[int]:
    """The line numbers of `old` that a change rewrites (a line added counts where it lands)."""
    matcher = difflib.SequenceMatcher(a=old.splitlines(), b=new.splitlines(), autojunk=False)
    lines: list[int] = []
    for tag, i1, i2, _, _ in matcher.get_opcodes():
        if tag != "equal":
            lines += list(range(i1, max(i2, i1 + 1)))
    return lines


@pytest.mark.parametrize(("depth", "backend"), [(2, "inductor"), (4, "aot_eager")])
def test_a_change_in_one_layer_stays_in_its_lines(depth: int, backend: str) -> None:
    base = _artifacts(depth, None, backend)
    changes = [_artifacts(depth, layer, backend) for layer in range(depth)]
    for name, text in base.items():
        rewritten = [_rewritten(text, change[name]) for change in changes]
        touched = [lines for lines in rewritten if lines]
        if not touched:
            continue  # the epsilon is no fact of this artifact (the summary's counters)
        assert len(touched) == depth, f"{name}: only {len(touched)} of {depth} layers' changes show"
        for layer, lines in enumerate(rewritten):
            assert len(lines) <= MOST, f"{name}: layer {layer}'s epsilon rewrote lines {lines}"
        if name == "wrapper_code":
            # Inductor fuses across layers (one layer's GELU with the next one's norm): a kernel
            # holds code of two layers, so its digest is a line of both; `call` stays as it was
            old = text.splitlines()
            assert all(digest_lines(old[k]) is not None for lines in rewritten for k in lines), name
            continue
        spans = sorted(
            (min(lines), max(lines)) for lines in rewritten
        )  # a backward runs last first
        assert all(a[1] < b[0] for a, b in zip(spans, spans[1:])), f"{name}: {spans} overlap"
