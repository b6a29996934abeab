"""Numerics across ranks: each rank's outputs and gradients, after the collectives, against
the eager run of the same wrapper and world size.

A rank observes what a single-process case does (`numerics/calls.py`), with
FSDP2's DTensors read as the rank's own shard and a compiled layer's
`_orig_mod.` left out of parameter names, so both runs name them alike. When
a mismatch needs the float64 reference on any rank, every rank runs it: it
holds collectives of its own.
"""

from __future__ import annotations

from collections.abc import Callable

from ..._torch import distributed
from ..numerics.calls import Inputs, observed_call
from ..numerics.check import Tolerance, compare, format_mismatches
from ..numerics.fp64 import needs_fp64, tolerate_with_fp64
from ..spec import CompileSpec
from .wrappers import COMPILED_PREFIX, Wrapped


def observed(
    model: Wrapped, inputs: Inputs, grads: bool | None
) -> tuple[object, dict[str, object]]:
    """One seeded call with its backward (when the case has gradients), observed as plain tensors."""
    out, seen = observed_call(model.run, model.module, inputs, grads)
    return out, {
        path.replace(COMPILED_PREFIX, ""): distributed.local(v) for path, v in seen.items()
    }


def verdict(
    spec: CompileSpec,
    seen: dict[str, object],
    eager_seen: dict[str, object],
    fp64: Callable[[], dict[str, object]],
    world_size: int,
) -> str | None:
    """The failure text of this rank's numerics, or None; a collective: every rank calls it."""
    tolerance = Tolerance(
        spec.rtol, spec.atol, spec.fp64_reference, spec.fp64_multiplier, spec.check_stride
    )
    mismatches = compare(seen, eager_seen, tolerance)
    if distributed.any_rank(needs_fp64(mismatches, tolerance)):
        reference = fp64()
        mismatches = tolerate_with_fp64(mismatches, reference, tolerance)
    if not mismatches:
        return None
    head = f"compiled ({spec.backend_name}) differs from eager (the same wrapper on {world_size} ranks):"
    return "\n".join([head, *format_mismatches(mismatches)])
