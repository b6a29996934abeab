"""The upgrade report: two snapshot sets compared case by case, as text, Markdown or JSON.

A snapshot set is a folder laid out as the plugin writes it,
`<root>/<test file>/<test>[/<case>]/<artifact>.<ext>`; a case is any folder
that holds artifact files (`summary.txt`, `guards.guards.txt`, ...). Each case
found on either side is compared with `behaviour.compare_case`. The report
opens with the totals and one row of counters per case, cases in reading
order (`tiered`: counters moved first, text only last), each said by its
verdict line's words, the same as the test's verdict (`ranking.label`); then the
causes many cases share, each said once with its count (`ranking.fold`);
then what each case has of its own. The part above the cases fits one
screen for a suite of a dozen cases; a long finding wraps between words and
is never cut. Markdown says the same; JSON holds everything.
"""

from __future__ import annotations

import json
import textwrap
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from ..artifacts.legend import without_legend
from ..spec import ARTIFACT_EXTENSIONS
from .behaviour import BEHAVIOUR, COUNTERS, TEXT, UNCHANGED, CaseDiff, compare_case
from .ranking import TIERS, Folding, fold, tier
from .ranking import label as moved_label

ONLY_OLD = "only in OLD"
ONLY_NEW = "only in NEW"
ONE_SIDE = "on one side only"
SHARED_TITLE = "shared by several cases (said once here, not under each case)"
VERDICTS = (BEHAVIOUR, TEXT, UNCHANGED, ONLY_OLD, ONLY_NEW)
_FILENAMES = {f"{name}.{ext}": name for name, ext in ARTIFACT_EXTENSIONS.items()}
_WIDTH = 160


class SnapshotSetError(ValueError):
    """A folder given to the report is missing or holds no snapshot case."""


@dataclass(frozen=True)
class CaseReport:
    """One case: its id (folder relative to the set's root), verdict and, when on both sides, its diff."""

    case: str
    verdict: str
    diff: CaseDiff | None = None
    counters: dict[str, str | None] | None = None  # for a case on one side only


@dataclass(frozen=True)
class Report:
    old: str
    new: str
    cases: tuple[CaseReport, ...]

    def totals(self) -> dict[str, int]:
        return {v: n for v in VERDICTS if (n := sum(c.verdict == v for c in self.cases))}

    def total_line(self) -> str:
        counts = self.totals()
        parts = [f"{counts.get(v, 0)} {v}" for v in (BEHAVIOUR, TEXT, UNCHANGED)]
        parts += [f"{counts[v]} {v}" for v in (ONLY_OLD, ONLY_NEW) if v in counts]
        return f"{len(self.cases)} cases: " + ", ".join(parts)


def find_cases(root: Path) -> dict[str, Path]:
    """Case id (`fixtures/test_zoo/test_mlp`) -> folder, for every folder under `root` holding an artifact file."""
    if not root.is_dir():
        raise SnapshotSetError(
            f"{root}: no such folder (give the folder that holds the snapshot set, e.g. snapshots)"
        )
    folders = sorted({p.parent for p in root.rglob("*") if p.name in _FILENAMES and p.is_file()})
    if not folders:
        known = ", ".join(sorted(_FILENAMES)[:3])
        raise SnapshotSetError(
            f"{root}: no snapshot case found (a case is a folder holding artifact files such as {known})"
        )
    return {p.relative_to(root).as_posix(): p for p in folders}


def read_case(folder: Path) -> dict[str, str]:
    """Artifact name -> text for the files of one case folder (an unknown file is keyed by its file name)."""
    texts = {}
    for path in sorted(folder.iterdir()):
        if path.is_file() and not path.name.startswith("."):
            texts[_FILENAMES.get(path.name, path.name)] = without_legend(
                path.read_bytes().decode("utf-8", errors="replace")
            )
    return texts


