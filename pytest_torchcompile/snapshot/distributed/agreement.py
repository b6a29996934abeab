"""Every rank must compile what rank 0 compiled: the texts of each rank against rank 0's.

Ranks that compile differently (a recompile on one, a graph break on
another) wait on each other's collectives: a hang waiting to happen. So any
difference fails, whatever the comparison's verdict (a text-only one too),
with the facts of the first line, the changed artifacts and their diffs
(rank 0 as `---`, the other rank as `+++`). Pure text: no torch import.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..compare.behaviour import compare_case
from ..compare.changes import Change
from ..compare.failure import FULL_DIFF_FLAG, MAX_STAGE_LINES, unified

#: why a difference between ranks fails the test, for its message
WHY = "ranks that compile differently wait on each other's collectives"


def disagreement(texts: Sequence[Mapping[str, str]], full: bool = False) -> str | None:
    """The failure text when a rank's texts differ from rank 0's (the first such rank), else None."""
    differing = [r for r in range(1, len(texts)) if texts[r] != texts[0]]
    if not differing:
        return None
    rank = differing[0]
    changes = _changes(texts[0], texts[rank])
    diff = compare_case(dict(texts[0]), dict(texts[rank])) if changes else None
    facts = diff.headline() if diff is not None else "other artifacts"
    lines = [
        f"rank {rank} compiled differently from rank 0: {facts}",
        f"({WHY}: a hang waiting to happen; any difference between ranks fails)",
        f"changed artifacts, rank 0 -> rank {rank}: "
        + ", ".join(f"{c.filename} +{c.counts[0]} -{c.counts[1]}" for c in changes),
    ]
    if len(differing) == 2:
        lines.append(f"(rank {differing[1]} differs from rank 0 too)")
    elif len(differing) > 2:
        lines.append(f"(ranks {', '.join(map(str, differing[1:]))} differ from rank 0 too)")
    shown = changes if full else changes[:2]
    for change in shown:
        lines += ["", *_diff(change, rank, None if full else MAX_STAGE_LINES)]
    if len(changes) > len(shown):
        rest = ", ".join(c.filename for c in changes[len(shown) :])
        lines += ["", f"also changed: {rest}; their diffs: pytest {FULL_DIFF_FLAG} (or -vv)"]
    return "\n".join(lines)


def _changes(first: Mapping[str, str], other: Mapping[str, str]) -> list[Change]:
    """Changed artifacts, the summary first, then by pipeline stage."""
    names = [n for n in dict.fromkeys([*first, *other]) if first.get(n) != other.get(n)]
    changes = [Change("", n, n, first.get(n, ""), other.get(n, "")) for n in names]
    return sorted(changes, key=lambda c: (c.artifact != "summary", c.stage))


def _diff(change: Change, rank: int, limit: int | None) -> list[str]:
    diff = unified(
        change.old,
        change.new,
        names=(f"rank 0/{change.artifact}", f"rank {rank}/{change.artifact}"),
    )
    if limit is not None and len(diff) > limit:
        diff = diff[:limit] + [f"... {len(diff) - limit} more diff lines: pytest {FULL_DIFF_FLAG}"]
    return diff
