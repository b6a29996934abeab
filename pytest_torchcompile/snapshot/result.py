"""What `compile_model` returns: outputs, counters and artifacts of one case."""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .artifacts.case_artifacts import FrameResult

if TYPE_CHECKING:
    from .precompile.round_trip import PrecompileReport
    from .program.run.check import ProgramReport


@dataclass
class CompileResult:
    """The outcome of one case; `call` runs the same compiled model again.

    `artifacts` maps artifact name to the normalized text exactly as it is
    snapshotted. Counters and artifacts cover every call of the case, so a
    recompile caused by `call(...)` shows up here and in the snapshots.
    """

    output: object
    eager_output: object
    graph_count: int
    graph_break_count: int
    recompile_count: int
    kernel_count: int
    artifacts: Mapping[str, str]
    compile_seconds: float
    _call: Callable[..., CompileResult] = field(repr=False)
    _frames: Callable[[], tuple[FrameResult, ...]] = field(repr=False, default=tuple)

    @functools.cached_property
    def frames(self) -> tuple[FrameResult, ...]:
        """One record per Dynamo frame compile, normalized when first read."""
        return self._frames()

    _check_guards: Callable[..., bool] | None = field(default=None, repr=False)
    #: `precompile=True`: artifact size and compile/save/load seconds (not snapshotted: they vary)
    precompile: PrecompileReport | None = None
    _write_program: Callable[[Path], Path] | None = field(default=None, repr=False)
    #: `run_program=True`: the program file's size, load and call seconds in the fresh process (not snapshotted)
    program_report: ProgramReport | None = None

    def call(self, *args: Any, **kwargs: Any) -> CompileResult:
        """Call the compiled model again, check numerics, fold recompiles in."""
        return self._call(*args, **kwargs)

    def check_guards(self, *args: Any, **kwargs: Any) -> bool:
        """Would the case's first frame compile run on these inputs?

        Evaluates `guards_<frame>(L, G)` exactly as emitted in the `program`
        artifact, with L bound from the arguments as Dynamo binds the frame's
        locals (`self` first for a module) and G the function's globals.
        Compiles nothing and runs nothing else.
        """
        if self._check_guards is None:
            raise ValueError("check_guards: this result has no captured guards")
        return self._check_guards(*args, **kwargs)

    def write_program(self, path: str | Path) -> Path:
        """Write the case as one Python file that runs it without torch.compile; returns the path.

        Run with `runpy.run_path`, the file defines `load(module=None, *,
        state_dict=None)`, returning a callable over the case's inputs, and
        `GuardFailure`, raised naming the failing guard when no compile
        accepts the inputs. What cannot be written as correct Python raises
        `ProgramRefused` naming the frame and the reason (see docs/program.md).
        """
        if self._write_program is None:
            raise ValueError("write_program: this result has no capture to write")
        return self._write_program(Path(path))
