"""The `@make_test` functions of a PyTorch Dynamo test file, importable by name.

PyTorch's `test/dynamo/test_functions.py` (and a few files like it) writes
most of its tests as plain functions decorated with `make_test`, which wraps
each in a `test_fn(self)` that calls `torch._dynamo.testing.standard_test`
with the function and its parameter count. This module imports the file
named by `PTC_PYTORCH_TESTS` (a path; nothing of it is copied into this
repository) and takes each wrapped function back out of `test_fn`'s closure
(the cells `fn`, `nargs`, `expected_frame_count`), so a benchmark can call it
the way `standard_test` does: `nargs` tensors of `torch.randn(10, 10)`.

Each function is set on this module under its test's name and its
`__module__`/`__qualname__` point here: `run_program=True` hands the case to a
fresh process pickled, by name, and that process imports this module (the
same environment variable) to find the same function again. The function's
code and its globals (the PyTorch file's module) are untouched.

The file is executed with torch's generator seeded (then restored), so
module-level modules such as a global `nn.Linear` get the same weights in
every process that imports it.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import os
import sys
import types
import unittest
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

ENV = "PTC_PYTORCH_TESTS"
#: the name the PyTorch file is imported under (its functions' globals live there).
SOURCE_MODULE = "ptc_pytorch_tests_source"


@dataclass(frozen=True)
class Case:
    """One `@make_test` function and what `standard_test` would call it with."""

    fn: Any
    nargs: int
    expected_frame_count: int
    skip: str  # unittest's skip reason ("" when it runs)


def _load_source(path: Path) -> Any:
    if not path.is_file():
        raise FileNotFoundError(
            f"{ENV}={path}: no such file (a PyTorch test file, e.g. test/dynamo/test_functions.py)"
        )
    module = types.ModuleType(SOURCE_MODULE)
    module.__file__ = str(path)
    module.__dict__[_FROM_IMPORT] = _from_import
    sys.modules[SOURCE_MODULE] = module
    code = compile(_tolerant_imports(ast.parse(path.read_text(), str(path))), str(path), "exec")
    state = torch.random.get_rng_state()
    torch.manual_seed(0)
    try:
        exec(code, module.__dict__)
    finally:
        torch.random.set_rng_state(state)
    return module


def _tolerant_imports(tree: ast.Module) -> ast.Module:
    """Top-level `from torch... import a, b` made name by name, a missing name bound to a stand-in.

    A test file from PyTorch's main branch imports helpers of
    `torch.testing._internal` that an older torch lacks (decorators such as
    `disable_translation_validation_if_dynamic_shapes`); without this the
    whole file would not import. The functions' own code is compiled
    unchanged, from the same file name and lines.
    """
    for index, node in enumerate(tree.body):
        if not (isinstance(node, ast.ImportFrom) and (node.module or "").startswith("torch")):
            continue
        if node.level or any(alias.name == "*" for alias in node.names):
            continue
        pairs = tuple((alias.name, alias.asname or alias.name) for alias in node.names)
        call = ast.Expr(
            ast.Call(
                ast.Name(_FROM_IMPORT, ast.Load()),
                [ast.Constant(node.module), ast.Constant(pairs), ast.Name("__name__", ast.Load())],
                [],
            )
        )
        tree.body[index] = ast.fix_missing_locations(ast.copy_location(call, node))
    return tree


_FROM_IMPORT = "__ptc_from_import__"
#: names the PyTorch file imports that the installed torch lacks (bound to `_missing`).
MISSING: list[str] = []


def _from_import(module_name: str, pairs: tuple[tuple[str, str], ...], into: str) -> None:
    module = importlib.import_module(module_name)
    namespace = sys.modules[into].__dict__
    for name, asname in pairs:
        if hasattr(module, name):
            namespace[asname] = getattr(module, name)
        else:
            MISSING.append(f"{module_name}.{name}")
            namespace[asname] = _missing(f"{module_name}.{name}")


def _missing(name: str) -> Any:
    """A decorator that leaves the test as it is (the missing helpers are test decorators); anything else raises."""

    def stand_in(*args: Any, **kwargs: Any) -> Any:
        if len(args) == 1 and not kwargs and callable(args[0]):
            return args[0]
        raise ImportError(f"{name} is not in the installed torch")

    return stand_in


def _made_by_make_test(test: Any) -> dict[str, Any] | None:
    """`test_fn`'s closure as a dict when `test` is what make_test returned, else None."""
    while hasattr(test, "__wrapped__") and not _is_test_fn(test):
        test = test.__wrapped__  # decorators that wrap (functools.wraps) the test
    if not _is_test_fn(test):
        return None
    cells = dict(zip(test.__code__.co_freevars, test.__closure__ or ()))
    return {name: cell.cell_contents for name, cell in cells.items()}


def _is_test_fn(test: Any) -> bool:
    code = getattr(test, "__code__", None)
    return (
        inspect.isfunction(test)
        and code is not None
        and {"fn", "nargs"} <= set(code.co_freevars)
        and test.__qualname__.startswith("make_test.")
    )


def _skip_reason(test: Any) -> str:
    if getattr(test, "__unittest_skip__", False):
        return getattr(test, "__unittest_skip_why__", "") or "skipped"
    return ""


def collect(module: Any) -> dict[str, Case]:
    """Every make_test function of the file's TestCase classes, by test name (first class wins a clash)."""
    cases: dict[str, Case] = {}
    for cls in vars(module).values():
        if not (isinstance(cls, type) and issubclass(cls, unittest.TestCase)):
            continue
        if cls.__module__ != module.__name__:
            continue
        for name, test in vars(cls).items():
            closure = _made_by_make_test(test) if name.startswith("test") else None
            if closure is None:
                continue
            key = name if name not in cases else f"{cls.__name__}__{name}"
            cases[key] = Case(
                fn=closure["fn"],
                nargs=int(closure["nargs"]),
                expected_frame_count=int(closure.get("expected_frame_count", 1)),
                skip=_skip_reason(test),
            )
    return cases


def _publish(cases: dict[str, Case]) -> None:
    """Make each function importable as `pytorch_make_tests.<test name>` (for pickling by name)."""
    for name, case in cases.items():
        case.fn.__module__ = __name__
        case.fn.__qualname__ = name
        globals()[name] = case.fn


SOURCE = Path(os.environ.get(ENV, "")).expanduser() if os.environ.get(ENV) else None
CASES: dict[str, Case] = {}
if SOURCE is not None:
    CASES = collect(_load_source(SOURCE))
    _publish(CASES)
