"""The `program` artifact and `CompileResult.check_guards`.

The program must parse for every zoo model, show a change to the model as a
diff, and its guard functions must say what Dynamo's own guards say: the
agreement matrix compiles each zoo model (backend eager: the guards do not
depend on the backend) and asks both on the same inputs.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch
from torch._dynamo.eval_frame import _debug_get_cache_entry_list

from fixtures import zoo
from pytest_torchcompile.capture import FrameKey
from pytest_torchcompile.fixture import CompileCase
from pytest_torchcompile.guards import GuardRow, frame_function, frame_locals, guard_function, split_comment
from pytest_torchcompile.normalize import Normalizer
from pytest_torchcompile.spec import CompileSpec
from tests.conftest import model_test

REPO = Path(__file__).resolve().parents[1]
ZOO_SNAPSHOTS = REPO / "snapshots/fixtures/test_zoo"
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


# --- the committed zoo snapshots ----------------------------------------------


def test_every_zoo_program_snapshot_parses_with_one_guard_function_per_frame() -> None:
    files = sorted(ZOO_SNAPSHOTS.glob("*/program.py.txt"))
    assert len(files) == 10
    for path in files:
        tree = ast.parse(path.read_text(), filename=str(path))
        guards = [n.name for n in tree.body if isinstance(n, ast.FunctionDef) and n.name.startswith("guards_f")]
        frames = re.findall(r"^  - frame (\d+) compile (\d+):", (path.parent / "summary.txt").read_text(), re.MULTILINE)
        assert [g.split("_")[1] for g in guards] == [f"f{f}c{c}" for f, c in frames], path


def test_zoo_programs_show_breaks_recompiles_and_kernels() -> None:
    graph_break = (ZOO_SNAPSHOTS / "test_graph_break/program.py.txt").read_text()
    assert "# depyf could not decompile this frame" in graph_break  # listing kept, as comments
    assert "def guards_f1c0_torch_dynamo_resume_in_forward_at_N(L, G) -> bool:" in graph_break
    recompiled = (ZOO_SNAPSHOTS / "test_two_shapes_recompile_then_dynamic/program.py.txt").read_text()
    assert "def guards_f0c1_forward(L, G) -> bool:" in recompiled and "2 <= L['x'].size()[0]" in recompiled
    training = (ZOO_SNAPSHOTS / "test_mlp_training/program.py.txt").read_text()
    order = ["def guards_f0c0_forward", "def forward(self, x):", "def _runtime_wrapper", "compiled forward (output code)", "cpp_fused_gelu_0 = ", "compiled backward (output code)"]
    assert [training.index(part) for part in order] == sorted(training.index(part) for part in order)


# --- check_guards agrees with Dynamo --------------------------------------------


def zoo_case(name: str, backend: str = "eager") -> tuple[CompileCase, tuple[Any, ...], dict[str, Any]]:
    if name == "two_shapes":
        (model, args, kwargs), _, _ = zoo.two_shapes()
    else:
        model, args, kwargs = getattr(zoo, name)()
    spec = CompileSpec(backend=backend, dynamic=True if name == "dynamic_shapes" else None)
    normalizer = Normalizer.for_paths(str(REPO), str(Path(torch.__file__).parent))
    case = CompileCase(spec, name, model, normalizer)
    with torch.set_grad_enabled(name not in NO_GRAD):
        case.start(args, kwargs)
    return case, args, kwargs


def dynamo_says(case: CompileCase, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    """Dynamo's own verdict: the first frame compile's cache entry checks the same locals."""
    key = min(case.log.guards)
    code = next(b.original for b in case.log.bytecode if b.key == key)
    entry = next(e for e in _debug_get_cache_entry_list(code) if (e.compile_id.frame_id, e.compile_id.frame_compile_id) == (key.frame_id, key.compile_id))
    function, self_arg = frame_function(case.model, code)
    return bool(entry.guard_manager.check(frame_locals(function, self_arg + args, kwargs)))


def _other_shape(x: torch.Tensor) -> torch.Tensor:
    return torch.randn(x.shape[0] + 3, *x.shape[1:], dtype=x.dtype).requires_grad_(x.requires_grad)


def _strided(x: torch.Tensor) -> torch.Tensor:
    return x.detach().transpose(0, 1).contiguous().transpose(0, 1).requires_grad_(x.requires_grad)


#: new first argument -> what Dynamo must answer for a static compile (dynamic_shapes differs).
VARIANTS: dict[str, tuple[Callable[[torch.Tensor], torch.Tensor], bool]] = {
    "same shape": (lambda x: x.detach().clone().requires_grad_(x.requires_grad), True),
    "other shape": (_other_shape, False),
    "other dtype": (lambda x: x.detach().double().requires_grad_(x.requires_grad), False),
    "other device (meta)": (lambda x: x.detach().to("meta").requires_grad_(x.requires_grad), False),
    "requires_grad flipped": (lambda x: x.detach().clone().requires_grad_(not x.requires_grad), False),
    "size 1 (outside a dynamic range)": (lambda x: x.detach()[:1].clone().requires_grad_(x.requires_grad), False),
    "other strides": (_strided, False),
}


@pytest.mark.parametrize("name", ZOO)
def test_check_guards_agrees_with_dynamo(name: str) -> None:
    case, args, kwargs = zoo_case(name)
    try:
        ast.parse(case.result.artifacts["program"])
        grad = name not in NO_GRAD
        verdicts = {}
        for variant, (make, _) in VARIANTS.items():
            new_args = (make(args[0]), *args[1:])
            with torch.set_grad_enabled(grad):
                verdicts[variant] = (case.result.check_guards(*new_args, **kwargs), dynamo_says(case, new_args, kwargs))
        with torch.set_grad_enabled(not grad):  # global state: grad mode flipped
            verdicts["grad mode flipped"] = (case.result.check_guards(*args, **kwargs), dynamo_says(case, args, kwargs))
    finally:
        torch._dynamo.reset()
    disagree = {variant: v for variant, v in verdicts.items() if v[0] != v[1]}
    assert not disagree, f"(check_guards, Dynamo) differ: {disagree}"
    expected = {variant: want for variant, (_, want) in VARIANTS.items()} | {"grad mode flipped": False}
    if name == "dynamic_shapes":
        expected["other shape"] = True  # a dynamic size; the stride guard still holds the layout
    assert {variant: v[0] for variant, v in verdicts.items()} == expected


def test_check_guards_predicts_recompiles_of_real_calls() -> None:
    """Cross-check the L/G binding: False exactly when calling the compiled model recompiles."""
    runnable = (("mlp_training", ("same shape", "other shape", "requires_grad flipped")), ("function_with_kwargs", ("same shape", "other dtype")))
    for name, variants in runnable:
        case, args, kwargs = zoo_case(name)
        try:
            code = case.log.bytecode[0].original
            for variant in variants:
                new_args = (VARIANTS[variant][0](args[0]), *args[1:])
                predicted = case.result.check_guards(*new_args, **kwargs)
                before = len(_debug_get_cache_entry_list(code))
                case.compiled(*new_args, **kwargs)
                recompiled = len(_debug_get_cache_entry_list(code)) > before
                assert predicted is not recompiled, (name, variant)
        finally:
            torch._dynamo.reset()


def test_check_guards_binds_defaults_and_keywords() -> None:
    case, args, kwargs = zoo_case("function_with_kwargs")
    try:
        assert case.result.check_guards(*args, **kwargs)
        assert not case.result.check_guards(*args, beta=3.0, shift=kwargs["shift"])  # EQUALS_MATCH on beta
        assert not case.result.check_guards(*args)  # shift=None: the default, not a tensor
    finally:
        torch._dynamo.reset()


# --- the guard function, from rows (no compile) ----------------------------------


def row(kind: str, code: str, source: str = "L['x']", comment: str = "") -> GuardRow:
    return GuardRow(kind, source, code, comment, "torch.Tensor", 0)


def test_guard_function_spells_out_tensor_checks_and_keeps_unknown_guards_as_comments() -> None:
    rows = (
        row("TENSOR_MATCH", "check_tensor(L['x'], Tensor, DispatchKeySet(CPU, BackendSelect), torch.float32, device=None, requires_grad=False, size=[None, 8], stride=[8, 1])", comment="y = x.sin()  # m.py:3 in f"),
        row("ID_MATCH", "___check_obj_id(G['torch'], 140270709103312), type=<class 'module'>", "G['torch']"),
        row("TORCH_FUNCTION_MODE_STACK", "___check_torch_function_mode_stack()", "L"),
        row("LAMBDA_GUARD", "some guard ids == (1, 2)", "L"),
        row("EPILOGUE", "2 <= L['x'].size()[0]", "L"),
    )
    emitted = guard_function(FrameKey(0, 1), "f", rows)
    ast.parse(emitted.text)
    assert emitted.name == "guards_f0c1_f" and emitted.ids == {"G['torch']": 140270709103312}
    for line in (
        "return (",
        "type(L['x']) is torch.Tensor  # TENSOR_MATCH  # y = x.sin()  # m.py:3 in f",
        "and L['x'].device == torch.device('cpu')",
        "and dispatch_keys(L['x']) == 'DispatchKeySet(CPU, BackendSelect)'",
        "and L['x'].dim() == 2",
        "and L['x'].size()[1] == 8",
        "and L['x'].stride() == (8, 1)",
        "and id(G['torch']) == IDS_f0c1[\"G['torch']\"]  # ID_MATCH",
        "# not re-checked here: TORCH_FUNCTION_MODE_STACK ___check_torch_function_mode_stack()",
        "# not re-checked here: LAMBDA_GUARD some guard ids == (1, 2)",
        "and 2 <= L['x'].size()[0]  # EPILOGUE",
    ):
        assert line in emitted.text


def test_guard_function_without_checks_returns_true() -> None:
    text = guard_function(FrameKey(2, 0), "g", ()).text
    assert text.endswith("    return True\n") and ast.parse(text)


@pytest.mark.parametrize(
    ("part", "expected"),
    [
        ("L['x'] == 2  # y = f(x)  # m.py:3 in f", ("L['x'] == 2", "y = f(x)  # m.py:3 in f")),
        ("L['s'] == '# not a comment'", ("L['s'] == '# not a comment'", "")),
        ("x == 'unterminated  # c", ("x == 'unterminated", "c")),
    ],
)
def test_split_comment(part: str, expected: tuple[str, str]) -> None:
    assert split_comment(part) == expected


# --- as a user sees it: snapshot, rerun, change, diff -----------------------------


def test_program_snapshot_written_then_changed_model_shows_in_its_diff(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_m=model_test("relu", backend="eager", extra=', artifacts=("program",)'))
    pytester.runpytest("--update-snapshots").assert_outcomes(passed=1)
    program = (pytester.path / "snapshots/test_m/test_m/program.py.txt").read_text()
    ast.parse(program)
    assert "def guards_f0c0_forward(L, G) -> bool:" in program and "Dynamo's graph, run by the backend" in program
    pytester.runpytest().assert_outcomes(passed=1)

    pytester.makepyfile(test_m=model_test("sigmoid", backend="eager", extra=', artifacts=("program",)'))
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*snapshot snapshots/test_m/test_m/program.py.txt differs:*", "*-*torch.relu*", "*+*torch.sigmoid*"])
