"""The end-of-run table: one row per case, the counters a reviewer scans."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from ..common.terminal import align

HEADER = ("case", "graphs", "breaks", "recompiles", "kernels", "compile s")
#: under the table: which of the two compile times on screen this one is
COMPILE_TIME_NOTE = (
    "compile s: Dynamo's own compile time of the case's frames (torch's entire_frame_compile_time_s); "
    "a progress line's `done in` is the whole first call by the wall clock (tracing, compiling, "
    "capturing the artifacts, running, and waiting for a CPU)"
)


@dataclass(frozen=True)
class CaseRow:
    """One case's counters; plain data so it travels from xdist workers."""

    nodeid: str
    case: str
    graphs: int
    breaks: int
    recompiles: int
    kernels: int
    compile_seconds: float

    def to_json(self) -> dict[str, object]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> CaseRow:
        return cls(**data)

    def cells(self, single: bool) -> tuple[str, ...]:
        label = self.nodeid if single else f"{self.nodeid} [{self.case}]"
        return (
            label,
            str(self.graphs),
            str(self.breaks),
            str(self.recompiles),
            str(self.kernels),
            f"{self.compile_seconds:.1f}",
        )


def format_table(rows: list[CaseRow]) -> list[str]:
    """Left-aligned first column, right-aligned numbers, and what `compile s` is."""
    per_test: dict[str, int] = {}
    for row in rows:
        per_test[row.nodeid] = per_test.get(row.nodeid, 0) + 1
    body = [
        row.cells(per_test[row.nodeid] == 1)
        for row in sorted(rows, key=lambda r: (r.nodeid, r.case))
    ]
    return [*align(HEADER, body, numbers_right=True), COMPILE_TIME_NOTE]


PRECOMPILE_HEADER = ("case", "artifact KiB", "aot_compile s", "save s", "load s", "calls")


@dataclass(frozen=True)
class PrecompileRow:
    """One case's precompile round trip (`precompile=True`): size and seconds, which vary
    between runs and so stay out of the snapshots. `load_seconds` is the first load,
    timed inside the fresh process."""

    nodeid: str
    case: str
    artifact_bytes: int
    compile_seconds: float
    save_seconds: float
    load_seconds: float
    calls: int

    def to_json(self) -> dict[str, object]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> PrecompileRow:
        return cls(**data)

    def cells(self) -> tuple[str, ...]:
        return (
            f"{self.nodeid} [{self.case}]",
            f"{self.artifact_bytes / 1024:.1f}",
            f"{self.compile_seconds:.2f}",
            f"{self.save_seconds:.3f}",
            f"{self.load_seconds:.2f}",
            str(self.calls),
        )


def format_precompile_table(rows: list[PrecompileRow]) -> list[str]:
    return align(
        PRECOMPILE_HEADER,
        [row.cells() for row in sorted(rows, key=lambda r: (r.nodeid, r.case))],
        numbers_right=True,
    )