def compare_sets(old_root: Path, new_root: Path) -> Report:
    """Every case of either set, compared; raises SnapshotSetError on a missing or empty set."""
    old, new = find_cases(old_root), find_cases(new_root)
    cases = []
    for case in sorted(set(old) | set(new)):
        if case not in new:
            cases.append(CaseReport(case, ONLY_OLD, counters=_one_side(read_case(old[case]))))
        elif case not in old:
            cases.append(CaseReport(case, ONLY_NEW, counters=_one_side(read_case(new[case]))))
        else:
            diff = compare_case(read_case(old[case]), read_case(new[case]))
            cases.append(CaseReport(case, diff.verdict, diff))
    return Report(str(old_root), str(new_root), tuple(cases))


def _one_side(texts: dict[str, str]) -> dict[str, str | None]:
    counters = compare_case(texts, texts).counters
    return {name: old for name, (old, _) in counters.items()}


# ---------------------------------------------------------------- rendering


def _cell(report: CaseReport, name: str) -> str:
    if report.diff is None:
        value = (report.counters or {}).get(name)
        return "-" if value is None else value
    old, new = report.diff.counters.get(name, (None, None))
    show = lambda v: "-" if v is None else v  # noqa: E731
    return show(old) if old == new else f"{show(old)} -> {show(new)}"


def _prefix(cases: Iterable[str]) -> str:
    """The folder all case ids share (`fixtures/test_zoo/`), said once instead of on every row."""
    parts = [c.split("/")[:-1] for c in cases]
    common = []
    for column in zip(*parts):
        if len(set(column)) != 1:
            break
        common.append(column[0])
    return "/".join(common) + "/" if common else ""


def folding(report: Report) -> Folding:
    """The shared causes of the report's changed cases, and what each case keeps as its own."""
    return fold(
        {c.case: c.diff for c in report.cases if c.diff is not None and c.verdict != UNCHANGED}
    )


def tiered(report: Report, folded: Folding | None = None) -> list[tuple[str, CaseReport]]:
    """Cases in reading order (heaviest tier first, then most own findings), each with what
    moved in it (`ranking.label`: its verdict line's words)."""
    folded = folded or folding(report)

    def rank(c: CaseReport) -> tuple[float, int, str]:
        if c.diff is None:
            return (0.5, 0, c.case)  # a case on one side only: right after moved counters
        return (tier(c.diff), -len(folded.own.get(c.case, ())), c.case)

    ordered = sorted(report.cases, key=rank)
    return [(ONE_SIDE if c.diff is None else moved_label(c.diff), c) for c in ordered]


def tier_name(case: CaseReport) -> str:
    """The tier that ordered `case` (`TIERS`), for tools reading the JSON."""
    return ONE_SIDE if case.diff is None else TIERS[tier(case.diff)]


def _wrapped(text: str, first: str, rest: str) -> list[str]:
    """`text` in lines of at most _WIDTH, broken between words: a long fact wraps, it is never cut."""
    return textwrap.wrap(
        text,
        _WIDTH,
        initial_indent=first,
        subsequent_indent=rest,
        break_long_words=False,
        break_on_hyphens=False,
    ) or [first.rstrip()]


def _details(case: CaseReport, folded: Folding) -> list[str]:
    """The lines under a case: its own behaviour findings, then its own text findings as one fact list."""
    lines = list(folded.own.get(case.case, ()))
    text = folded.own_text.get(case.case, [])
    if text:
        lines.append(("text: " if lines else "") + "; ".join(text))
    return lines


def render_text(report: Report) -> str:
    """The terminal report: totals, counters in reading order, shared causes once, then each case's own."""
    prefix = _prefix(c.case for c in report.cases)
    folded = folding(report)
    ordered = tiered(report, folded)
    header = ("case", *COUNTERS, "verdict")
    rows = [
        (c.case.removeprefix(prefix), *(_cell(c, n) for n in COUNTERS), c.verdict)
        for _, c in ordered
    ]
    widths = [max(len(r[i]) for r in (header, *rows)) for i in range(len(header))]
    fmt = lambda row: "  ".join(v.ljust(w) for v, w in zip(row, widths)).rstrip()  # noqa: E731
    lines = [
        f"snapshot diff: {report.old} (OLD) -> {report.new} (NEW)"
        + (f", cases under {prefix}" if prefix else ""),
        report.total_line(),
        "",
        fmt(header),
        *(fmt(r) for r in rows),
        "",
    ]
    if folded.causes:
        lines.append(f"{SHARED_TITLE}:")
        lines += [x for cause in folded.causes for x in _wrapped(cause.render(), "  ", "      ")]
    for label, case in ordered:
        lines += _case_lines(case, label, prefix, folded)
    lines.append(report.total_line())
    return "\n".join(lines) + "\n"


