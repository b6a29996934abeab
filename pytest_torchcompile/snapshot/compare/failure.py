"""A snapshot failure a reviewer reads in seconds.

`compose` turns one test's comparison outcomes into the failure text:

1. one line with the most important facts the comparison found (pytest's
   short test summary shows it), in the words of `findings.TOPICS`:
   `ops: relu -> silu; kernels fused differently: cpp_fused_relu_0 ->
   cpp_fused_silu_0`, `graph breaks 0 -> 1`, `guards added: ...`; for a case
   whose behaviour did not move, what kind of text did (`text only: kernels
   renamed`); `text changed` only when nothing else is known;
2. one block: every changed artifact with its +/- line counts (an artifact
   whose old and new text differ only by consistently renamed numbered names,
   `add_9` for `add_7` or `buf3` for `buf2`, is marked `names only`), the
   verdict line of each case, and the `summary` diff; each diff opens with
   `snapshot <path> differs:`, `---` the stored file, `+++` this run;
3. the diff of the earliest pipeline stage that changed (Dynamo's graph, its
   guards and bytecode, the AOT graphs, post-grad, output code);
4. one line naming the other changed artifacts and how to see their diffs
   (`--torchcompile-full-diff`, or `-vv`), which then follow. Every finding
   of the verdict (the first line names at most three, in about 200
   characters) is listed under the verdict with `-v`, without those diffs.

Long changed lines (a graph's signature of thousands of characters) show
their changed part (`lines.shortened`), and the +/- counts are git's.

Pure: text in, text out; nothing here imports torch or pytest.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from dataclasses import dataclass

from ..artifacts.catalogue import ARTIFACTS
from ..files.outcome import Outcome
from .behaviour import compare_case
from .findings import COUNTERS, HEADLINE_WIDTH, CaseDiff
from .lines import changed_lines, shortened

FULL_DIFF_FLAG = "--torchcompile-full-diff"
UPDATE_HINT = "if the change is intended: pytest --update-snapshots"
MAX_STAGE_LINES = 120
SUMMARY_UNCHANGED = f"summary: unchanged (the same counters: {', '.join(COUNTERS)})"
#: after every artifact of the catalogue: one the catalogue does not name
_LAST_STAGE = max(a.stage for a in ARTIFACTS.values()) + 1


@dataclass(frozen=True)
class Change:
    """One changed artifact of one case."""

    case: str  # "" for a test with one case
    artifact: str
    filename: str
    old: str
    new: str

    @property
    def label(self) -> str:
        return f"{self.case}/{self.filename}" if self.case else self.filename

    @property
    def counts(self) -> tuple[int, int]:
        """Lines added and removed, as git counts them (a minimal diff)."""
        return changed_lines(self.old.splitlines(), self.new.splitlines())

    @property
    def names_only(self) -> bool:
        return canonical_names(self.old) == canonical_names(self.new)

    @property
    def stage(self) -> int:
        known = ARTIFACTS.get(self.artifact)
        return known.stage if known is not None else _LAST_STAGE


def compose(outcomes: Sequence[Outcome], shown_dir: str, full: bool, findings: bool = False) -> str:
    """The failure text of one test whose snapshots did not all match.

    `shown_dir` is the test's snapshot folder as the message names it; `findings`
    lists every finding of each verdict (`-v`), `full` that and every diff (`-vv`).
    """
    changes = [
        Change(o.case, o.artifact, o.path.name, o.old, o.new)
        for o in outcomes
        if o.status == "changed" and o.old is not None and o.new is not None
    ]
    other = [o.message for o in outcomes if o.failed and o.status != "changed"]
    # an update that could not write is not fixed by updating again: its messages say what is
    hint = [] if all(o.status == "unwritable" for o in outcomes if o.failed) else [UPDATE_HINT]
    if not changes:
        return "\n\n".join([_missing_headline(outcomes), *other, *hint])
    diffs = case_diffs(changes, outcomes)
    lines = [headline(diffs), f"changed artifacts in {shown_dir}:", *_table(changes)]
    lines += [f"{_prefix(case)}verdict: {diff.line()}" for case, diff in diffs.items()]
    if full or findings:  # what the headline left out: every finding, whole
        lines += [
            f"  {_prefix(case)}{'behaviour' if f.behaviour else 'text'}: {f.render()}"
            for case, diff in diffs.items()
            for f in diff.findings
        ]
    summaries = [c for c in changes if c.artifact == "summary"]
    lines += [line for c in summaries for line in _diff_block(c, shown_dir, None, limit=None)]
    if not summaries:
        lines.append(SUMMARY_UNCHANGED)
    stages = sorted(
        (c for c in changes if c.artifact != "summary"), key=lambda c: (c.names_only, c.stage)
    )
    if stages and not stages[0].names_only:
        lines += _diff_block(
            stages[0],
            shown_dir,
            f"earliest pipeline stage that changed: {stages[0].artifact}",
            limit=None if full else MAX_STAGE_LINES,
        )
        rest = stages[1:]
    else:
        rest = stages
    if rest and not full:
        named = ", ".join(c.label + (" (names only)" if c.names_only else "") for c in rest)
        lines += ["", f"also changed: {named}; their diffs: pytest {FULL_DIFF_FLAG} (or -vv)"]
    elif rest:
        for c in rest:
            lines += _diff_block(
                c,
                shown_dir,
                "names only: the same text once numbered names are renumbered"
                if c.names_only
                else None,
                limit=None,
            )
    return "\n".join([*lines, *(["", *other] if other else []), "", UPDATE_HINT])


def headline(diffs: dict[str, CaseDiff], width: int = HEADLINE_WIDTH) -> str:
    """The first line: each changed case's most important facts (`CaseDiff.headline`), in
    about `width` characters together; `(+N more cases, -v)` counts the cases left out."""
    parts: list[str] = []
    for n, (case, diff) in enumerate(diffs.items()):
        room = width - len("; ".join(parts)) - (2 if parts else 0)
        if parts and room < _MIN_CASE_ROOM:
            parts.append(f"(+{len(diffs) - n} more cases, -v)")
            break
        parts.append(_prefix(case) + diff.headline(max(room - len(_prefix(case)), 40)))
    return "; ".join(parts)


#: a case's headline gets at least this many characters, or waits for `-v`
_MIN_CASE_ROOM = 60


def _prefix(case: str) -> str:
    return f"[{case}] " if case else ""


_NUMBERED = re.compile(
    r"\b([A-Za-z][A-Za-z0-9]*(?:_[A-Za-z][A-Za-z0-9]*)*)_(\d+)\b|\b(buf|tmp)(\d+)\b"
)


def canonical_names(text: str) -> str:
    """Numbered names (`add_9`, `getitem_3`, `buf4`, `tmp12`) renumbered in order of first use, per family.

    Two texts with the same canonical form differ only by a consistent renaming:
    the same ops on the same edges. Dtypes (`f32`, `bf16`), sizes and symbols
    (`s27`) are not numbered names here and are never renamed.
    """
    seen: dict[str, dict[str, int]] = {}

    def rename(match: re.Match[str]) -> str:
        family = match.group(1) or match.group(3)
        numbers = seen.setdefault(family, {})
        token = match.group(0)
        return f"{family}_#{numbers.setdefault(token, len(numbers))}"

    return _NUMBERED.sub(rename, text)


def unified(
    old: str, new: str, n: int = 3, names: tuple[str, str] = ("snapshot", "this run")
) -> list[str]:
    return list(difflib.unified_diff(old.splitlines(), new.splitlines(), *names, lineterm="", n=n))


def _table(changes: Sequence[Change]) -> list[str]:
    width = max(len(c.label) for c in changes)
    rows = []
    for c in sorted(changes, key=lambda c: (c.case, c.stage if c.artifact != "summary" else -1)):
        plus, minus = c.counts
        rows.append(
            f"  {c.label:<{width}}  +{plus:<4} -{minus:<4}"
            + ("  names only" if c.names_only else "").rstrip()
        )
    return [row.rstrip() for row in rows]


def case_diffs(changes: Sequence[Change], outcomes: Sequence[Outcome]) -> dict[str, CaseDiff]:
    """Each changed case compared whole: did its behaviour move, or only its text?

    The artifacts that matched are the same on both sides (an unchanged
    output code is what shows a reprinted graph is the same program); the
    changed ones carry their stored and new texts.
    """
    diffs = {}
    for case in dict.fromkeys(c.case for c in changes):
        new = {o.artifact: o.new for o in outcomes if o.case == case and o.new is not None}
        old = {**new, **{c.artifact: c.old for c in changes if c.case == case}}
        diffs[case] = compare_case(old, new)
    return diffs


def _diff_block(change: Change, shown_dir: str, title: str | None, limit: int | None) -> list[str]:
    """`snapshot <path> differs:` and a unified diff (`---` the stored file, `+++` this run)."""
    diff = shortened(unified(change.old, change.new))
    if limit is not None and len(diff) > limit:
        diff = diff[:limit] + [f"... {len(diff) - limit} more diff lines: pytest {FULL_DIFF_FLAG}"]
    return ["", *([title] if title else []), f"snapshot {shown_dir}/{change.label} differs:", *diff]


def _missing_headline(outcomes: Sequence[Outcome]) -> str:
    missing = [o for o in outcomes if o.status == "missing"]
    if missing:
        return f"snapshot missing: {len(missing)} file{'s' if len(missing) > 1 else ''} do{'es' if len(missing) == 1 else ''} not exist yet"
    unwritten = [o for o in outcomes if o.status == "unwritable"]
    if unwritten:
        return f"snapshot not written: {len(unwritten)} file{'s' if len(unwritten) > 1 else ''} could not be written"
    return "snapshot unreadable"
