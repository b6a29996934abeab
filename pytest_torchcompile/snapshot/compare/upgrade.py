"""The upgrade report: two snapshot sets compared case by case, as text, Markdown or JSON.

A snapshot set is a folder laid out as the plugin writes it,
`<root>/<test file>/<test>[/<case>]/<artifact>.<ext>`; a case is any folder
that holds artifact files (`summary.txt`, `guards.guards.txt`, ...). Each case
found on either side is compared with `diff.compare_case`; the report shows
one row of counters per case, then what moved (behaviour first), then the
totals, and is meant to fit on one screen for a suite of a dozen cases: a
text change that every changed case shares (another torch no longer emits
`runtime_wrapper`) is said once, above the cases.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from ..spec import ARTIFACT_EXTENSIONS
from .behaviour import BEHAVIOUR, COUNTERS, TEXT, UNCHANGED, CaseDiff, Finding, compare_case

ONLY_OLD = "only in OLD"
ONLY_NEW = "only in NEW"
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
            texts[_FILENAMES.get(path.name, path.name)] = path.read_bytes().decode(
                "utf-8", errors="replace"
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


def _shared_text(report: Report) -> list[Finding]:
    """Text findings every changed case has, artifact by artifact: said once above the cases.

    Compared per artifact, so that `transformed_code` differing in every case
    is said once even where one case's finding also names `program`.
    """
    changed = [c.diff for c in report.cases if c.diff is not None and c.verdict != UNCHANGED]
    if len(changed) < 2:
        return []
    common = set.intersection(*(_atoms(d.findings) for d in changed))
    return _merged_atoms([a for a in _atoms_in_order(changed[0].findings) if a in common])


Atom = tuple[str, str, str]  # (topic, message, artifact or '')


def _atoms_in_order(findings: Iterable[Finding]) -> list[Atom]:
    return [
        (f.topic, f.message, a) for f in findings if not f.behaviour for a in (f.artifacts or ("",))
    ]


def _atoms(findings: Iterable[Finding]) -> set[Atom]:
    return set(_atoms_in_order(findings))


def _merged_atoms(atoms: Iterable[Atom]) -> list[Finding]:
    merged: dict[tuple[str, str], list[str]] = {}
    for topic, message, artifact in atoms:
        merged.setdefault((topic, message), []).extend([artifact] if artifact else [])
    return [
        Finding(False, topic, message, tuple(artifacts))
        for (topic, message), artifacts in merged.items()
    ]


def _details(report: CaseReport, shared: list[Finding]) -> list[str]:
    """The lines under a case: behaviour findings, then its other text findings on one line."""
    if report.diff is None or report.verdict == UNCHANGED:
        return []
    lines = [f.render() for f in report.diff.findings if f.behaviour]
    said = _atoms(shared)
    text = [
        f.render()
        for f in _merged_atoms(a for a in _atoms_in_order(report.diff.findings) if a not in said)
    ]
    joined = ("text: " if lines else "") + "; ".join(text)
    return lines + ([joined] if text and len(joined) <= _WIDTH - 4 else text)


def _clip(line: str, width: int = _WIDTH) -> str:
    return line if len(line) <= width else line[: width - 3] + "..."


def render_text(report: Report) -> str:
    """The terminal report: a table of counters, what moved, and the totals."""
    prefix = _prefix(c.case for c in report.cases)
    header = ("case", *COUNTERS, "verdict")
    rows = [
        (c.case.removeprefix(prefix), *(_cell(c, n) for n in COUNTERS), c.verdict)
        for c in report.cases
    ]
    widths = [max(len(r[i]) for r in (header, *rows)) for i in range(len(header))]
    fmt = lambda row: "  ".join(v.ljust(w) for v, w in zip(row, widths)).rstrip()  # noqa: E731
    lines = [
        f"snapshot diff: {report.old} (OLD) -> {report.new} (NEW)"
        + (f", cases under {prefix}" if prefix else ""),
        "",
    ]
    lines += [fmt(header), *(fmt(r) for r in rows), ""]
    shared = _shared_text(report)
    if shared:
        lines.append("text changes in every changed case:")
        lines += [_clip(f"  - {f.render()}") for f in shared]
    for case in report.cases:
        details = _details(case, shared)
        head = f"{case.case.removeprefix(prefix)}: {case.verdict}"
        if len(details) == 1 and case.verdict == TEXT and len(head) + len(details[0]) < _WIDTH - 2:
            lines.append(f"{head}: {details[0]}")
        elif details:
            lines.append(head)
            lines += [_clip(f"  - {d}") for d in details]
    lines.append(report.total_line())
    return "\n".join(lines) + "\n"


def render_markdown(report: Report) -> str:
    """The same report for a PR comment or `$GITHUB_STEP_SUMMARY`."""
    prefix = _prefix(c.case for c in report.cases)
    title = f"**Snapshot diff** `{report.old}` -> `{report.new}`"
    lines = [title, "", report.total_line() + (f" (cases under `{prefix}`)" if prefix else ""), ""]
    lines.append("| case | " + " | ".join(COUNTERS) + " | verdict |")
    lines.append("|---" * (len(COUNTERS) + 2) + "|")
    for c in report.cases:
        verdict = f"**{c.verdict}**" if c.verdict == BEHAVIOUR else c.verdict
        lines.append(
            f"| `{c.case.removeprefix(prefix)}` | "
            + " | ".join(_cell(c, n) for n in COUNTERS)
            + f" | {verdict} |"
        )
    shared = _shared_text(report)
    for case in report.cases:
        if case.verdict == BEHAVIOUR:
            lines += _md_block(case, prefix, shared)
    text_cases = [c for c in report.cases if c.verdict == TEXT]
    if shared or text_cases:
        lines += [
            "",
            f"<details><summary>Text only: {len(text_cases)} case(s), and the text changes every changed case shares</summary>",
        ]
        if shared:
            lines += [
                "",
                "Every changed case:",
                "",
                "```text",
                *(f"- {f.render()}" for f in shared),
                "```",
            ]
        for case in text_cases:
            lines += _md_block(case, prefix, shared)
        lines += ["", "</details>"]
    return "\n".join(lines) + "\n"


def _md_block(case: CaseReport, prefix: str, shared: list[Finding]) -> list[str]:
    details = _details(case, shared)
    if not details:
        return []
    return [
        "",
        f"`{case.case.removeprefix(prefix)}`: {case.verdict}",
        "",
        "```text",
        *(f"- {d}" for d in details),
        "```",
    ]


def to_json(report: Report) -> str:
    """Everything, unclipped, for tools."""
    cases = []
    for c in report.cases:
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
        cases.append(entry)
    return (
        json.dumps(
            {"old": report.old, "new": report.new, "totals": report.totals(), "cases": cases},
            indent=2,
        )
        + "\n"
    )
