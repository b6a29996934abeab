"""Text only, proved: a corpus of one-line changes of model code, each compiled for real.

A difference passes as `text only` by default, so a real change read as text
is a regression that passes silently. Every mutation here changes what the
compiled program computes or when it is reused (an argument swapped for
another of the same shape, a layer for another, a constant, an offset, a
stride, a view's shape, keepdim, a reduction's dim, an op for a same-shape
op, one layer's epsilon, a guarded attribute): each must read as
`behaviour changed`. Its twin corpus renames and reorders without changing
what is computed: each must stay text only (or unchanged) and pass.

The harness writes the changed model source to a module of its own and
captures it through the plugin's own case (`CompileCase`), as the fixture
does, on eager, aot_eager and Inductor; the original of each model is
captured once per backend.
"""

from __future__ import annotations

import importlib.util
import linecache
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import torch

from pytest_torchcompile.snapshot.artifacts.normalize import Normalizer
from pytest_torchcompile.snapshot.case import CompileCase
from pytest_torchcompile.snapshot.compare.behaviour import BEHAVIOUR, compare_case
from pytest_torchcompile.snapshot.compare.findings import CaseDiff
from pytest_torchcompile.snapshot.compare.text_only import passes
from pytest_torchcompile.snapshot.spec import CompileSpec

from . import mutation_models

ROOT = Path(__file__).resolve().parents[3]
SOURCE = Path(mutation_models.__file__).read_text()
CHEAP = ("eager", "aot_eager")
ALL = ("eager", "aot_eager", "inductor")


@dataclass(frozen=True)
class Mutation:
    """One snippet of mutation_models.py replaced; `build` names the builder to call."""

    name: str
    build: str
    old: str
    new: str
    backends: tuple[str, ...] = CHEAP
    also: tuple[tuple[str, str], ...] = ()  # more snippets replaced: one change made in two places

    def source(self) -> str:
        text = SOURCE
        for old, new in ((self.old, self.new), *self.also):
            assert text.count(old) == 1, f"{self.name}: {old!r} must occur once"
            text = text.replace(old, new)
        return text


