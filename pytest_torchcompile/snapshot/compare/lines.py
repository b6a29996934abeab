"""Line diffs as a reader reads them and git counts them: the changed part of a long line, a
change repeated across layers once, changed lines counted.

A graph's `def forward(` signature can run to 9,000 characters on one line;
when one argument's shape changes, a unified diff prints the line twice and
the change is lost in it. `excerpt` keeps the head of such a line and the
arguments (or characters) that differ, `...` for the rest. `changed_lines`
counts added and removed lines as git does (a minimal diff, Myers' algorithm),
not as difflib's matcher does (longer: it does not look for the shortest
edit).

A change made to every layer of a model (a norm switched on, more heads)
is in every layer's lines of a stored file (a file reads on its own, a
change in one layer touches that layer's lines alone), so its diff repeats
once per layer: runs of changed lines that differ only by the numbered names
in them (`layers_0_` for `layers_2_`, `add_3` for `add_9`). `folded_diff`
shows the first and one line for the others, `... the same change, numbered
names aside, in layers 1-3 too (at lines 57, 97, 137 of this run) ...`, and
cuts its hunks so that no left-out run shows as if it were unchanged
context. Two runs are the same change only when their lines are equal once
numbered names are renamed one-to-one; a number that is a value (a shape, an
epsilon, a dtype such as `f32`) must be equal. Presentation only: the stored
files, the +/- counts and the verdict are computed from the whole text.

Pure text.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

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


#: a name whose digits a compile renumbers: a generated name (`add_3`, `arg7_1`, `buf3`,
#: `L__self___layers_0_attn`), a dotted module path (`layers.0.attn`), a module key (`['0']`),
#: an indexed module in source text (`self.layers[0]`)
_NUMBERED = re.compile(
    r"\['\d+'\]|(?<![\w.])[A-Za-z_][A-Za-z0-9_]*(?:(?:\.[A-Za-z0-9_]+)+(?:\[\d+\](?!\[))?)?"
)
#: dtypes and other names whose digits are a value, never a number a compile hands out
_VALUE_NAME = re.compile(
    r"(?:[bc]?f|[iu]|c)\d+|(?:b?float|u?int|complex|fp|bf)\d+\w*|float8\w*|sm_?\d+|cuda:?\d*"
)
_DIGITS = re.compile(r"\d+")
_SUFFIX = re.compile(r"_\d+$")
#: a layer index inside a path: `layers_0_attn`, `layers_modules_0_modules_attn`,
#: `layers.0.attn`, `['layers']._modules['0']`
_LAYER = re.compile(
    r"(?P<a>[A-Za-z]+)_(?:modules_)?(?P<an>\d+)_(?=[A-Za-z])"
    r"|(?P<b>[A-Za-z]+)\.(?P<bn>\d+)\.(?=[A-Za-z\d])"
    r"|\['(?P<c>[A-Za-z]\w*)'\]\._modules\['(?P<cn>\d+)'\]"
    r"|\.(?P<d>[A-Za-z]+)\[(?P<dn>\d+)\](?!\[)"
)


#: context lines around a change, as a unified diff shows them
CONTEXT_LINES = 3
DIFF_NAMES = ("snapshot", "this run")


@dataclass(frozen=True)
class Run:
    """One run of changed lines: `old[i1:i2]` became `new[j1:j2]`, and the old lines above."""

    i1: int
    i2: int
    j1: int
    j2: int
    changed: tuple[str, ...]  # `-` lines, then `+` lines
    above: tuple[str, ...]  # up to CONTEXT_LINES unchanged lines before it, nearest last

    @property
    def start(self) -> int:
        """The line of this run's text where the change is (1-based)."""
        return self.j1 + 1


def folded_diff(old: str, new: str, shown_by: str = "") -> list[str]:
    """The unified diff of `old` -> `new` (`---` the stored file, `+++` this run), each run of
    changed lines that repeats an earlier one, numbered names aside, left out: one line after
    the first names where the others are and which layers, and `shown_by` (what shows them
    all). Without repeats, exactly `difflib.unified_diff`."""
    a, b = old.splitlines(), new.splitlines()
    opcodes = _merged(difflib.SequenceMatcher(None, a, b).get_opcodes())
    runs = [_change_run(a, b, op) for op in opcodes if op.tag != "equal"]
    repeats = _repeated(runs)
    if not repeats:
        return list(difflib.unified_diff(a, b, *DIFF_NAMES, lineterm="", n=CONTEXT_LINES))
    notes = {
        first: _note(runs[first], [runs[i] for i in rest], shown_by)
        for first, rest in repeats.items()
    }
    dropped = {i for rest in repeats.values() for i in rest}
    hunks = _hunks(a, opcodes, runs, dropped, notes)
    return [f"--- {DIFF_NAMES[0]}", f"+++ {DIFF_NAMES[1]}", *hunks]


