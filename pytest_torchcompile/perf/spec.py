"""The `compile_benchmark` marker's settings, parsed and validated once.

The compile keywords (backend, mode, dynamic, fullgraph, options) mean what
they mean for `compile_snapshot` and are checked by building the same
`CompileSpec`, so both markers accept and refuse the same values; its
messages are reworded to name this marker. The gate keywords (`threshold`,
`confidence`) and `max_time` override the ini values for one test. Nothing
here imports torch.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .timing import TimingSettings
from .gate import GateSettings
from ..snapshot.spec import MARKER as SNAPSHOT_MARKER
from ..snapshot.spec import CompileSpec, SpecError

MARKER = "compile_benchmark"


@dataclass(frozen=True, kw_only=True)
class BenchmarkSpec:
    """What `compile_benchmark` compiles with and how its gate judges it.

    `threshold` (a fraction: 0.1 is 10%), `confidence` and `max_time`
    (seconds of timing per measurement) default to the ini values when None.
    """

    backend: str | Callable[..., Any] = "inductor"
    mode: str | None = None
    dynamic: bool | None = None
    fullgraph: bool = False
    options: Mapping[str, Any] | None = None
    threshold: float | None = None
    confidence: float | None = None
    max_time: float | None = None
    compile_spec: CompileSpec = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        try:
            spec = CompileSpec(
                backend=self.backend, mode=self.mode, dynamic=self.dynamic, fullgraph=self.fullgraph,
                options=self.options, numerics=False,
            )
        except SpecError as exc:
            raise SpecError(str(exc).replace(SNAPSHOT_MARKER, MARKER, 1)) from None
        object.__setattr__(self, "compile_spec", spec)
        overrides: dict[str, Any] = {"threshold": self.threshold, "confidence": self.confidence}
        try:
            GateSettings(**{name: value for name, value in overrides.items() if value is not None})
            if self.max_time is not None:
                TimingSettings(max_time=self.max_time)
        except ValueError as exc:
            raise SpecError(f"{MARKER}: {exc}") from None

    @classmethod
    def from_marker(cls, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> BenchmarkSpec:
        """Build a spec from `mark.args` / `mark.kwargs`, rewording errors."""
        if args:
            raise SpecError(f"{MARKER} takes keyword arguments only, got positional {args!r}; allowed keywords: {allowed_keywords()}")
        unknown = sorted(set(kwargs) - {f.name for f in _keywords()})
        if unknown:
            raise SpecError(f"{MARKER} got unknown keyword {', '.join(map(repr, unknown))}; allowed keywords: {allowed_keywords()}")
        return cls(**kwargs)


def _keywords() -> list[dataclasses.Field[Any]]:
    return [f for f in dataclasses.fields(BenchmarkSpec) if f.init]


def allowed_keywords() -> str:
    """The marker's keywords, derived from the dataclass (no hand-kept list)."""
    return ", ".join(f.name for f in _keywords())


def marker_signature() -> str:
    """The marker's signature for `pytest --markers`."""
    return f"{MARKER}({', '.join(f'{f.name}={f.default!r}' for f in _keywords())})"
