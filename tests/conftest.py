"""Shared helpers for the plugin's self-tests (pytester, subprocess runs)."""

from __future__ import annotations

import hashlib
import importlib
import os
import sys
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from tests import zygote

#: the repository's root, and the tests' recorded data
REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "tests" / "data"


def pytest_configure(config: pytest.Config) -> None:
    """Import torch's compiler stack once, before any test runs.

    `pytester` restores `sys.modules` after each test, deleting every module
    first imported during it. Parts of Inductor register themselves in
    process-global tables at import and cannot be imported twice ("Artifact
    of type=autotune already registered in mega-cache artifact factory"), so
    a pytester test that happened to be the first to touch Inductor in a
    worker broke every later compile in that worker.
    """
    skip_hypothesis_in_child_runs()
    config.addinivalue_line(
        "markers",
        "fresh_interpreter: the test's pytest runs are new interpreters, never forks of the "
        "zygote (tests/zygote.py): it checks what a process imports or reads when it starts",
    )
    config.addinivalue_line(
        "markers",
        "torch_independent: what the test checks (files, paths, flags) reads the same on every "
        "torch; CI runs it on its torch 2.13 leg alone (CONTRIBUTING.md: The test command)",
    )
    with (
        warnings.catch_warnings()
    ):  # torch's own import-time deprecations, before pytest captures warnings
        warnings.simplefilter("ignore")
        for module in (
            "torch._dynamo.repro.after_dynamo",
            "torch._inductor.codecache",
            "torch._inductor.compile_fx",
        ):
            importlib.import_module(module)


#: what the pytest runs this suite starts (pytester's subprocesses, the stability re-runs, the
#: docs' commands) take on top of their own options: no hypothesis plugin, whose import costs
#: each run about a second here (a fifth of a small compile test's run), and no anyio plugin
#: (a dependency's, about 0.15 s a run); none of them uses either (this suite's own tests that
#: use hypothesis run in this process, its options already read)
CHILD_ADDOPTS = "-p no:hypothesispytest -p no:anyio"


def skip_hypothesis_in_child_runs() -> None:
    opts = os.environ.get("PYTEST_ADDOPTS", "")
    if CHILD_ADDOPTS not in opts:
        os.environ["PYTEST_ADDOPTS"] = f"{opts} {CHILD_ADDOPTS}".strip()


def pytest_unconfigure(config: pytest.Config) -> None:
    zygote.close()


@pytest.fixture
def pytester(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> pytest.Pytester:
    """pytest's `pytester`, its runs without the hypothesis plugin (`CHILD_ADDOPTS`: pytester
    clears `PYTEST_ADDOPTS` when it starts, so it is set again here), each `python -m pytest`
    forked from the worker's zygote where it can be (tests/zygote.py)."""
    monkeypatch.setenv("PYTEST_ADDOPTS", CHILD_ADDOPTS)
    if request.node.get_closest_marker("fresh_interpreter") is None:
        monkeypatch.setattr(pytester, "popen", _forking_popen(pytester))
    return pytester


def _forking_popen(pytester: pytest.Pytester) -> Callable[..., Any]:
    """`pytester.popen`, a `python -m pytest` run forked from the zygote where it accepts the run."""
    original = pytester.popen

    def popen(
        cmdargs: Sequence[Any], stdout: Any = None, stderr: Any = None, stdin: Any = None, **kw: Any
    ) -> Any:
        args = [os.fspath(a) for a in cmdargs]
        files = hasattr(stdout, "name") and hasattr(stderr, "name")
        if (
            args[:2] == [sys.executable, "-mpytest"]
            and stdin is pytester.CLOSE_STDIN
            and files
            and not kw
        ):
            env = os.environ.copy()
            env["PYTHONPATH"] = os.pathsep.join(
                filter(None, [os.getcwd(), env.get("PYTHONPATH", "")])
            )
            forks = zygote.zygote()
            if forks is not None and forks.accepts(env):
                return forks.start(args[2:], Path.cwd(), env, stdout.name, stderr.name)
        return original(cmdargs, stdout=stdout, stderr=stderr, stdin=stdin, **kw)

    return popen


#: A small model test; `{op}`, `{backend}` and `{extra}` vary per test.
MODEL_TEST = """
import pytest, torch

class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x):
        return torch.{op}(self.lin(x))

@pytest.mark.compile_snapshot(backend="{backend}"{extra})
def test_m(compile_model):
    torch.manual_seed(0)
    compile_model(M(), torch.randn(2, 4))
"""


def model_test(op: str = "relu", backend: str = "aot_eager", extra: str = "") -> str:
    return MODEL_TEST.format(op=op, backend=backend, extra=extra)


def tree_digest(root: Path) -> dict[str, str]:
    """path -> sha256 of every file under root, to prove nothing was written."""
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


@pytest.fixture
def snapshot_files(pytester: pytest.Pytester):
    """A function listing the snapshot files under the pytester rootdir."""

    def files() -> list[str]:
        root = pytester.path / "snapshots"
        return (
            sorted(
                str(p.relative_to(root))
                for p in root.rglob("*")
                if p.is_file() and p.name != ".gitattributes"  # the set's mark, not a snapshot
            )
            if root.exists()
            else []
        )

    return files
