"""Which changed cases of a test pass as text only, and which still fail.

A case whose stored and new snapshots print the same program otherwise
(renumbered FX names, renamed kernels with the same code, relabelled guards)
is not a regression: by default it passes, and the run says so. It passes
only when its verdict was reached by reading every changed artifact for
behaviour: an artifact the verdict cannot read (`transformed_code`,
`program`, `runtime_wrapper`) or holds on one side only, or a counter one
summary does not state, keeps its case failing, so a text-only pass never
stands in for a change nobody read.
A case with a missing or unreadable file fails whole. Pure: no torch or
pytest.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..files.outcome import Outcome, Status
from .behaviour import TEXT, CaseDiff
from .changes import ChangedCases

#: the finding of an artifact the verdict has no reading for (behaviour.py)
UNREAD = "unread text"


@dataclass(frozen=True)
class TextOnly:
    """One case that changed in text only: its folder label ('' for a test's only case) and why."""

    case: str
    reason: str  # the verdict line: `text only: guards relabelled, FX renumbering`
    outcomes: tuple[Outcome, ...]


def split(changed: ChangedCases) -> tuple[list[TextOnly], ChangedCases]:
    """(the cases that changed in text only, every other case with its verdict)."""
    outcomes = changed.outcomes
    failing_otherwise = {o.case for o in outcomes if o.failed and o.status is not Status.CHANGED}
    text_only = [
        TextOnly(
            case,
            diff.line(),
            tuple(o for o in outcomes if o.case == case and o.status is Status.CHANGED),
        )
        for case, diff in changed.diffs.items()
        if case not in failing_otherwise and passes(diff)
    ]
    return text_only, changed.without({t.case for t in text_only})


def passes(diff: CaseDiff) -> bool:
    """Text only, every changed artifact read for behaviour on both sides, and every counter
    stated by both summaries (a summary cut short states fewer: its counters were not compared)."""
    return (
        diff.verdict == TEXT
        and not any(f.topic == UNREAD or " only in " in f.topic for f in diff.findings)
        and all((old is None) == (new is None) for old, new in diff.counters.values())
    )