M = Mutation
MUTATIONS = (
    # arguments of the same shape swapped, or another one read
    M("sub swapped", "build_two_inputs", "torch.relu(x - y)", "torch.relu(y - x)", ALL),
    M("mm swapped", "build_two_inputs", "torch.mm(z, y)", "torch.mm(y, z)", ALL),
    M("another input read", "build_two_inputs", "torch.mm(z, y)", "torch.mm(z, x)"),
    M("sub for add", "build_two_inputs", "torch.relu(x - y)", "torch.relu(x + y)"),
    M("keepdim dropped", "build_two_inputs", "w.sum(0, keepdim=True)", "w.sum(0)", ALL),
    M("reduction dim", "build_two_inputs", "w.sum(0, keepdim=True)", "w.sum(1, keepdim=True)"),
    M("constant", "build_two_inputs", "* 1.5", "* 1.25", ALL),
    M("relu for sigmoid", "build_two_inputs", "torch.relu(x - y)", "torch.sigmoid(x - y)"),
    # offsets, strides, shapes
    M("slice offset", "build_slices", "x[:, 0:4]", "x[:, 4:8]", ALL),
    M(
        "strided slices swapped",
        "build_slices",
        "x[:, ::2] - x[:, 1::2]",
        "x[:, 1::2] - x[:, ::2]",
        ALL,
    ),
    M("narrow offset", "build_slices", "x.narrow(1, 0, 4)", "x.narrow(1, 4, 4)", ALL),
    M("view shape", "build_slices", ".view(2, 8)", ".view(8, 2)", ALL),
    M("stride of a slice", "build_slices", "x[:, ::2] - x[:, 1::2]", "x[:, :4] - x[:, 1::2]"),
    # reductions and elementwise
    M("amax dim", "build_reductions", "x.amax(dim=0)", "x.amax(dim=1)"),
    M("cumsum dim", "build_reductions", "torch.cumsum(x, 0)", "torch.cumsum(x, 1)"),
    M("flip dims", "build_reductions", "torch.flip(x, [0])", "torch.flip(x, [1])"),
    M("roll shift", "build_reductions", "torch.roll(x, 1, 0)", "torch.roll(x, 2, 0)"),
    M("softmax dim", "build_reductions", "F.softmax(x, dim=-1)", "F.softmax(x, dim=0)", ALL),
    M("clamp min", "build_reductions", ".clamp(min=0.0)", ".clamp(min=0.1)"),
    M("pow exponent", "build_reductions", ".pow(2)", ".pow(3)"),
    M("sum dim", "build_reductions", ".pow(2).sum(1)", ".pow(2).sum(0)"),
    # combining tensors
    M("cat order", "build_combine", "torch.cat([x, y], 0)", "torch.cat([y, x], 0)"),
    M("stacked item", "build_combine", "s[0] * s[1]", "s[0] * s[0]"),
    M("where swapped", "build_combine", "torch.where(x > 0, x, y)", "torch.where(x > 0, y, x)"),
    M(
        "masked_fill value",
        "build_combine",
        "masked_fill(y > 0.5, 0.0)",
        "masked_fill(y > 0.5, -1.0)",
    ),
    M("chunk index", "build_combine", "x.chunk(2, dim=1)[0]", "x.chunk(2, dim=1)[1]"),
    M("comparison threshold", "build_combine", "y > 0.5", "y > 0.25"),
    # matmuls
    M("addmm alpha", "build_matmuls", "alpha=2.0", "alpha=3.0", ALL),
    M("addmm beta", "build_matmuls", "alpha=2.0", "alpha=2.0, beta=0.5"),
    M("transposed weight", "build_matmuls", "g = x @ w.t()", "g = x @ w", ALL),
    M("output transpose", "build_matmuls", "g.transpose(0, 1)", "g"),
    M("gelu approximate", "build_matmuls", "F.gelu(h)", 'F.gelu(h, approximate="tanh")'),
    # layers
    M("layers swapped", "build_two_layers", "self.fc2(h) + x", "self.fc1(h) + x", ALL),
    M(
        "layers swapped (eval)",
        "build_two_layers_eval",
        "torch.relu(self.fc1(x))",
        "torch.relu(self.fc2(x))",
        ALL,
    ),
    M("residual", "build_two_layers", "self.fc2(h) + x", "self.fc2(h) + h"),
    M("activation", "build_two_layers", "torch.relu(self.fc1(x))", "torch.tanh(self.fc1(x))"),
    # attention
    M(
        "q and k swapped",
        "build_attention",
        "q @ k.transpose(-2, -1)",
        "k @ q.transpose(-2, -1)",
        ALL,
    ),
    M("attention scale", "build_attention", "* 0.5", "* 0.25"),
    M(
        "attention softmax dim",
        "build_attention",
        "scores.softmax(dim=-1)",
        "scores.softmax(dim=-2)",
    ),
    M("causal", "build_attention", "is_causal=True", "is_causal=False"),
    M("v for q", "build_attention", "attn @ v", "attn @ q"),
    # one layer of several, module state, guarded values
    M(
        "one layer's epsilon",
        "build_norms",
        "self.layers[1][0].eps = 1e-5",
        "self.layers[1][0].eps = 1e-3",
        ALL,
    ),
    M("guarded string", "build_configured", 'self.mode = "fast # v1"', 'self.mode = "fast # v2"'),
    M("guarded int", "build_configured", "self.scale = 2", "self.scale = 3"),
    M("buffer momentum", "build_configured", "mul_(0.9)", "mul_(0.8)", ALL),
    M("branch taken", "build_configured", 'self.mode = "fast # v1"', 'self.mode = "slow # v1"'),
)

