"""The fresh-process compiles in pytest-html's report: one table, plain HTML (no script, nothing fetched).

A row per case compiled cold and warm (`compile_time=True`): the median CPU
seconds of each side, what each side's caches did (`FX 0/2/0 AOT 0/1/0`,
hits/misses/bypasses) and, under the gate, the verdict of its compile rows
with what moved.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from ..facts.block import FACT_METRICS
from ..gate import CaseVerdict, Verdict, worst
from ..record import COMPILE_TIMES, MeasuredCase
from .table import fmt_seconds

HEADER = ("case", "cold CPU", "warm CPU", "cold caches", "warm caches", "verdict", "what moved")


def compile_table(cases: Sequence[MeasuredCase], verdicts: Sequence[CaseVerdict]) -> str:
    """An HTML fragment: the table, or '' when no case compiled in fresh processes."""
    by_case = {v.case: v for v in verdicts}
    rows = [
        _cells(c, by_case.get(c.key))
        for c in sorted(cases, key=lambda c: c.key)
        if c.record.compile
    ]
    if not rows:
        return ""
    head = "".join(f"<th>{escape(h)}</th>" for h in HEADER)
    body = "".join("<tr>" + "".join(f"<td>{escape(c)}</td>" for c in row) + "</tr>" for row in rows)
    return (
        '<div class="ptc-compile-time"><p>torch.compile: cold and warm compiles, each in a fresh process</p>'
        f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>"
    )


def _cells(case: MeasuredCase, verdict: CaseVerdict | None) -> tuple[str, ...]:
    block, metrics = case.record.compile, case.record.metrics
    assert block is not None
    cpu = tuple(fmt_seconds(metrics[m].median) if m in metrics else "-" for m in COMPILE_TIMES)
    judged, moved = "not gated", ""
    if verdict is not None:
        rows = [r for r in verdict.rows if r.metric in (*FACT_METRICS, *COMPILE_TIMES)]
        judged = worst(r.verdict for r in rows if r.verdict is not Verdict.NOT_GATED).value
        moved = "; ".join(r.note for r in rows if r.verdict is Verdict.FAIL and r.note)
    return (case.key, *cpu, block.cold.summary(), block.warm.summary(), judged, moved)
