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

from collections.abc import Sequence
from dataclasses import dataclass

from ..files.store import Outcome
from .behaviour import TEXT, CaseDiff
from .failure import Change, case_diffs

#: the finding of an artifact the verdict has no reading for (behaviour.py)
UNREAD = "unread text"


@dataclass(frozen=True)
class TextOnly:
    """One case that changed in text only: its folder label ('' for a test's only case) and why."""

    case: str
    reason: str  # the verdict line: `text only: guards relabelled, FX renumbering`
    outcomes: tuple[Outcome, ...]


def split(outcomes: Sequence[Outcome]) -> tuple[list[TextOnly], list[Outcome]]:
    """(the cases that changed in text only, the outcomes of every other case)."""
    changes = [
        Change(o.case, o.artifact, o.path.name, o.old, o.new)
        for o in outcomes
        if o.status == "changed" and o.old is not None and o.new is not None
    ]
    failing_otherwise = {o.case for o in outcomes if o.failed and o.status != "changed"}
    diffs = case_diffs(changes, outcomes)
    text_only = [
        TextOnly(
            case,
            diff.line(),
            tuple(o for o in outcomes if o.case == case and o.status == "changed"),
        )
        for case, diff in diffs.items()
        if case not in failing_otherwise and passes(diff)
    ]
    passing = {t.case for t in text_only}
    return text_only, [o for o in outcomes if o.case not in passing]


def passes(diff: CaseDiff) -> bool:
    """Text only, every changed artifact read for behaviour on both sides, and every counter
    stated by both summaries (a summary cut short states fewer: its counters were not compared)."""
    return (
        diff.verdict == TEXT
        and not any(f.topic == UNREAD or " only in " in f.topic for f in diff.findings)
        and all((old is None) == (new is None) for old, new in diff.counters.values())
    )
