"""check_guards against Dynamo's own guard check on the zoo; run as a script.

`python -m tests.snapshot.program.guard_matrix` (from the repository root) compiles every zoo
model with backend eager (guards do not depend on the backend), asks both
`CompileResult.check_guards` and the first frame compile's cache entry
(`guard_manager.check`) about the same new inputs, and prints JSON.
`tests/snapshot/program/test_program.py` runs it in a fresh process: compiling here advances
Dynamo's process-global name counter (`__builtins_dict___N`, not masked), and
the zoo's snapshots checked later in the same pytest worker would change.
"""

from __future__ import annotations

import json
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from torch._dynamo.eval_frame import _debug_get_cache_entry_list

from fixtures import zoo
from pytest_torchcompile.snapshot.artifacts.normalize import Normalizer
from pytest_torchcompile.snapshot.case import CompileCase
from pytest_torchcompile.snapshot.emit.guards import frame_function, frame_locals
from pytest_torchcompile.snapshot.spec import CompileSpec

REPO = Path(__file__).resolve().parents[3]

NO_GRAD = {"convbn_inference", "transformer_block", "buffer_mutation", "nested_outputs"}
ZOO = [
    "mlp_training",
    "convbn_inference",
    "transformer_block",
    "graph_break",
    "two_shapes",
    "dynamic_shapes",
    "buffer_mutation",
    "custom_autograd",
    "function_with_kwargs",
    "nested_outputs",
]


def zoo_case(name: str) -> tuple[CompileCase, tuple[Any, ...], dict[str, Any]]:
    if name == "two_shapes":
        (model, args, kwargs), _, _ = zoo.two_shapes()
    else:
        model, args, kwargs = getattr(zoo, name)()
    spec = CompileSpec(backend="eager", dynamic=True if name == "dynamic_shapes" else None)
    case = CompileCase(
        spec, name, model, Normalizer.for_paths(str(REPO), str(Path(torch.__file__).parent))
    )
    with torch.set_grad_enabled(name not in NO_GRAD):
        case.start(args, kwargs)
    return case, args, kwargs


def dynamo_says(case: CompileCase, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    """Dynamo's own verdict: the first frame compile's cache entry checks the same locals."""
    key = min(case.log.guards)
    code = next(b.original for b in case.log.bytecode if b.key == key)
    entry = next(
        e
        for e in _debug_get_cache_entry_list(code)
        if (e.compile_id.frame_id, e.compile_id.frame_compile_id) == (key.frame_id, key.compile_id)
    )
    function, self_arg = frame_function(case.model, code)
    return bool(entry.guard_manager.check(frame_locals(function, self_arg + args, kwargs)))


def _like(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return y.requires_grad_(x.requires_grad)


#: new first argument, by variant name.
VARIANTS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "same shape": lambda x: _like(x, x.detach().clone()),
    "other shape": lambda x: _like(x, torch.randn(x.shape[0] + 3, *x.shape[1:], dtype=x.dtype)),
    "other dtype": lambda x: _like(x, x.detach().double()),
    "other device (meta)": lambda x: _like(x, x.detach().to("meta")),
    "requires_grad flipped": lambda x: x.detach().clone().requires_grad_(not x.requires_grad),
    "size 1 (outside a dynamic range)": lambda x: _like(x, x.detach()[:1].clone()),
    "other strides": lambda x: _like(x, x.detach().transpose(0, 1).contiguous().transpose(0, 1)),
}


def matrix(name: str) -> dict[str, list[bool]]:
    """variant -> [check_guards, Dynamo] for one zoo model."""
    case, args, kwargs = zoo_case(name)
    grad = name not in NO_GRAD
    verdicts = {}
    try:
        for variant, make in VARIANTS.items():
            new_args = (make(args[0]), *args[1:])
            with torch.set_grad_enabled(grad):
                verdicts[variant] = [
                    case.result.check_guards(*new_args, **kwargs),
                    dynamo_says(case, new_args, kwargs),
                ]
        with torch.set_grad_enabled(not grad):  # global state: grad mode flipped
            verdicts["grad mode flipped"] = [
                case.result.check_guards(*args, **kwargs),
                dynamo_says(case, args, kwargs),
            ]
    finally:
        torch._dynamo.reset()
    return verdicts


def recompiles() -> list[list[Any]]:
    """[model, variant, check_guards, recompiled] for real calls of the compiled model."""
    found = []
    for name, variants in (
        ("mlp_training", ("same shape", "other shape", "requires_grad flipped")),
        ("function_with_kwargs", ("same shape", "other dtype")),
    ):
        case, args, kwargs = zoo_case(name)
        code = case.log.bytecode[0].original
        for variant in variants:
            new_args = (VARIANTS[variant](args[0]), *args[1:])
            predicted = case.result.check_guards(*new_args, **kwargs)
            before = len(_debug_get_cache_entry_list(code))
            case.compiled(*new_args, **kwargs)
            found.append(
                [name, variant, predicted, len(_debug_get_cache_entry_list(code)) > before]
            )
        torch._dynamo.reset()
    return found


def keywords() -> dict[str, bool]:
    case, args, kwargs = zoo_case("function_with_kwargs")
    answers = {
        "as compiled": case.result.check_guards(*args, **kwargs),
        "beta=3.0": case.result.check_guards(*args, beta=3.0, shift=kwargs["shift"]),
        "shift left to its default None": case.result.check_guards(*args),
    }
    torch._dynamo.reset()
    return answers


def main() -> int:
    report: dict[str, Any] = {"matrix": {}, "errors": {}}
    for name in ZOO:
        try:
            report["matrix"][name] = matrix(name)
        except Exception:
            report["errors"][name] = traceback.format_exc()
    report["recompiles"] = recompiles()
    report["keywords"] = keywords()
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