TWINS = (
    M(
        "argument renamed",
        "build_renamed",
        "def forward(self, x, y):\n        hidden = self.proj(x)",
        "def forward(self, inp, y):\n        hidden = self.proj(inp)",
        ALL,
    ),
    M(
        "function arguments renamed",
        "build_two_inputs",
        "def two_inputs(x, y):\n    z = torch.relu(x - y)\n    w = torch.mm(z, y)",
        "def two_inputs(a, b):\n    z = torch.relu(a - b)\n    w = torch.mm(z, b)",
        ALL,
    ),
    M(
        "arguments renamed crosswise",
        "build_two_inputs",
        "def two_inputs(x, y):\n    z = torch.relu(x - y)\n    w = torch.mm(z, y)",
        "def two_inputs(y, x):\n    z = torch.relu(y - x)\n    w = torch.mm(z, x)",
    ),
    M(
        "local renamed",
        "build_renamed",
        "hidden = self.proj(x)\n        gated = torch.sigmoid(self.gate(y))\n        return helper(hidden, gated)",
        "h = self.proj(x)\n        gated = torch.sigmoid(self.gate(y))\n        return helper(h, gated)",
        ALL,
    ),
    M(
        "statements reordered",
        "build_renamed",
        "hidden = self.proj(x)\n        gated = torch.sigmoid(self.gate(y))",
        "gated = torch.sigmoid(self.gate(y))\n        hidden = self.proj(x)",
        ALL,
    ),
    M(
        "helper renamed",
        "build_renamed",
        "return helper(hidden, gated)",
        "return combined(hidden, gated)",
        ALL,
        (("def helper(a, b):", "def combined(a, b):"),),
    ),
    M(
        "keywords reordered",
        "build_renamed",
        "weight=None, bias=None, eps=1e-5",
        "eps=1e-5, bias=None, weight=None",
        ALL,
    ),
    M(
        "comment and blank line",
        "build_slices",
        "    a = x[:, 0:4]\n",
        "    # the first half\n\n    a = x[:, 0:4]\n",
        ALL,
    ),
)


NORMALIZER = Normalizer.for_paths(str(ROOT), str(Path(torch.__file__).parent))
_ORIGINALS: dict[tuple[str, str], dict[str, str]] = {}


def _capture(folder: Path, source: str, build: str, backend: str) -> dict[str, str]:
    """The artifacts of `build()` from `source`, imported as a module at `folder`/mutated_model.py."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "mutated_model.py"
    path.write_text(source)
    linecache.checkcache(str(path))
    spec = importlib.util.spec_from_file_location("mutated_model", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["mutated_model"] = module
    try:
        spec.loader.exec_module(module)
        model, args = getattr(module, build)()
        case = CompileCase(CompileSpec(backend=backend, numerics=False), "case", model, NORMALIZER)
        try:
            result: Any = case.start(args, {})
        finally:
            case.close()
        return dict(result.artifacts)
    finally:
        del sys.modules["mutated_model"]


def _compared(
    mutation: Mutation, backend: str, tmp_path_factory: pytest.TempPathFactory
) -> CaseDiff:
    folder = tmp_path_factory.getbasetemp() / "mutations"  # one path: the `# File:` lines agree
    key = (mutation.build, backend)
    if key not in _ORIGINALS:
        _ORIGINALS[key] = _capture(folder, SOURCE, mutation.build, backend)
    changed = _capture(folder, mutation.source(), mutation.build, backend)
    return compare_case(_ORIGINALS[key], changed)


def _said(diff: CaseDiff) -> str:
    return f"{diff.line()}\n" + "\n".join(f"  {f.render()}" for f in diff.findings)


@pytest.mark.parametrize("mutation", MUTATIONS, ids=[m.name for m in MUTATIONS])
def test_a_real_change_is_behaviour(
    mutation: Mutation, tmp_path_factory: pytest.TempPathFactory
) -> None:
    for backend in mutation.backends:
        diff = _compared(mutation, backend, tmp_path_factory)
        assert diff.verdict == BEHAVIOUR, f"{mutation.name} on {backend}: {_said(diff)}"


@pytest.mark.parametrize("twin", TWINS, ids=[m.name for m in TWINS])
def test_a_renaming_or_reordering_stays_text_only(
    twin: Mutation, tmp_path_factory: pytest.TempPathFactory
) -> None:
    for backend in twin.backends:
        diff = _compared(twin, backend, tmp_path_factory)
        assert diff.verdict != BEHAVIOUR and passes(diff) or not diff.findings, (
            f"{twin.name} on {backend}: {_said(diff)}"
        )


def test_the_corpus_is_as_large_as_promised() -> None:
    assert len(MUTATIONS) >= 40 and len(TWINS) >= 8
    assert {b for m in MUTATIONS for b in m.backends} == set(ALL)
