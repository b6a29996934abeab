"""pytest-torchcompile: regression tests for torch.compile.

Snapshots of what the compiler produced (graphs, guards, generated code,
counters), numerics against eager with the diverging stage named, and a
performance gate, through markers and fixtures. Importing this package does
not import torch; `BenchmarkResult`, `CompileTime`, `Figure`, `compare_case`
and `CaseDiff` load on first use (the plugin's start-up does not need them).
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
    "CaseDiff",
    "CaseRow",
    "CompileResult",
    "CompileSpec",
    "CompileTime",
    "Figure",
    "FrameResult",
    "GateSettings",
    "SpecError",
    "Verdict",
    "compare_case",
]
__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    if name in ("BenchmarkResult", "CompileTime", "Figure"):
        from .perf import result

        return getattr(result, name)
    if name in ("compare_case", "CaseDiff"):
        from .snapshot.compare import behaviour, findings

        return behaviour.compare_case if name == "compare_case" else findings.CaseDiff
    raise AttributeError(f"module 'pytest_torchcompile' has no attribute {name!r}")
