"""pytest-torchcompile: regression tests for torch.compile.

Snapshots of what the compiler produced (graphs, guards, generated code,
counters), numerics against eager with the diverging stage named, and a
performance gate, through markers and fixtures. Importing this package does
not import torch; `BenchmarkResult`, whose module does, loads on first use.
"""

from typing import Any

from .common.options import SpecError
from .perf.gate import GateSettings, Verdict
from .snapshot.artifacts.case_artifacts import FrameResult
from .snapshot.case_table import CaseRow
from .snapshot.result import CompileResult
from .snapshot.spec import ARTIFACT_EXTENSIONS, CompileSpec

__all__ = [
    "ARTIFACT_EXTENSIONS",
    "BenchmarkResult",
    "CaseRow",
    "CompileResult",
    "CompileSpec",
    "FrameResult",
    "GateSettings",
    "SpecError",
    "Verdict",
]
__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    if name == "BenchmarkResult":
        from .perf.result import BenchmarkResult

        return BenchmarkResult
    raise AttributeError(f"module 'pytest_torchcompile' has no attribute {name!r}")
