"""The `program` artifact and `CompileResult.check_guards`.

The program must parse for every zoo model, show a change to the model as a
diff, and its guard checks must say what Dynamo's own guards say: the
agreement matrix (tests/snapshot/program/guard_matrix.py, in a fresh process) compiles each
zoo model and asks both on the same inputs. That the file runs is
test_program_file.py's and test_program_run.py's business.
"""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from typing import Any

import pytest
import torch

from pytest_torchcompile._torch.formats import split_comment
from pytest_torchcompile.common.capture import FrameKey
from pytest_torchcompile.snapshot.emit.guards import GuardRow, guard_function
from pytest_torchcompile.snapshot.files.placeholders import torch_minor
from tests.conftest import REPO
from tests.snapshot.program.guard_matrix import ZOO

#: the zoo's committed set for this torch (pyproject: torchcompile_snapshot_dir = "snapshots/{torch}/{device}")
ZOO_SNAPSHOTS = REPO / "snapshots" / torch_minor(torch.__version__) / "cpu/fixtures/test_zoo"


# --- the committed zoo snapshots ----------------------------------------------


def test_every_zoo_program_snapshot_parses_with_one_guard_function_per_frame() -> None:
    files = sorted(ZOO_SNAPSHOTS.glob("*/program.py.txt"))
    assert len(files) == 4  # program is opt-in: the zoo tests marked with_program
    for path in files:
        tree = ast.parse(path.read_text(), filename=str(path))
        guards = [
            n.name
            for n in tree.body
            if isinstance(n, ast.FunctionDef) and n.name.startswith("guards_f")
        ]
        frames = re.findall(
            r"^  - frame (\d+) compile (\d+):",
            (path.parent / "summary.txt").read_text(),
            re.MULTILINE,
        )
        assert sorted(g.split("_")[1] for g in guards) == sorted(f"f{f}c{c}" for f, c in frames), (
            path
        )


def test_zoo_programs_show_breaks_recompiles_and_kernels() -> None:
    """The runnable file (docs/program.md): per frame its compiles newest first, then kernels, then `load`."""
    graph_break = (ZOO_SNAPSHOTS / "test_graph_break/program.py.txt").read_text()
    assert "def guards_f1c0_torch_dynamo_resume_in_forward_at_N(L, G, IDS):" in graph_break
    assert (
        "never compiled during the capture; its own code, run as plain Python" in graph_break
    )  # the branch not taken
    recompiled = (
        ZOO_SNAPSHOTS / "test_two_shapes_recompile_then_dynamic/program.py.txt"
    ).read_text()
    assert "2 <= L['x'].size()[0]" in recompiled
    assert recompiled.index("def guards_f0c1_forward") < recompiled.index(
        "def guards_f0c0_forward"
    )  # newest first
    training = (ZOO_SNAPSHOTS / "test_mlp_training/program.py.txt").read_text()
    order = [
        "def guards_f0c0_forward",
        "def f0c0_forward(self, x):",
        "class CompiledFunction(torch.autograd.Function):",
        "cpp_fused_gelu_0 = ",
        "KERNEL_f0c0_backward = ",
        "# ---- load:",
    ]
    assert [training.index(part) for part in order] == sorted(
        training.index(part) for part in order
    )


# --- check_guards agrees with Dynamo --------------------------------------------


