"""Line diffs as a reader and git count them: changed lines, and the changed part of a long one.

A graph's `def forward(` signature can run to 9,000 characters on one line;
when one argument's shape changes, a unified diff prints the line twice and
the change is lost in it. `excerpt` keeps the head of such a line and the
arguments (or characters) that differ, `...` for the rest. `changed_lines`
counts added and removed lines as git does (a minimal diff, Myers' algorithm),
not as difflib's matcher does (longer: it does not look for the shortest
edit). Pure text.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

#: characters of a line before a diff shows its changed part instead of the whole
LONG_LINE = 160
#: characters kept on each side of a changed run of characters
_CONTEXT = 40
#: `, name: ` or `, name = `: where a long line's next argument starts
ARGUMENT = re.compile(r", (?=[A-Za-z_][\w.]*\s*[:=])")
ELIDED = " ... "


def split_arguments(line: str) -> list[str]:
    """`line` cut before each argument (`def forward(self, L_x_: "f32[2]", ...`), commas kept."""
    parts = ARGUMENT.split(line)
    return [p + "," for p in parts[:-1]] + parts[-1:]


def excerpt(old: str, new: str) -> tuple[str, str]:
    """Two versions of a long line as their changed parts: the head (up to the first argument),
    then each argument that differs, `...` between; by characters when the arguments do not
    pair. Lines no longer than `LONG_LINE` come back whole."""
    if max(len(old), len(new)) <= LONG_LINE:
        return old, new
    before, after = split_arguments(old), split_arguments(new)
    if len(before) == len(after) > 2:
        changed = [i for i, (a, b) in enumerate(zip(before, after)) if a != b]
        if changed and max(len(before[i]) + len(after[i]) for i in changed) <= 2 * LONG_LINE:
            return _kept(before, changed), _kept(after, changed)
    return _around_change(old, new)


def _kept(parts: list[str], changed: list[int]) -> str:
    """The first part and the changed ones, joined; `...` where parts are left out."""
    shown, last = [parts[0]], 0
    for i in changed:
        if i == 0:
            continue
        shown.append(parts[i] if i == last + 1 else ELIDED.strip() + " " + parts[i])
        last = i
    tail = ELIDED.rstrip() if last < len(parts) - 1 else ""
    return " ".join(shown) + tail


def _common_ends(old: Sequence[object], new: Sequence[object]) -> tuple[int, int]:
    """How many items `old` and `new` share at their start, then at their end (not overlapping)."""
    prefix = 0
    while prefix < min(len(old), len(new)) and old[prefix] == new[prefix]:
        prefix += 1
    suffix = 0
    while suffix < min(len(old), len(new)) - prefix and old[-1 - suffix] == new[-1 - suffix]:
        suffix += 1
    return prefix, suffix


def _around_change(old: str, new: str) -> tuple[str, str]:
    """Both lines cut to the run of characters that differs, `_CONTEXT` characters each side."""
    prefix, suffix = _common_ends(old, new)
    start = max(prefix - _CONTEXT, 0)

    def cut(line: str) -> str:
        end = min(len(line) - suffix + _CONTEXT, len(line))
        head = ELIDED.lstrip() if start > 0 else ""
        tail = ELIDED.rstrip() if end < len(line) else ""
        return f"{head}{line[start:end]}{tail}"

    return cut(old), cut(new)


def shortened(diff: list[str]) -> list[str]:
    """A unified diff with its long changed lines cut to their changed parts (`excerpt`): a run
    of `-` lines followed by as many `+` lines pairs them in order; a long line that pairs with
    none keeps its start and says how long it was."""
    out: list[str] = []
    i = 0
    while i < len(diff):
        removed = _run(diff, i, "-")
        added = _run(diff, i + len(removed), "+")
        if not removed and not added:
            out.append(diff[i])
            i += 1
            continue
        if len(removed) == len(added):
            pairs = [excerpt(a[1:], b[1:]) for a, b in zip(removed, added)]
            out += [f"-{a}" for a, _ in pairs] + [f"+{b}" for _, b in pairs]
        else:
            out += [_cut(line) for line in (*removed, *added)]
        i += len(removed) + len(added)
    return out


def _run(diff: list[str], start: int, sign: str) -> list[str]:
    """The lines from `start` that begin with `sign` (not a `---`/`+++` file header)."""
    run = []
    for line in diff[start:]:
        if not line.startswith(sign) or line.startswith(sign * 3 + " "):
            break
        run.append(line)
    return run


def _cut(line: str) -> str:
    if len(line) <= LONG_LINE + 1:
        return line
    return f"{line[: LONG_LINE + 1]}{ELIDED.rstrip()} ({len(line) - 1:,} characters)"


def changed_lines(old: list[str], new: list[str]) -> tuple[int, int]:
    """(added, removed) lines of a minimal line diff, as `git diff --numstat` counts them."""
    start, end = _common_ends(old, new)
    a, b = old[start : len(old) - end], new[start : len(new) - end]
    distance = _edit_distance(a, b)
    grown = len(b) - len(a)
    return (distance + grown) // 2, (distance - grown) // 2


def _edit_distance(a: list[str], b: list[str]) -> int:
    """Lines removed plus lines added by the shortest edit from `a` to `b` (Myers 1986, O((N+M)D))."""
    ids: dict[str, int] = {}
    x_seq = [ids.setdefault(line, len(ids)) for line in a]
    y_seq = [ids.setdefault(line, len(ids)) for line in b]
    n, m = len(x_seq), len(y_seq)
    if not n or not m:
        return n + m
    furthest = {1: 0}
    for d in range(n + m + 1):
        for k in range(-d, d + 1, 2):
            down = k == -d or (k != d and furthest[k - 1] < furthest[k + 1])
            x = furthest[k + 1] if down else furthest[k - 1] + 1
            y = x - k
            while x < n and y < m and x_seq[x] == y_seq[y]:
                x, y = x + 1, y + 1
            furthest[k] = x
            if x >= n and y >= m:
                return d
    return n + m
