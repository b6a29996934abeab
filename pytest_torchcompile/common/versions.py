"""Release numbers in order: which other torch stands in for this one's predecessor.

Both wings keep one record set per torch (snapshot sets, baseline files) and,
on a torch with none yet, point to another's: the newest release before this
one (what an upgrade is judged against), else the oldest after it (a
downgrade). Only the numeric release counts (`2.15.0.dev20260101+cu132` is
2.15.0); nothing here imports torch.
"""

from __future__ import annotations


def release(version: str | None) -> tuple[int, ...]:
    """`2.15.0.dev20260101+cu132` -> (2, 15, 0); `2.13` -> (2, 13): the numeric release."""
    parts = []
    for part in (version or "").split("+", 1)[0].split("."):
        if not part.isdigit():
            break
        parts.append(int(part))
    return tuple(parts)


def nearness(now: str | None, other: str | None) -> tuple[int, tuple[int, ...]]:
    """A sort key (the highest is the best stand-in for `now`'s predecessor): releases before
    or equal to `now` by their number, then releases after it, the nearest first."""
    mine, theirs = release(now), release(other)
    return (1, theirs) if theirs <= mine else (0, tuple(-part for part in theirs))
