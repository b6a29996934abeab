"""The fp64 reference: a value mismatch no worse against float64 than eager's own error is dropped.

The rule of Dynamo's `same()`: for results of a low-precision dtype outside
tolerance, the same call run in float64 decides (`tolerate_with_fp64`);
`to_fp64` makes the model and inputs for that run.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import torch

from ..._torch.tensors import map_tensors
from .check import Mismatch, Tolerance


def needs_fp64(mismatches: list[Mismatch], tolerance: Tolerance) -> bool:
    return any(
        m.tensors is not None and tolerance.uses_fp64(m.tensors[0].dtype) for m in mismatches
    )


def tolerate_with_fp64(
    mismatches: list[Mismatch], reference: Mapping[str, object], tolerance: Tolerance
) -> list[Mismatch]:
    """Drop value mismatches that are no worse against fp64 than eager's own error.

    `reference` is an observation of the same call run in float64. A kept
    mismatch says how far off compiled and eager were from it.
    """
    kept = []
    for m in mismatches:
        ref = reference.get(m.leaf)
        if (
            m.tensors is None
            or not tolerance.uses_fp64(m.tensors[0].dtype)
            or not isinstance(ref, torch.Tensor)
        ):
            kept.append(m)
            continue
        compiled, eager = (t.to(torch.float64) for t in m.tensors)
        ref = ref.detach().to(torch.float64)
        compiled_err, eager_err = _rmse(compiled, ref), _rmse(eager, ref)
        _, atol = tolerance.for_tensors(*m.tensors)
        bound = tolerance.multiplier * eager_err + atol
        if compiled_err <= bound:
            continue
        note = f"; fp64 reference: compiled rmse {compiled_err:.3g} > {tolerance.multiplier:g} x eager rmse {eager_err:.3g} + atol"
        kept.append(dataclasses.replace(m, detail=m.detail + note))
    return kept


def _rmse(a: torch.Tensor, b: torch.Tensor) -> float:
    return float(torch.sqrt(torch.mean(torch.square(a - b))).item()) if a.numel() else 0.0


def to_fp64(value: Any) -> Any:
    """A module or nested inputs with every floating tensor in float64."""
    if isinstance(value, torch.nn.Module):
        return value.to(torch.float64)
    return map_tensors(_tensor_to_fp64, value)


def _tensor_to_fp64(t: torch.Tensor) -> torch.Tensor:
    return (
        t.detach().to(torch.float64).requires_grad_(t.requires_grad) if t.is_floating_point() else t
    )
