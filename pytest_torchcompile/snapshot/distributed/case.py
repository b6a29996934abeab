"""One case of `compile_distributed`: the ranks run, their reports judged in order.

A case fails on the first of: a rank that crashed, failed or hung
(`launch.py`); a rank that compiled differently from rank 0 (`agreement.py`);
a rank whose compiled results differ from eager's; a compile that covers
(almost) nothing of the model. Otherwise its result holds rank 0's
artifacts, which the session stores and compares as any case's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ...common.named_cases import CaseFailure
from ...common.terminal import Progress
from ..spec import CompileSpec
from .agreement import disagreement
from .launch import RanksFailed, run_ranks
from .report import RankReport
from .request import DistributedCall, RankRequest, check_spec, pickled
from .result import DistributedResult


@dataclass
class DistributedCase:
    """A model factory run on `world_size` ranks under a wrapper; `result` once it passed."""

    spec: CompileSpec
    name: str
    call: DistributedCall
    rootdir: str
    progress: Progress = field(default_factory=Progress)
    full_diff: bool = False
    result: DistributedResult | None = None
    #: what the session's end-of-run tables read of a case (a distributed case has no round trip)
    round_trip: Any = None

    @property
    def compile_seconds(self) -> float:
        return self.result.compile_seconds if self.result is not None else 0.0

    def start(self) -> DistributedResult:
        check_spec(self.spec)
        from ..._torch.distributed import backend_for

        backend = backend_for(self.call.device)
        request = pickled(RankRequest(self.call, self.spec, self.rootdir))
        doing = f"running {self.call.world_size} ranks ({backend}, {self.call.wrapper_name})"
        with self.progress.stage(doing):
            try:
                reports = run_ranks(request, self.call.world_size, backend, self.call.timeout_s)
            except RanksFailed as exc:
                raise CaseFailure(str(exc)) from None
        self.result = self._judged(reports, backend)
        return self.result

    def _judged(self, reports: list[RankReport], backend: str) -> DistributedResult:
        differs = disagreement([r.compared() for r in reports], self.full_diff)
        if differs is not None:
            raise CaseFailure(differs)
        failing = [r for r in reports if r.numerics is not None]
        if failing:
            raise CaseFailure("\n".join(f"rank {r.rank}: {r.numerics}" for r in failing))
        share = reports[0].share
        if share.fraction < self.call.min_share:
            raise CaseFailure(_too_little(share.line(), self.call))
        return DistributedResult.from_reports(reports, backend, self.call.wrapper_name)

    def device_key(self) -> str:
        """The `{device}` of its snapshot folder: where rank 0 ran."""
        return self.result.device_key if self.result is not None else "cpu"

    def close(self) -> None:
        """Nothing outlives the case: its ranks and their folder are gone once it ran."""


def _too_little(share: str, call: DistributedCall) -> str:
    return (
        f"compiled almost nothing: of the ops the model's forward runs, {share} ran in compiled "
        f"code, under min_compiled_share={call.min_share:g} (wrapper={call.wrapper_name!r}); the "
        "summary's graph breaks (those inside torch's wrappers marked [DDP: ...], [FSDP: ...]) and "
        "frames say where compiling stopped. To record the case as it is, pass min_compiled_share=0."
    )
