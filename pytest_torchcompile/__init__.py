"""pytest-torchcompile: regression tests for torch.compile.

Snapshots of what the compiler produced (graphs, guards, generated code,
counters) and numerics against eager, through one marker and one fixture.
Importing this package does not import torch.
"""

from .report import CaseRow
from .spec import ARTIFACT_EXTENSIONS, CompileSpec, SpecError

__all__ = ["ARTIFACT_EXTENSIONS", "CaseRow", "CompileSpec", "SpecError"]
__version__ = "0.1.0"
