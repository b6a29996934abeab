"""Every reason a recompile gives is in the summary, one bullet each.

torch writes one reason as its text and several (each cached compile that
failed its guards) as a JSON list in one record: read whole, the summary said
only `[`.
"""

from __future__ import annotations

from pathlib import Path

import torch

from pytest_torchcompile._torch.formats import recompile_reasons
from pytest_torchcompile.snapshot.artifacts.normalize import Normalizer
from pytest_torchcompile.snapshot.case import CompileCase
from pytest_torchcompile.snapshot.spec import CompileSpec


def test_one_reason_and_a_list_of_them_read_as_reasons() -> None:
    assert recompile_reasons("tensor 'x' size mismatch\n") == ["tensor 'x' size mismatch"]
    assert recompile_reasons('[\n  "a",\n  "b"\n]') == ["a", "b"]
    assert recompile_reasons("[not json") == ["[not json"]


def test_a_third_shape_names_both_compiles_it_missed() -> None:
    normalizer = Normalizer.for_paths(str(Path.cwd()), str(Path(torch.__file__).parent))
    spec = CompileSpec(backend="eager", dynamic=False, numerics=False)
    case = CompileCase(spec, "case", torch.tanh, normalizer)
    try:
        case.start((torch.randn(4),), {})
        case.result.call(torch.randn(6))
        summary = case.result.call(torch.randn(8)).artifacts["summary"]
    finally:
        case.close()
    bullets = [line for line in summary.splitlines() if line.startswith("  - 0/")]
    assert len(bullets) == 3, summary
    assert not any(line.strip() in ("- 0/0: [", "- 0/1: [") for line in bullets), summary
