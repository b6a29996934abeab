"""A case's artifacts and frames as of one call, built when first read.

Laying out and normalizing artifacts (depyf's decompilation and the
`program` above all) costs more than a small compile, and a case may be
called many times: `CaseArtifacts` builds an artifact only when it is read,
which for most calls is never, and for the last one is when snapshots are
compared. It reads a frozen copy of the capture as it was after its call,
so an earlier `CompileResult` keeps showing its own call's artifacts.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from ...common.capture_log import CaptureLog
from ...common.counters import Counters
from .catalogue import ARTIFACTS, DEFAULT_ARTIFACTS, FRAME_ARTIFACTS, Artifact, CaseCapture
from .normalize import Normalizer


@dataclass(frozen=True)
class FrameResult:
    """One Dynamo frame compile and the artifacts it produced (normalized)."""

    frame_id: int
    compile_id: int
    name: str
    artifacts: Mapping[str, str]


class CaseArtifacts(Mapping[str, str]):
    """artifact name -> normalized text as snapshotted: the requested ones, or all produced but the opt-in ones."""

    def __init__(
        self,
        capture: CaseCapture,
        backend: str,
        names: tuple[str, ...] | None,
        normalizer: Normalizer,
    ) -> None:
        self._capture, self._backend, self._normalizer = capture, backend, normalizer
        wanted = (
            [ARTIFACTS[n] for n in names]
            if names is not None
            else [a for a in DEFAULT_ARTIFACTS if a.produced(capture.log)]
        )
        self._wanted: dict[str, Artifact] = {a.name: a for a in wanted}
        self._texts: dict[str, str] = {}

    def __getitem__(self, name: str) -> str:
        if name not in self._wanted:
            raise KeyError(self._missing(name))
        if name not in self._texts:
            self._texts[name] = self._wanted[name].text(
                self._capture, self._backend, self._normalizer
            )
        return self._texts[name]

    def _missing(self, name: object) -> str:
        """Why `name` is not here, and how to get it."""
        held = f"this case holds {', '.join(self._wanted) or 'no artifact'}"
        known = next((a for a in ARTIFACTS.values() if name in (a.name, a.filename)), None)
        if known is None:
            return (
                f"{name!r} is not an artifact name ({held}; artifact names: {', '.join(ARTIFACTS)})"
            )
        if known.name != name:
            return f"{name!r} is a file name: use the artifact name {known.name!r} ({held})"
        if known.opt_in:
            return f"{name!r} is opt-in: name it in compile_snapshot(artifacts=(...)) to have it ({held})"
        return f"{name!r} was not produced by backend {self._backend!r}, or not asked for in artifacts= ({held})"

    def __iter__(self) -> Iterator[str]:
        return iter(self._wanted)

    def __len__(self) -> int:
        return len(self._wanted)

    def __repr__(self) -> str:
        return f"CaseArtifacts({list(self._wanted)}, built: {list(self._texts)})"


def frame_results(
    log: CaptureLog, counted: Counters, backend: str, normalizer: Normalizer
) -> tuple[FrameResult, ...]:
    """One record per frame compile with its per-frame artifacts (the common rules only: the text as
    Dynamo printed it, not the stored compact form)."""
    frames = []
    for fc in counted.frames:
        own = log.only(fc.key)
        texts = {
            a.name: normalizer(a.build(CaseCapture(own), backend))
            for a in FRAME_ARTIFACTS
            if a.produced(own)
        }
        frames.append(FrameResult(fc.key.frame_id, fc.key.compile_id, normalizer(fc.name), texts))
    return tuple(frames)
