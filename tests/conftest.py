"""Shared helpers for the plugin's self-tests (pytester, subprocess runs)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

#: A small model test; `{op}`, `{backend}` and `{extra}` vary per test.
MODEL_TEST = '''
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
'''


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
        return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()) if root.exists() else []

    return files
