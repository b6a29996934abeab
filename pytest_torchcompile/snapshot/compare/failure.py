"""A snapshot failure a reviewer reads in seconds.

`compose` turns one test's compared outcomes (`changes.ChangedCases`) into the
failure text:

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
   guards and bytecode, the AOT graphs, post-grad, output code), a change
   repeated across layers shown once with a line naming the others
   (`lines.folded_diff`: presentation only, the stored files keep every layer);
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
from collections.abc import Mapping, Sequence

from ..files.outcome import Outcome, Status
from .changes import Change, ChangedCases
from .findings import COUNTERS, HEADLINE_WIDTH, CaseDiff
from .lines import folded_diff, shortened

FULL_DIFF_FLAG = "--torchcompile-full-diff"
UPDATE_HINT = "if the change is intended: pytest --update-snapshots"
MAX_STAGE_LINES = 120
SUMMARY_UNCHANGED = f"summary: unchanged (the same counters: {', '.join(COUNTERS)})"


def compose(changed: ChangedCases, shown_dir: str, full: bool, findings: bool = False) -> str:
    """The failure text of one test whose snapshots did not all match.

    `changed` holds the test's outcomes and each changed case's verdict;
    `shown_dir` is the test's snapshot folder as the message names it; `findings`
    lists every finding of each verdict (`-v`), `full` that and every diff (`-vv`).
    """
    outcomes, changes, diffs = changed.outcomes, changed.changes, changed.diffs
    other = [o.message for o in outcomes if o.failed and o.status is not Status.CHANGED]
    # an update that could not write is not fixed by updating again: its messages say what is
    hint = [] if all(o.status is Status.UNWRITABLE for o in outcomes if o.failed) else [UPDATE_HINT]
    if not changes:
        return "\n\n".join([_missing_headline(outcomes), *other, *hint])
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


def headline(diffs: Mapping[str, CaseDiff], width: int = HEADLINE_WIDTH) -> str:
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


def _diff_block(change: Change, shown_dir: str, title: str | None, limit: int | None) -> list[str]:
    """`snapshot <path> differs:` and a unified diff (`---` the stored file, `+++` this run)."""
    if limit is None:
        diff = shortened(unified(change.old, change.new))
    else:  # a change repeated across layers, once (the full diff shows them all)
        diff = shortened(folded_diff(change.old, change.new, shown_by=f"pytest {FULL_DIFF_FLAG}"))
    if limit is not None and len(diff) > limit:
        diff = diff[:limit] + [f"... {len(diff) - limit} more diff lines: pytest {FULL_DIFF_FLAG}"]
    return ["", *([title] if title else []), f"snapshot {shown_dir}/{change.label} differs:", *diff]


def _missing_headline(outcomes: Sequence[Outcome]) -> str:
    missing = [o for o in outcomes if o.status is Status.MISSING]
    if missing:
        return f"snapshot missing: {len(missing)} file{'s' if len(missing) > 1 else ''} do{'es' if len(missing) == 1 else ''} not exist yet"
    unwritten = [o for o in outcomes if o.status is Status.UNWRITABLE]
    if unwritten:
        return f"snapshot not written: {len(unwritten)} file{'s' if len(unwritten) > 1 else ''} could not be written"
    return "snapshot unreadable"