class Op(NamedTuple):
    """A `SequenceMatcher` opcode: `equal`, or `change` for a run of lines that differ."""

    tag: str
    i1: int
    i2: int
    j1: int
    j2: int


def _merged(opcodes: Sequence[tuple[str, int, int, int, int]]) -> list[Op]:
    """Opcodes with adjacent changes (a delete beside an insert) joined into one `change`."""
    out: list[Op] = []
    for tag, i1, i2, j1, j2 in opcodes:
        if tag != "equal" and out and out[-1].tag != "equal":
            out[-1] = out[-1]._replace(i2=i2, j2=j2)
        else:
            out.append(Op("equal" if tag == "equal" else "change", i1, i2, j1, j2))
    return out


def _change_run(a: Sequence[str], b: Sequence[str], op: Op) -> Run:
    changed = tuple(f"-{line}" for line in a[op.i1 : op.i2])
    changed += tuple(f"+{line}" for line in b[op.j1 : op.j2])
    return Run(op.i1, op.i2, op.j1, op.j2, changed, tuple(a[max(op.i1 - CONTEXT_LINES, 0) : op.i1]))


def _repeated(runs: Sequence[Run]) -> dict[int, list[int]]:
    """First run's index -> the indices of later runs that repeat it, numbered names renamed
    one-to-one (a run of the same shape that does not map is shown whole)."""
    groups: dict[str, list[int]] = {}
    for index, run in enumerate(runs):
        groups.setdefault(_shape(run), []).append(index)
    repeats: dict[int, list[int]] = {}
    for first, *rest in groups.values():
        same = [i for i in rest if _renumbered(runs[first], runs[i])]
        if same:
            repeats[first] = same
    return repeats


def _hunks(
    a: Sequence[str],
    opcodes: Sequence[Op],
    runs: Sequence[Run],
    dropped: set[int],
    notes: dict[int, str],
) -> list[str]:
    """Unified-diff hunks of the runs kept, CONTEXT_LINES lines around each, joined when the lines
    between two kept runs are few and unchanged; a left-out run always ends a hunk, so its
    lines never show as context. Each note follows the hunk that holds its first run."""
    run_at = {p: k for k, p in enumerate(p for p, op in enumerate(opcodes) if op.tag != "equal")}
    kept = {p for p, k in run_at.items() if k not in dropped}
    out: list[str] = []
    hunk: list[str] = []
    after: list[str] = []
    old_start = new_start = count_old = count_new = 0
    for p, op in enumerate(opcodes):
        if p in run_at and p not in kept:
            out += _hunk(old_start, count_old, new_start, count_new, hunk, after)
            hunk, after = [], []
        elif p in kept:
            if not hunk:
                lead = (
                    min(CONTEXT_LINES, op.i1 - opcodes[p - 1].i1)
                    if p and p - 1 not in run_at
                    else 0
                )
                old_start, new_start, count_old, count_new = op.i1 - lead, op.j1 - lead, lead, lead
                hunk = [f" {line}" for line in a[op.i1 - lead : op.i1]]
            hunk += runs[run_at[p]].changed
            count_old += op.i2 - op.i1
            count_new += op.j2 - op.j1
            after += [notes[run_at[p]]] if run_at[p] in notes else []
        elif hunk:  # unchanged lines after a kept run
            joins = p + 1 in kept and op.i2 - op.i1 <= 2 * CONTEXT_LINES
            shown = op.i2 - op.i1 if joins else min(CONTEXT_LINES, op.i2 - op.i1)
            hunk += [f" {line}" for line in a[op.i1 : op.i1 + shown]]
            count_old += shown
            count_new += shown
            if not joins:
                out += _hunk(old_start, count_old, new_start, count_new, hunk, after)
                hunk, after = [], []
    return out + _hunk(old_start, count_old, new_start, count_new, hunk, after)


def _hunk(
    old_start: int,
    count_old: int,
    new_start: int,
    count_new: int,
    lines: list[str],
    after: list[str],
) -> list[str]:
    """One hunk with its `@@` header as difflib writes it, then the notes it ends with."""
    if not lines:
        return []
    header = f"@@ -{_range(old_start, count_old)} +{_range(new_start, count_new)} @@"
    return [header, *lines, *after]


