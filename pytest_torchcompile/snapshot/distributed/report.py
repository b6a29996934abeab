"""What one rank sends back: its artifacts, counters and verdicts, as plain data in a file.

A rank writes its `RankReport` when it is done (or when its case failed:
`failure` says why, in the words a test failure uses; `error` is a crash
of the plugin's or the user's code, with its traceback). The parent reads
the reports of all ranks once every rank has exited.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: the files of a case's folder: what every rank reads, and what each writes
SETUP_FILE, REQUEST_FILE, REPORT_FILE = "setup.json", "request.pkl", "rank{rank}.report"
#: written by a rank once it joined the process group: the case's timeout starts when all have
JOINED_FILE = "rank{rank}.joined"


@dataclass(frozen=True)
class Share:
    """How much of the model ran compiled: ops in compiled graphs, as often as each ran, against
    the torch calls the model's forward makes in eager (capped at all of them)."""

    compiled: int
    model: int

    @property
    def fraction(self) -> float:
        return min(1.0, self.compiled / self.model) if self.model else 1.0

    def line(self) -> str:
        return f"{min(self.compiled, self.model)} of the model's {self.model} ({self.fraction:.0%})"


@dataclass
class RankReport:
    """One rank's outcome: artifact texts (as stored) and counters, or why it failed."""

    rank: int
    texts: Mapping[str, str] = field(default_factory=dict)
    #: the summary, stored or not (`artifacts=()`): every rank's is compared with rank 0's
    summary: str = ""
    counters: Mapping[str, int] = field(default_factory=dict)
    device_key: str = "cpu"
    compile_seconds: float = 0.0
    buckets: int = 0
    share: Share = field(default_factory=lambda: Share(0, 0))
    #: the numerics check's failure text (compiled against eager on this rank), None when it passed
    numerics: str | None = None
    #: why the case failed on this rank (a compile failure, a usage error), None when it ran
    failure: str | None = None
    #: an unexpected exception (the plugin's or the model's), with its traceback
    error: str | None = None
    output: Any = None
    eager_output: Any = None

    def compared(self) -> dict[str, str]:
        """What the ranks must agree on: the stored texts and the summary."""
        return {"summary": self.summary, **self.texts}

    @property
    def ran(self) -> bool:
        """The case ran on this rank (its verdicts may still fail it)."""
        return self.failure is None and self.error is None

    def save(self, folder: Path) -> None:
        import torch

        path = folder / REPORT_FILE.format(rank=self.rank)
        temp = path.with_suffix(".tmp")
        torch.save(self, temp)
        temp.replace(path)  # the parent never reads half a report

    @staticmethod
    def load(folder: Path, rank: int) -> RankReport | None:
        import torch

        path = folder / REPORT_FILE.format(rank=rank)
        if not path.is_file():
            return None
        report: RankReport = torch.load(path, weights_only=False)
        return report
