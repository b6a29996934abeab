"""The perf gate as a picture: each case's speedup against its baseline, drawn by matplotlib.

One row per gated case: the change of the speedup (now / baseline - 1) as a
dot, its confidence interval as a bar, the baseline (no change) as a line
and the case's threshold as a mark, coloured by the verdict. The chart is an
inline SVG (no script, nothing fetched), so it draws offline inside
pytest-html's report. matplotlib is optional: without it `speedup_chart`
says how to get the chart instead.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

from ..gate import CaseVerdict, Row, Verdict

COLOURS = {Verdict.PASS: "#198754", Verdict.FAIL: "#dc3545", Verdict.INCONCLUSIVE: "#d39e00"}
METRIC = "speedup"


@dataclass(frozen=True)
class Bar:
    """One case's speedup row, as the chart draws it (changes as fractions: -0.2 is 20% slower)."""

    case: str
    baseline: float
    now: float
    change: float
    ci: tuple[float, float]
    threshold: float
    verdict: Verdict


def bars(verdicts: Sequence[CaseVerdict], default_threshold: float) -> list[Bar]:
    """The speedup rows the gate compared with a baseline (a case without one has nothing to draw)."""
    found = []
    for v in verdicts:
        row = next((r for r in v.rows if r.metric == METRIC), None)
        threshold = v.threshold if v.threshold is not None else default_threshold
        bar = _bar(v.case, row, threshold) if row is not None else None
        if bar is not None:
            found.append(bar)
    return found


def _bar(case: str, row: Row, threshold: float) -> Bar | None:
    base, now, change, ci = row.baseline, row.now, row.change, row.ci
    if not (isinstance(base, (int, float)) and isinstance(now, (int, float))):
        return None
    if change is None or ci is None or row.verdict not in COLOURS:
        return None
    return Bar(case, float(base), float(now), change, ci, threshold, row.verdict)


def speedup_chart(verdicts: Sequence[CaseVerdict], default_threshold: float) -> str:
    """An HTML fragment: the chart as inline SVG, or a line saying why there is none."""
    drawn = bars(verdicts, default_threshold)
    if not drawn:
        return '<p class="ptc-perf-chart">perf gate: no case with a baseline to draw</p>'
    try:
        svg = _svg(drawn)
    except ImportError:
        return (
            '<p class="ptc-perf-chart">perf gate chart: needs matplotlib '
            "(pip install 'pytest-torchcompile[html]')</p>"
        )
    title = "perf gate: speedup of each case against its baseline"
    return f'<div class="ptc-perf-chart" style="display: inline-block" title="{escape(title)}">{svg}</div>'


def _svg(drawn: Sequence[Bar]) -> str:
    from matplotlib.figure import Figure  # not pyplot: no backend, no global state touched

    height = 1.5 + 0.45 * len(drawn)
    figure = Figure(figsize=(10, height))
    axes = figure.subplots()
    for y, bar in enumerate(reversed(drawn)):
        colour = COLOURS[bar.verdict]
        low, high = (100 * x for x in bar.ci)
        axes.plot([low, high], [y, y], color=colour, linewidth=4, solid_capstyle="butt")
        axes.plot([100 * bar.change], [y], "o", color="black", markersize=5)
        axes.plot([-100 * bar.threshold] * 2, [y - 0.35, y + 0.35], color="#6c757d", linewidth=2)
        label = f"{bar.verdict.value}  speedup {bar.baseline:.3g}x -> {bar.now:.3g}x"
        axes.annotate(
            label, (1.01, y), xycoords=("axes fraction", "data"), va="center", color=colour
        )
    axes.axvline(0, color="black", linewidth=1)
    axes.set_yticks(range(len(drawn)), [b.case for b in reversed(drawn)], fontsize=8)
    axes.set_ylim(-0.7, len(drawn) - 0.3)
    axes.set_xlabel(
        "speedup change vs baseline, % (bar: confidence interval; grey mark: threshold)"
    )
    figure.subplots_adjust(left=0.34, right=0.7, bottom=0.7 / height, top=1 - 0.2 / height)
    out = io.StringIO()
    figure.savefig(out, format="svg", metadata={"Date": None})
    svg = out.getvalue()
    return svg[svg.index("<svg") :]  # without the XML declaration and DOCTYPE: inline in HTML