@pytest.fixture(scope="module")
def guard_report() -> dict[str, Any]:
    """tests/snapshot/program/guard_matrix.py in a fresh process (compiling here would shift the
    process-global names in zoo snapshots checked later by the same worker)."""
    done = subprocess.run(
        [sys.executable, "-m", "tests.snapshot.program.guard_matrix"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


#: what Dynamo must answer for the first frame compile, by variant of the first argument.
EXPECTED = {
    "same shape": True,
    "other shape": False,
    "other dtype": False,
    "other device (meta)": False,
    "requires_grad flipped": False,
    "size 1 (outside a dynamic range)": False,
    "other strides": False,
    "grad mode flipped": False,
}


@pytest.mark.parametrize("name", ZOO)
def test_check_guards_agrees_with_dynamo(guard_report: dict[str, Any], name: str) -> None:
    assert name not in guard_report["errors"], guard_report["errors"].get(name)
    verdicts = guard_report["matrix"][name]
    disagree = {variant: v for variant, v in verdicts.items() if v[0] != v[1]}
    assert not disagree, f"[check_guards, Dynamo] differ: {disagree}"
    expected = dict(EXPECTED)
    if name == "dynamic_shapes":
        expected["other shape"] = True  # a dynamic size; the stride guard still holds the layout
    assert {variant: v[0] for variant, v in verdicts.items()} == expected


def test_check_guards_predicts_recompiles_of_real_calls(guard_report: dict[str, Any]) -> None:
    """Cross-checks the L/G binding: False exactly when calling the compiled model recompiles."""
    calls = guard_report["recompiles"]
    assert len(calls) == 5
    for name, variant, predicted, recompiled in calls:
        assert predicted is not recompiled, (name, variant)


def test_check_guards_binds_defaults_and_keywords(guard_report: dict[str, Any]) -> None:
    # EQUALS_MATCH on beta; shift=None is the default, not a tensor
    assert guard_report["keywords"] == {
        "as compiled": True,
        "beta=3.0": False,
        "shift left to its default None": False,
    }


# --- the guard function, from rows (no compile) ----------------------------------


def row(kind: str, code: str, source: str = "L['x']", comment: str = "") -> GuardRow:
    return GuardRow(kind, source, code, comment, 0)


def test_guard_function_spells_out_tensor_checks_and_keeps_unknown_guards_as_comments() -> None:
    rows = (
        row(
            "TENSOR_MATCH",
            "check_tensor(L['x'], Tensor, DispatchKeySet(CPU, BackendSelect), torch.float32, device=None, requires_grad=False, size=[None, 8], stride=[8, 1])",
            comment="y = x.sin()  # m.py:3 in f",
        ),
        row(
            "ID_MATCH",
            "___check_obj_id(G['torch'], 140270709103312), type=<class 'module'>",
            "G['torch']",
        ),
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
        ("G['a#b'][\"c#\"] == 1  # f(x)", ("G['a#b'][\"c#\"] == 1", "f(x)")),
        ("x == 'a\\'#'  # c", ("x == 'a\\'#'", "c")),
        ("x == 'two\nlines#'  # c", ("x == 'two\nlines#'", "c")),
    ],
)
def test_split_comment(part: str, expected: tuple[str, str]) -> None:
    assert split_comment(part) == expected


# --- the facts the file is written from ---------------------------------------

INSTALLED_READS = """
import dis, json, math
import torch
from pytest_torchcompile._torch.patterns.dynamo import INSTALLED_GLOBAL
from pytest_torchcompile.common.capture import capturing
from pytest_torchcompile.common.capture_log import CaptureLog
from pytest_torchcompile.snapshot.program.facts.reading import _global_reads

SCALE = torch.ones(3)

def f(x, n):
    y = torch.sin(x) * SCALE + math.pi
    print("a graph break")
    for _ in range(n):
        y = torch.nn.functional.gelu(y)
    return y.cos() + len(y), (y > 0).any().item()

log = CaptureLog()
with capturing(log):
    torch.compile(f, backend="aot_eager")(torch.randn(3), 2)
pairs = []
for record in log.bytecode:
    loads = {i.argval for i in dis.get_instructions(record.transformed)
             if i.opname in ("LOAD_GLOBAL", "LOAD_NAME") and INSTALLED_GLOBAL.match(i.argval)}
    pairs.append((sorted(_global_reads(record.transformed)), sorted(loads)))
print(json.dumps(pairs))
"""


def test_installed_globals_read_from_the_code_names_are_its_global_loads() -> None:
    """The file's facts take the globals Dynamo installed from the transformed code's names, not
    from its disassembly (a third of reading the facts): on every frame compile of code with a
    graph break, a resume function, a module, a global and `.item()`, exactly the names the
    disassembly loads as globals (in a fresh process: compiling here would shift the
    process-global names of zoo snapshots this worker checks later)."""
    done = subprocess.run(
        [sys.executable, "-c", INSTALLED_READS],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    pairs = json.loads(done.stdout.strip().splitlines()[-1])
    assert len(pairs) >= 2  # the function and the resume function after its break
    assert all(names == loads and loads for names, loads in pairs), pairs
