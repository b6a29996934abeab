"""The torch adapter (`pytest_torchcompile/_torch/`): its contract, and that it is the only one.

The parts that compile run in a fresh process (`tests/torch_adapter/adapter_contract.py`):
compiling here would move Dynamo's process-global counters under the zoo
snapshots checked later by the same worker. The parts that do not compile
run here. The last tests hold the rule of the house: outside `_torch/`, no
module of the plugin names a private torch module.
"""

from __future__ import annotations

import io
import re
import subprocess
import sys
import tokenize
from pathlib import Path

import pytest
import torch

from pytest_torchcompile._torch import config, dynamo, errors, formats, kernels, tensors
from tests.conftest import REPO

PACKAGE = REPO / "pytest_torchcompile"
ADAPTER = PACKAGE / "_torch"
#: `torch._x`, `torch.utils._x`, `torch.testing._x`, `from torch.x import _y`; not public dunders (`torch.__version__`).
PRIVATE_TORCH = re.compile(r"\btorch\.(?:utils\.|testing\.)?_(?!_)|\bfrom torch[\w.]* import _")


def test_contract_holds_on_a_real_compile() -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "tests/torch_adapter/adapter_contract.py",
            "-q",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:randomly",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-2000:]
    assert re.search(r"\b1[0-9] passed\b", done.stdout), done.stdout[-2000:]


def test_registered_backends_include_the_pipeline() -> None:
    assert {"eager", "aot_eager", "aot_eager_decomp_partition", "inductor"} <= set(
        dynamo.registered_backends()
    )


def test_mode_options_and_option_list() -> None:
    assert config.mode_options("max-autotune", None)  # a mode stands for some Inductor settings
    assert config.mode_options(None, None) == config.mode_options("default", None)
    assert "cpp.simdlen" in config.inductor_options()


def test_tensors_walk_and_tolerances() -> None:
    a, b = torch.ones(2), torch.zeros(3)
    assert [
        t.shape
        for t in tensors.tree_leaves({"a": a, "rest": [b, 3]})
        if isinstance(t, torch.Tensor)
    ] == [(2,), (3,)]
    doubled = tensors.map_tensors(lambda t: t * 2, (a, {"b": b}, "text"))
    assert torch.equal(doubled[0], a * 2) and doubled[2] == "text"
    assert tensors.default_tolerances(a, a) == (1.3e-6, 1e-5)
    assert tensors.default_tolerances(a.half(), a.half()) == (1e-3, 1e-5)


def test_this_torch_can_precompile() -> None:
    from pytest_torchcompile._torch import aot

    assert aot.unsupported() is None  # every tested version (2.11, 2.13, 2.15) can


def test_kernel_modules_load_from_source() -> None:
    assert kernels.load_module("def answer():\n    return 42\n").answer() == 42
    kernels.settle_compile_workers(timeout=1.0)  # no pool started: returns at once


def test_innermost_follows_torch_wrappers_and_causes() -> None:
    class Wrapped(Exception):
        def __init__(self, inner: BaseException) -> None:
            super().__init__("wrapped")
            self.inner_exception = inner

    try:
        try:
            raise KeyError("deep")
        except KeyError as deep:
            raise RuntimeError("middle") from deep
    except RuntimeError as middle:
        assert type(errors.innermost(Wrapped(middle))) is KeyError


def test_formats_parse_guard_text() -> None:
    match = formats.parse_tensor_match(
        "check_tensor(L['x'], Tensor, DispatchKeySet(CPU, BackendSelect), torch.float32, device=None, requires_grad=False, size=[2, 3], stride=[3, 1])"
    )
    assert match is not None and (match.source, match.type_name, match.backend_key) == (
        "L['x']",
        "Tensor",
        "CPU",
    )
    assert formats.parse_tensor_match("___check_obj_id(G['torch'], 1)") is None
    assert formats.split_comment("x == '#'  # model.py:3 in f") == ("x == '#'", "model.py:3 in f")
    assert formats.rejected_guards("RuntimeError: something else") is None


def test_formats_module_imports_no_torch() -> None:
    code = "import sys, pytest_torchcompile._torch.formats, pytest_torchcompile._torch.errors, pytest_torchcompile._torch.guard_tree; print('torch' in sys.modules)"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO
    )
    assert out.stdout.strip() == "False"


def _private_uses(path: Path) -> list[str]:
    return [
        f"{path.relative_to(REPO)}:{n}: {line.strip()}"
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if PRIVATE_TORCH.search(line)
    ]


def test_no_private_torch_name_outside_the_adapter() -> None:
    """Code, docstrings and messages alike: a torch upgrade is an edit in `_torch/` only."""
    found = [
        use
        for path in sorted(PACKAGE.rglob("*.py"))
        if ADAPTER not in path.parents
        for use in _private_uses(path)
    ]
    assert not found, "\n".join(found)


def test_the_pattern_finds_what_it_must() -> None:
    lines = [
        "import torch._inductor.config",
        "from torch.utils._pytree import tree_map",
        "torch.testing._comparison",
        "from torch.utils import _pytree",
        "x = torch._C",
    ]
    assert all(PRIVATE_TORCH.search(line) for line in lines)
    assert not any(
        PRIVATE_TORCH.search(line)
        for line in [
            "torch.__version__",
            "torch.compile(f)",
            "torch.utils.data",
            "torch.compiler.load_compiled_function",
        ]
    )


def test_formats_names_private_torch_only_in_text() -> None:
    """`formats.py` holds the `program` artifact's prelude, Python that calls `torch._C`
    (and guard code that names `torch._functorch`): text the plugin writes or reads,
    never an import or an attribute access of its own."""
    source = (ADAPTER / "formats.py").read_text()
    strings = [
        t
        for t in tokenize.generate_tokens(io.StringIO(source).readline)
        if t.type == tokenize.STRING
    ]
    uses = [n for n, line in enumerate(source.splitlines(), 1) if PRIVATE_TORCH.search(line)]
    assert uses and all(any(t.start[0] <= n <= t.end[0] for t in strings) for n in uses)
    assert "torch._C._dispatch_keys" in formats.PRELUDE


@pytest.mark.parametrize(
    "module",
    sorted(
        ".".join(p.relative_to(ADAPTER).with_suffix("").parts)
        for p in [*ADAPTER.glob("*.py"), *ADAPTER.glob("process/*.py")]
        if p.stem != "__init__"
    ),
)
def test_every_adapter_module_imports(module: str) -> None:
    __import__(f"pytest_torchcompile._torch.{module}")
