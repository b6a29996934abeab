"""The `compile_benchmark` marker's settings, parsed and validated once.

The compile keywords (backend, mode, dynamic, fullgraph, options) mean what
they mean for `compile_snapshot`: both markers' specs build on the shared
`CompileOptions` (`common/options.py`), so they accept and refuse the same
values, each naming its own marker. The gate keywords (`threshold`,
`confidence`, `compile_threshold`) and `max_time` override the ini values
for one test; `compile_time=True` adds the fresh-process compiles. Nothing
here imports torch.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..common.options import CompileOptions, SpecError
from .gate import GateSettings
from .timing import TimingSettings

MARKER = "compile_benchmark"


@dataclass(frozen=True, kw_only=True)
class BenchmarkSpec(CompileOptions):
    """What `compile_benchmark` compiles with and how its gate judges it.

    `threshold` (a fraction: 0.1 is 10%), `confidence` and `max_time`
    (seconds of timing per measurement) default to the ini values when None.
    `compile_time=True` also compiles each case cold and warm in fresh
    processes (`compile_time/`); `compile_threshold` is the smallest growth
    of their CPU time that fails.
    """

    marker: ClassVar[str] = MARKER

    threshold: float | None = None
    confidence: float | None = None
    max_time: float | None = None
    compile_time: bool = False
    compile_threshold: float | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        self.check_choice("compile_time", self.compile_time, (True, False))
        overrides: dict[str, float | None] = {
            "threshold": self.threshold,
            "confidence": self.confidence,
            "compile_threshold": self.compile_threshold,
        }
        try:
            GateSettings(**{name: value for name, value in overrides.items() if value is not None})
            if self.max_time is not None:
                TimingSettings(max_time=self.max_time)
        except ValueError as exc:
            raise SpecError(f"{MARKER}: {exc}") from None
