"""Snapshot differences as HTML: side-by-side diffs (difflib's `HtmlDiff`) with their verdicts.

`failure_fragment` is what a failing snapshot test adds to pytest-html's
report; `report_page` is the `diff` command's page (`--html PATH`). Both are
self-contained (styles inline, no script, nothing fetched), so a page opens
offline and in a CI artifact viewer. Pure: text in, HTML out.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from html import escape
from pathlib import Path

from ..artifacts.catalogue import ARTIFACTS
from .behaviour import BEHAVIOUR, TEXT, UNCHANGED, CaseDiff
from .changes import ChangedCases
from .findings import ranked
from .lines import LONG_LINE, split_arguments
from .ranking import Folding, SharedCause
from .upgrade import ONLY_NEW, ONLY_OLD, CaseReport, Report, folding, read_case, tiered

#: columns before difflib wraps a line (the two sides fit a laptop screen).
WRAP = 80
#: table rows of one artifact's diff before its further hunks are left out.
MAX_ROWS = 200
#: findings listed open above the diffs; the rest are folded under a <details>, never dropped
SHOWN_FINDINGS = 12
VERDICT_CLASS = {
    BEHAVIOUR: "behaviour",
    TEXT: "text",
    UNCHANGED: "unchanged",
    ONLY_OLD: "one-side",
    ONLY_NEW: "one-side",
}
STYLE = """
.ptc {font-family: system-ui, sans-serif; font-size: 14px}
.ptc h1 {font-size: 20px} .ptc h2 {font-size: 16px; margin-top: 1.5em}
.ptc .verdict {display: inline-block; padding: 1px 8px; border-radius: 4px; font-weight: 600}
.ptc .behaviour {background: #f8d7da; color: #721c24} .ptc .text {background: #fff3cd; color: #664d03}
.ptc .unchanged {background: #d1e7dd; color: #0f5132} .ptc .one-side {background: #e2e3e5; color: #41464b}
.ptc table.cases {border-collapse: collapse} .ptc table.cases td, .ptc table.cases th {padding: 2px 10px;
  border-bottom: 1px solid #ddd; text-align: left}
.ptc ul.findings {font-family: ui-monospace, monospace; font-size: 12px}
.ptc details.more-findings summary {cursor: pointer; font-size: 13px}
.ptc p.headline {font-family: ui-monospace, monospace; font-size: 13px; font-weight: 600}
.ptc table.counters {border-collapse: collapse; font-size: 13px}
.ptc table.counters td, .ptc table.counters th {padding: 1px 10px; border-bottom: 1px solid #ddd}
.ptc table.diff {font-family: ui-monospace, monospace; font-size: 12px; border-collapse: collapse;
  margin: 6px 0 16px}
.ptc table.diff td {padding: 0 4px; vertical-align: top; white-space: pre}
.ptc td.more {font-style: italic; color: #555; padding: 4px}
.ptc table.diff th {background: #eee; font-weight: 600; padding: 2px 6px}
.ptc td.diff_header {color: #888; text-align: right} .ptc td.diff_next {background: #f6f6f6}
.ptc .diff_add {background: #cfc} .ptc .diff_chg {background: #ffa} .ptc .diff_sub {background: #fcc}
"""


def side_by_side(old: str, new: str, old_label: str, new_label: str, rows: int = MAX_ROWS) -> str:
    """A two-column diff table of `old` and `new`: changed lines with 3 lines of context.

    Hunks after the first `rows` table rows are left out, whole, and a last
    row says how many (a torch upgrade can reword every guard of a file).
    difflib escapes the lines but puts the labels in as markup: they are
    escaped here (a file name comes from whoever wrote the snapshot folder).
    """
    differ = difflib.HtmlDiff(wrapcolumn=WRAP)
    labels = escape(old_label), escape(new_label)
    table = differ.make_table(_broken(old), _broken(new), *labels, context=True, numlines=3)
    table = table.replace(
        "&nbsp;", " "
    )  # the cells keep spaces (white-space: pre): a third smaller
    return _first_hunks(table, rows)


def _broken(text: str) -> list[str]:
    """Lines, each longer than `LONG_LINE` broken before each of its arguments (continuations
    indented with `..`), so that a changed argument of a long signature is one short row."""
    lines: list[str] = []
    for line in text.splitlines():
        parts = split_arguments(line) if len(line) > LONG_LINE else [line]
        lines += parts[:1] + ["    .. " + p for p in parts[1:]]
    return lines


def first_screen(diff: CaseDiff, findings: bool = True) -> list[str]:
    """What a reviewer decides on, above any diff: the headline sentence, the counters that
    moved (old and new), then the behaviour findings (changed shapes first) whole."""
    parts = [f'<p class="headline">{escape(diff.headline())}</p>']
    moved = [(name, old, new) for name, (old, new) in diff.counters.items() if old != new]
    if moved:
        rows = "".join(
            f"<tr><td>{escape(name)}</td><td>{escape(str(old))}</td><td>{escape(str(new))}</td></tr>"
            for name, old, new in moved
        )
        header = "<tr><th>counter</th><th>snapshot</th><th>this run</th></tr>"
        parts.append(f'<table class="counters">{header}{rows}</table>')
    found = [f.render() for f in ranked(f for f in diff.findings if f.behaviour and findings)]
    if found:
        parts.append(findings_list(found, "findings changes"))
    return parts


def findings_list(lines: Sequence[str], css: str) -> str:
    """Every line as a list item: the first `SHOWN_FINDINGS` open, the rest folded under a
    `<details>` that says how many it holds (closed, never dropped: the one finding that names
    the change may be the 26th)."""
    items = lambda part: "".join(f"<li>{escape(line)}</li>" for line in part)  # noqa: E731
    shown = f'<ul class="{css}">{items(lines[:SHOWN_FINDINGS])}</ul>'
    rest = lines[SHOWN_FINDINGS:]
    if not rest:
        return shown
    return (
        f'{shown}<details class="more-findings"><summary>{len(rest)} more finding'
        f'{"s" if len(rest) > 1 else ""} (of {len(lines)})</summary><ul class="{css}">{items(rest)}</ul></details>'
    )


def _first_hunks(table: str, rows: int) -> str:
    """The table with the hunks (difflib's `<tbody>`s) that start within its first `rows` rows."""
    head, *hunks = table.split("<tbody>")
    kept, seen = [], 0
    for hunk in hunks:
        if seen >= rows:
            break
        kept.append(hunk)
        seen += hunk.count("<tr>")
    if len(kept) == len(hunks):
        return table
    left = len(hunks) - len(kept)
    note = (
        f'<tbody><tr><td colspan="6" class="more">{left} more changed hunk{"s" if left > 1 else ""} '
        "not shown here: compare the two files</td></tr></tbody></table>"
    )
    return "<tbody>".join([head, *kept]).rsplit("</tbody>", 1)[0] + "</tbody>" + note


def verdict_badge(verdict: str) -> str:
    return f'<span class="verdict {VERDICT_CLASS.get(verdict, "")}">{escape(verdict)}</span>'


def failure_fragment(changed: ChangedCases) -> str:
    """One failing test's changed cases: each case's verdict line, then its changed artifacts side by side."""
    parts = [f"<style>{STYLE}</style>", '<div class="ptc">']
    for case, diff in changed.diffs.items():
        mine = [c for c in changed.changes if c.case == case]
        title = f"case {case}: " if case else ""
        moved = diff.line().removeprefix(diff.verdict).removeprefix(": ")
        parts.append(f"<h2>{escape(title)}{verdict_badge(diff.verdict)} {escape(moved)}</h2>")
        parts += first_screen(diff)
        for c in sorted(mine, key=lambda c: c.stage):
            parts.append(f"<h3>{escape(c.filename)}</h3>")
            parts.append(side_by_side(c.old, c.new, "snapshot", "this run"))
    parts.append("</div>")
    return "\n".join(parts)


def report_page(report: Report) -> str:
    """The `diff` command's report as one self-contained page: causes, ranked cases, their diffs."""
    folded = folding(report)
    ordered = tiered(report, folded)
    body = [
        f"<h1>Snapshot diff: {escape(report.old)} (OLD) &rarr; {escape(report.new)} (NEW)</h1>",
        f'<p class="totals">{escape(report.total_line())}</p>',
        *_causes(folded.causes),
        *_case_table(ordered),
    ]
    for _, case in ordered:
        body += _case_section(report, case, folded)
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>Snapshot diff</title><style>{STYLE}</style></head>"
        f'<body class="ptc">\n' + "\n".join(body) + "\n</body></html>\n"
    )


def _causes(causes: Sequence[SharedCause]) -> list[str]:
    if not causes:
        return []
    items = "".join(f"<li>{escape(c.render())}</li>" for c in causes)
    return ["<h2>Shared by several cases</h2>", f'<ul class="findings causes">{items}</ul>']


def _case_table(ordered: Sequence[tuple[str, CaseReport]]) -> list[str]:
    rows = "".join(
        f'<tr><td><a href="#{_anchor(c.case)}">{escape(c.case)}</a></td><td>{escape(moved)}</td>'
        f"<td>{verdict_badge(c.verdict)}</td></tr>"
        for moved, c in ordered
    )
    header = "<tr><th>case</th><th>what moved</th><th>verdict</th></tr>"
    return [
        "<h2>Cases, what to read first at the top</h2>",
        f'<table class="cases">{header}{rows}</table>',
    ]


def _case_section(report: Report, case: CaseReport, folded: Folding) -> list[str]:
    """A changed case: its own findings (shared causes are said above), then side by side the artifacts its behaviour findings name.

    Artifacts that changed in text only are named, not drawn: on a torch
    upgrade they are most of the bytes and none of the news.
    """
    if case.verdict == UNCHANGED:
        return []
    anchor = _anchor(case.case)
    section = [f'<h2 id="{anchor}">{escape(case.case)} {verdict_badge(case.verdict)}</h2>']
    named: set[str] = set()
    if case.diff is not None:
        section.append(f"<p>{escape(case.diff.line())}</p>")
        section += first_screen(case.diff, findings=False)  # its own findings follow
        own = [*folded.own.get(case.case, ()), *folded.own_text.get(case.case, ())]
        section.append(findings_list(own or ["nothing of its own"], "findings"))
        named = {a for f in case.diff.findings if f.behaviour for a in f.artifacts}
    old, new = (_texts(Path(root) / case.case) for root in (report.old, report.new))
    changed = sorted((n for n in set(old) | set(new) if old.get(n) != new.get(n)), key=_stage)
    drawn = [n for n in changed if n in named or case.diff is None or n == "summary"]
    for name in drawn:
        labels = f"{name} (OLD)", f"{name} (NEW)"
        section += [
            f"<h3>{escape(name)}</h3>",
            side_by_side(old.get(name, ""), new.get(name, ""), *labels),
        ]
    text_only = [n for n in changed if n not in drawn]
    if text_only:
        section.append(f"<p>also changed, text only: {escape(', '.join(text_only))}</p>")
    return section


def _texts(folder: Path) -> dict[str, str]:
    return read_case(folder) if folder.is_dir() else {}


def _stage(artifact: str) -> int:
    known = ARTIFACTS.get(artifact)
    return known.stage if known is not None else max(a.stage for a in ARTIFACTS.values()) + 1


def _anchor(case: str) -> str:
    return "case-" + "".join(ch if ch.isalnum() else "-" for ch in case)