def _case_lines(case: CaseReport, label: str, prefix: str, folded: Folding) -> list[str]:
    details = _details(case, folded)
    head = f"{case.case.removeprefix(prefix)}: {case.verdict}"
    if case.verdict == TEXT and len(details) == 1:
        return _wrapped(f"{head}: {details[0]}", "", "    ")
    if not details:
        return [f"{head} ({label}): nothing of its own"] if case.verdict == BEHAVIOUR else []
    return [
        f"{head} ({label})" if case.verdict == BEHAVIOUR else head,
        *(x for d in details for x in _wrapped(d, "  - ", "      ")),
    ]


def render_markdown(report: Report) -> str:
    """The same report for a PR comment or `$GITHUB_STEP_SUMMARY`."""
    prefix = _prefix(c.case for c in report.cases)
    folded = folding(report)
    ordered = tiered(report, folded)
    title = f"**Snapshot diff** `{report.old}` -> `{report.new}`"
    lines = [title, "", report.total_line() + (f" (cases under `{prefix}`)" if prefix else ""), ""]
    lines.append("| case | " + " | ".join(COUNTERS) + " | verdict | first look |")
    lines.append("|---" * (len(COUNTERS) + 3) + "|")
    for label, c in ordered:
        verdict = f"**{c.verdict}**" if c.verdict == BEHAVIOUR else c.verdict
        lines.append(
            f"| `{c.case.removeprefix(prefix)}` | "
            + " | ".join(_cell(c, n) for n in COUNTERS)
            + f" | {verdict} | {label} |"
        )
    if folded.causes:
        lines += ["", f"{SHARED_TITLE}:", "", "```text"]
        lines += [f"- {cause.render()}" for cause in folded.causes]
        lines.append("```")
    for label, case in ordered:
        if case.verdict == BEHAVIOUR:
            lines += _md_block(case, label, prefix, folded)
    text_cases = [(label, c) for label, c in ordered if c.verdict == TEXT]
    if text_cases:
        lines += ["", f"<details><summary>Text only: {len(text_cases)} case(s)</summary>"]
        for label, case in text_cases:
            lines += _md_block(case, label, prefix, folded)
        lines += ["", "</details>"]
    return "\n".join(lines) + "\n"


def _md_block(case: CaseReport, label: str, prefix: str, folded: Folding) -> list[str]:
    details = _details(case, folded)
    if not details:
        return []
    return [
        "",
        f"`{case.case.removeprefix(prefix)}`: {case.verdict}"
        + (f" ({label})" if label != case.verdict else ""),
        "",
        "```text",
        *(f"- {d}" for d in details),
        "```",
    ]


def to_json(report: Report) -> str:
    """Everything, for tools: cases in reading order, the shared causes, each case's own findings."""
    folded = folding(report)
    cases = []
    for label, c in tiered(report, folded):
        entry: dict[str, object] = {"case": c.case, "verdict": c.verdict}
        if c.diff is not None:
            entry["line"] = c.diff.line()
            entry["counters"] = {
                name: {"old": o, "new": n} for name, (o, n) in c.diff.counters.items()
            }
            entry["findings"] = [
                {
                    "behaviour": f.behaviour,
                    "topic": f.topic,
                    "message": f.message,
                    "artifacts": list(f.artifacts),
                }
                for f in c.diff.findings
            ]
        else:
            entry["counters"] = c.counters
        entry["first_look"] = label
        entry["tier"] = tier_name(c)
        entry["own"] = _details(c, folded)
        cases.append(entry)
    causes = [
        {"cases": list(c.cases), "of": c.of, "behaviour": c.behaviour, "summary": c.summary}
        for c in folded.causes
    ]
    data = {"old": report.old, "new": report.new, "totals": report.totals()}
    return json.dumps({**data, "shared_causes": causes, "cases": cases}, indent=2) + "\n"
