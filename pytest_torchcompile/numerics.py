"""Compare compiled results with eager ones, element by element, with paths.

Outputs are flattened with torch's pytree so every leaf has a readable path
(`output['logits']`, `output[1][0]`). Tensor leaves are compared with the
dtype-aware defaults of `torch.testing.assert_close` unless the marker sets
`rtol`/`atol`; integer and bool tensors must match exactly; NaN and inf in the
same places are equal; other leaves must be equal. A mismatch is described,
not raised, so the caller can put several into one failure.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import torch
from torch.testing._comparison import default_tolerances
from torch.utils._pytree import keystr, tree_flatten_with_path


@dataclass(frozen=True)
class Mismatch:
    """One leaf where compiled and eager disagree, described for a CI log."""

    path: str
    detail: str

    def __str__(self) -> str:
        return f"{self.path}: {self.detail}"


def flatten(value: Any, root: str) -> list[tuple[str, Any]]:
    """(path, leaf) pairs; the path starts with `root` (`output`, `grad of`)."""
    leaves, _ = tree_flatten_with_path(value)
    return [(f"{root}{keystr(path)}", leaf) for path, leaf in leaves]


def compare_trees(compiled: Any, eager: Any, root: str, rtol: float | None, atol: float | None) -> list[Mismatch]:
    """Every leaf mismatch between two results of the same structure."""
    got, expected = flatten(compiled, root), flatten(eager, root)
    if [p for p, _ in got] != [p for p, _ in expected]:
        return [Mismatch(root, f"structure differs: compiled has {[p for p, _ in got]}, eager has {[p for p, _ in expected]}")]
    found = []
    for (path, c), (_, e) in zip(got, expected):
        mismatch = compare_leaf(path, c, e, rtol, atol)
        if mismatch is not None:
            found.append(mismatch)
    return found


def compare_leaf(path: str, compiled: Any, eager: Any, rtol: float | None, atol: float | None) -> Mismatch | None:
    if isinstance(compiled, torch.Tensor) and isinstance(eager, torch.Tensor):
        return compare_tensors(path, compiled, eager, rtol, atol)
    if type(compiled) is not type(eager) or compiled != eager:
        return Mismatch(path, f"compiled {compiled!r} != eager {eager!r}")
    return None


def compare_tensors(path: str, c: torch.Tensor, e: torch.Tensor, rtol: float | None, atol: float | None) -> Mismatch | None:
    """Metadata first (shape, dtype, device), then values with tolerances."""
    for what in ("shape", "dtype", "device"):
        if getattr(c, what) != getattr(e, what):
            return Mismatch(path, f"{what} differs: compiled {getattr(c, what)}, eager {getattr(e, what)}")
    c, e = c.detach(), e.detach()
    if not (c.is_floating_point() or c.is_complex()):
        rtol, atol = 0.0, 0.0
    elif rtol is None or atol is None:
        rtol, atol = default_tolerances(c, e)
    close = torch.isclose(c, e, rtol=rtol, atol=atol, equal_nan=True)
    if bool(close.all()):
        return None
    return Mismatch(path, _describe(c, e, close, rtol, atol))


def _describe(c: torch.Tensor, e: torch.Tensor, close: torch.Tensor, rtol: float, atol: float) -> str:
    cd, ed = c.to(torch.float64), e.to(torch.float64)
    abs_err = (cd - ed).abs().nan_to_num(nan=float("inf"))
    rel_err = (abs_err / ed.abs()).nan_to_num(nan=0.0)  # inf where eager is 0, as assert_close reports
    bad = ~close
    worst = int(torch.where(bad, abs_err, torch.full_like(abs_err, -1.0)).flatten().argmax())
    index = tuple(int(i) for i in torch.unravel_index(torch.tensor(worst), c.shape)) if c.dim() else ()
    where = f"[{', '.join(map(str, index))}]" if index else ""
    return (
        f"worst at {where or '(scalar)'}: compiled {cd.flatten()[worst].item():.6g}, eager {ed.flatten()[worst].item():.6g}; "
        f"max abs error {abs_err[bad].max().item():.3g}, max rel error {rel_err[bad].max().item():.3g}; "
        f"{int(bad.sum())} of {bad.numel()} elements exceed rtol={rtol:.3g}, atol={atol:.3g}"
    )


def format_mismatches(backend: str, mismatches: Iterable[Mismatch]) -> str:
    """The failure text: one line per mismatching leaf."""
    lines = [f"compiled ({backend}) differs from eager:"]
    lines.extend(f"  {m}" for m in mismatches)
    return "\n".join(lines)