def _range(start: int, count: int) -> str:
    first = start + 1 if count else start
    return str(first) if count == 1 else f"{first},{count}"


def _numbered(line: str) -> list[str]:
    """The names of `line` a compile may renumber, in order: every name but a value's
    (`input` and `input_3` are one family: FX numbers a name's second use)."""
    return [name for name in _NUMBERED.findall(line) if not _VALUE_NAME.fullmatch(name)]


def _family(name: str) -> str:
    """`input_3`, `input` -> `input`; `L__self___layers_2_attn` -> `L__self___layers_#_attn`."""
    if _VALUE_NAME.fullmatch(name):
        return name
    return _DIGITS.sub("#", _SUFFIX.sub("", name))


def _shape(run: Run) -> str:
    """The run's changed lines with each name replaced by its family."""
    return "\n".join(_NUMBERED.sub(lambda m: _family(m[0]), line) for line in run.changed)


def _renumbered(a: Run, b: Run) -> bool:
    """Whether `b` is `a` with its numbered names renamed one-to-one, and changes anything."""
    names_a = [n for line in a.changed for n in _numbered(line)]
    names_b = [n for line in b.changed for n in _numbered(line)]
    if len(names_a) != len(names_b):
        return False
    forward: dict[str, str] = {}
    backward: dict[str, str] = {}
    for x, y in zip(names_a, names_b):
        if forward.setdefault(x, y) != y or backward.setdefault(y, x) != x:
            return False
    return bool(a.changed)


def _note(first: Run, repeats: Sequence[Run], shown_by: str) -> str:
    """`... the same change, numbered names aside, in layers 1-3 too (at lines 57, 97, 137
    of this run; shown by ...) ...`; without a layer index, `at N more places`."""
    where = ", ".join(str(h.start) for h in repeats)
    lines = f"at line{'s' if len(repeats) > 1 else ''} {where} of this run"
    lines += f"; shown by {shown_by}" if shown_by else ""
    layers = _layers([first, *repeats])
    said = (
        f"in {layers[0] if len(repeats) > 1 else layers[0].rstrip('s')} {_ranges(layers[1][1:])} too"
        if layers
        else f"at {len(repeats)} more place{'s' if len(repeats) > 1 else ''}"
    )
    return f"... the same change, numbered names aside, {said} ({lines}) ..."


def _layers(runs: Sequence[Run]) -> tuple[str, list[int]] | None:
    """The path word (`layers`) and the index each run's lines name, when every run names
    one index under that word and no two runs the same."""
    best: tuple[int, str, list[int]] | None = None
    per_hunk = [_layer_indices(r) for r in runs]
    for word in set.intersection(*(set(found) for found in per_hunk)) if per_hunk else ():
        indices = [found[word] for found in per_hunk]
        if None in indices or len(set(indices)) != len(indices):
            continue
        count = sum(_count(r, word) for r in runs)
        if best is None or count > best[0]:
            best = (count, word, [i for i in indices if i is not None])
    return (best[1], best[2]) if best else None


def _layer_indices(run: Run) -> dict[str, int | None]:
    """Per path word, the one index the run's changed lines give it (None when they give
    several); a word they do not name takes the index of the nearest line above."""
    seen: dict[str, set[int]] = {}
    for word, number in _paths(run.changed):
        seen.setdefault(word, set()).add(number)
    found = {word: next(iter(n)) if len(n) == 1 else None for word, n in seen.items()}
    for line in reversed(run.above):
        for word, number in _paths([line]):
            found.setdefault(word, number)
    return found


def _paths(lines: Sequence[str]) -> list[tuple[str, int]]:
    """(word, index) of each layer index in a path of `lines` (`layers_2_attn`: layers, 2)."""
    return [
        (
            next(w for w in m.group("a", "b", "c", "d") if w),
            int(next(n for n in m.group("an", "bn", "cn", "dn") if n)),
        )
        for line in lines
        for m in _LAYER.finditer(line)
    ]


def _count(run: Run, word: str) -> int:
    return sum(1 for w, _ in _paths([*run.above, *run.changed]) if w == word)


def _ranges(numbers: Sequence[int]) -> str:
    """`1-3, 5`: sorted numbers with runs of consecutive ones joined."""
    runs: list[list[int]] = []
    for n in sorted(numbers):
        if runs and n == runs[-1][-1] + 1:
            runs[-1].append(n)
        else:
            runs.append([n])
    return ", ".join(f"{r[0]}-{r[-1]}" if len(r) > 1 else str(r[0]) for r in runs)
