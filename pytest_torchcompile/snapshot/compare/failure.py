"""A snapshot failure a reviewer reads in seconds.

`compose` turns one test's comparison outcomes into the failure text:

1. one line that says what moved (pytest's short test summary shows it):
   `summary: kernels 5 -> 7, ops 59 -> 105`, or without a summary change
   `snapshot changed: output_code (summary unchanged)`;
2. one block: every changed artifact with its +/- line counts (an artifact
   whose old and new text differ only by consistently renamed numbered names,
   `add_9` for `add_7` or `buf3` for `buf2`, is marked `names only`), the
   verdict line when a classifier is plugged in, and the `summary` diff;
   each diff opens with `snapshot <path> differs:`, `---` the stored file,
   `+++` this run;
3. the diff of the earliest pipeline stage that changed (Dynamo's graph, its
   guards and bytecode, the AOT graphs, post-grad, output code);
4. one line naming the other changed artifacts and how to see their diffs
   (`--torchcompile-full-diff`, or `-vv`), which then follow.

Pure: text in, text out; nothing here imports torch or pytest.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

#: artifacts in the order the compiler produces them; the first changed one is shown in full
PIPELINE = (
    "dynamo_graph",
    "guards",
    "transformed_code",
    "aot_forward",
    "aot_inference",
    "aot_backward",
    "runtime_wrapper",
    "post_grad_graph",
    "output_code",
    "program",
)
FULL_DIFF_FLAG = "--torchcompile-full-diff"
UPDATE_HINT = "if the change is intended: pytest --update-snapshots"
MAX_STAGE_LINES = 120

#: Classifies one case (its label, "" for a test with one case) from artifact name ->
#: (stored text, this run's text) of its changed artifacts; returns the verdict line
#: (`behaviour changed: ...`, `text only: ...`) or None.
CaseVerdict = Callable[[str, Mapping[str, tuple[str, str]]], "str | None"]


class OutcomeLike(Protocol):
    """What `store.Outcome` carries (old and new text only for a changed file)."""

    path: Path
    status: str
    message: str
    old: str | None
    new: str | None

    @property
    def failed(self) -> bool: ...


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
        diff = unified(self.old, self.new, n=0)[2:]  # without the ---/+++ header
        return sum(1 for line in diff if line.startswith("+")), sum(
            1 for line in diff if line.startswith("-")
        )

    @property
    def names_only(self) -> bool:
        return canonical_names(self.old) == canonical_names(self.new)

    @property
    def stage(self) -> int:
        return PIPELINE.index(self.artifact) if self.artifact in PIPELINE else len(PIPELINE)


def compose(
    outcomes: Sequence[OutcomeLike],
    test_dir: Path,
    shown_dir: str,
    full: bool,
    verdict: CaseVerdict | None = None,
) -> str:
    """The failure text of one test whose snapshots did not all match.

    `test_dir` is the test's snapshot folder (cases are its subfolders),
    `shown_dir` the same folder as the message names it, `full` appends every
    diff, `verdict` (see `CaseVerdict`) adds a line per case.
    """
    changes = [
        _change(o, test_dir)
        for o in outcomes
        if o.status == "changed" and o.old is not None and o.new is not None
    ]
    other = [o.message for o in outcomes if o.failed and o.status != "changed"]
    if not changes:
        return "\n\n".join([_missing_headline(outcomes), *other, UPDATE_HINT])
    lines = [headline(changes), f"changed artifacts in {shown_dir}:", *_table(changes)]
    lines += _verdicts(changes, verdict)
    summaries = [c for c in changes if c.artifact == "summary"]
    lines += [line for c in summaries for line in _diff_block(c, shown_dir, None, limit=None)]
    if not summaries:
        lines.append("summary: unchanged (same graphs, graph breaks, recompiles, kernels and ops)")
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


def headline(changes: Sequence[Change]) -> str:
    """The first line: what moved in the summary, else which artifacts changed."""
    moved = []
    for c in changes:
        if c.artifact == "summary":
            said = summary_moves(c.old, c.new) or "text changed"
            moved.append(f"{'[' + c.case + '] ' if c.case else ''}summary: {said}")
    if moved:
        return "; ".join(moved)
    real = [c for c in changes if not c.names_only]
    named = ", ".join(dict.fromkeys(c.artifact for c in (real or changes)))
    return f"snapshot changed: {named} (summary unchanged{'; names only' if not real else ''})"


_COUNTER = re.compile(r"^(graphs|graph breaks|recompiles|kernels): (\d+)$", re.MULTILINE)
_FRAME_OPS = re.compile(r"^  - frame \d+ compile \d+: .*: (\d+) ops, \d+ kernels$", re.MULTILINE)


def summary_counters(text: str) -> dict[str, int]:
    """graphs, graph breaks, recompiles, kernels and ops (all frames) from a `summary` text."""
    counters = {name: int(value) for name, value in _COUNTER.findall(text)}
    counters["ops"] = sum(int(n) for n in _FRAME_OPS.findall(text))
    return counters


def summary_moves(old: str, new: str) -> str:
    """`kernels 5 -> 7, ops 59 -> 105`; '' when no counter moved."""
    before, after = summary_counters(old), summary_counters(new)
    return ", ".join(
        f"{k} {before.get(k, 0)} -> {after.get(k, 0)}"
        for k in ("graphs", "graph breaks", "recompiles", "kernels", "ops")
        if before.get(k) != after.get(k)
    )


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


def _change(outcome: OutcomeLike, test_dir: Path) -> Change:
    path = Path(outcome.path)
    try:
        case = str(path.parent.relative_to(test_dir))
    except ValueError:
        case = path.parent.name
    return Change(
        "" if case == "." else case,
        path.name.split(".", 1)[0],
        path.name,
        outcome.old or "",
        outcome.new or "",
    )


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


def _verdicts(changes: Sequence[Change], verdict: CaseVerdict | None) -> list[str]:
    if verdict is None:
        return []
    lines = []
    for case in dict.fromkeys(c.case for c in changes):
        said = verdict(case, {c.artifact: (c.old, c.new) for c in changes if c.case == case})
        if said:
            lines.append(f"{'[' + case + '] ' if case else ''}verdict: {said}")
    return lines


def _diff_block(change: Change, shown_dir: str, title: str | None, limit: int | None) -> list[str]:
    """`snapshot <path> differs:` and a unified diff (`---` the stored file, `+++` this run)."""
    diff = unified(change.old, change.new)
    if limit is not None and len(diff) > limit:
        diff = diff[:limit] + [f"... {len(diff) - limit} more diff lines: pytest {FULL_DIFF_FLAG}"]
    return ["", *([title] if title else []), f"snapshot {shown_dir}/{change.label} differs:", *diff]


def _missing_headline(outcomes: Sequence[OutcomeLike]) -> str:
    missing = [o for o in outcomes if o.status == "missing"]
    if missing:
        return f"snapshot missing: {len(missing)} file{'s' if len(missing) > 1 else ''} do{'es' if len(missing) == 1 else ''} not exist yet"
    return "snapshot unreadable"
