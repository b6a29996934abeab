"""What the numerics check adds to a passing case, measured so anyone can re-run it.

A passing case runs: copies (the pristine model kept for replays, the eager
model, two copies of the inputs), the eager run (with backward where the case
has gradients), the compiled run under capture, and the comparison of
everything observed. Attribution and the fp64 reference run only after a
mismatch, so they cost a passing case nothing. This times each part with the
fixture's own functions, on warm Inductor caches, rounds interleaved, and
reports medians and each part's share of the whole case.

    python benchmarks/bench_numerics.py [rounds]
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    started = time.perf_counter()
    value = fn()
    return time.perf_counter() - started, value


def one_round(build: Callable[[], Any]) -> dict[str, float]:
    """One passing case, whole and in parts (the parts are the case's own steps)."""
    import torch

    from pytest_torchcompile.common.copies import clone_inputs, copy_model
    from pytest_torchcompile.snapshot.artifacts.normalize import Normalizer
    from pytest_torchcompile.snapshot.case import CompileCase
    from pytest_torchcompile.snapshot.numerics.calls import observed_call
    from pytest_torchcompile.snapshot.numerics.check import compare
    from pytest_torchcompile.snapshot.spec import CompileSpec

    model, args, kwargs = build()
    normalizer = Normalizer.for_paths(str(REPO), str(Path(torch.__file__).parent))
    case = CompileCase(CompileSpec(artifacts=()), "bench", model, normalizer)
    whole, _ = timed(lambda: case.start(args, kwargs))

    copies, _ = timed(
        lambda: (
            copy_model(model),
            copy_model(model),
            clone_inputs((args, kwargs)),
            clone_inputs((args, kwargs)),
        )
    )
    eager_model = copy_model(model)
    eager, (_, eager_seen) = timed(
        lambda: observed_call(
            eager_model, eager_model, clone_inputs((args, kwargs)), case.spec.grads
        )
    )
    other = copy_model(model)
    _, seen = observed_call(other, other, clone_inputs((args, kwargs)), case.spec.grads)
    comparison, mismatches = timed(lambda: compare(seen, eager_seen, case.replay.tolerance))
    assert not mismatches
    return {"case": whole, "copies": copies, "eager": eager, "compare": comparison}


def main(rounds: int = 7) -> None:
    from fixtures import zoo

    models = {
        "mlp_training": zoo.mlp_training,
        "transformer_block": zoo.transformer_block,
        "convbn_inference": zoo.convbn_inference,
    }
    for build in models.values():
        one_round(build)  # warm the Inductor caches and the interpreter
    samples: dict[str, list[dict[str, float]]] = {name: [] for name in models}
    for _ in range(rounds):
        for name, build in models.items():
            samples[name].append(one_round(build))
    print(
        f"numerics check on a passing case, warm caches, medians of {rounds} interleaved rounds (ms)"
    )
    print(f"{'model':<18} {'case':>8} {'copies':>8} {'eager':>8} {'compare':>8} {'share':>7}")
    for name, rows in samples.items():
        med = {k: statistics.median(r[k] for r in rows) * 1000 for k in rows[0]}
        added = med["copies"] + med["eager"] + med["compare"]
        print(
            f"{name:<18} {med['case']:8.1f} {med['copies']:8.2f} {med['eager']:8.2f} {med['compare']:8.2f} {100 * added / med['case']:6.1f}%"
        )


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 7)
