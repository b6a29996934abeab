"""A model's repeated layers written once: folded when stored, unfolded when read.

A model of N identical layers compiles to a graph (and a wrapper `call`) that
holds the code of one layer N times, each copy with other names. A one-line
change to the layer changed every copy, so what `--update-snapshots`
rewrote grew with the depth. `fold_repeats` writes each later copy as one
line naming the lines it repeats:

    # again: lines 40-121, names _R1, with arg13_1 for arg3_1, add_7 for clone

that is: lines 40 to 121 of this section once more, each name they define
with `_R1` appended (`mul_2` -> `mul_2_R1`, and so in the rest of the
section), and each name they read from outside read as the name given
(`arg13_1` where they read `arg3_1`). `unfold_repeats` writes the copy out
again, so the comparison reads the whole graph: a copy that differs from the
first in any op, argument, shape or input is not folded (its lines stay as
they are), and a change to one layer only shows as the change it is.

A copy is folded only if it has at least `_MIN` lines equal to an earlier
run of lines once names are masked, with the names read one to one. The
text that carries no marker is left as it is, and a folded section is never
folded again (the rule is idempotent).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable

from ..._torch.patterns.code import FX_DEFINED, FX_PARAM
from .names import name_positions, names_in, renamed, split_identifiers
from .sections import per_frame_section

#: what every fold line holds, and only those (a prefilter: most sections have none)
MARKER = "# again: lines "
_FOLD_LINE = re.compile(
    r"^(?P<indent>[ \t]*)# again: lines (?P<first>\d+)-(?P<last>\d+), names _R(?P<copy>\d+)"
    r"(?:, with (?P<inputs>.*))?$"
)
#: fewer lines than this are not a layer (a view and its mm repeat everywhere)
_MIN = 8
#: lines of the skeleton that index a run; a run this long that repeats is where a fold may start
_WINDOW = 4
#: where a graph's or the wrapper's body starts: `def forward(` / `def call(self, args):`
_DEF = re.compile(r"^\s+def (?:forward|call)\(")
_RETURN = re.compile(r"^\s+return\b")


@per_frame_section
def fold_repeats(section: str) -> str:
    """Each later copy of a repeated run of lines (a layer) as one `# again:` line; see the module."""
    if MARKER in section:
        return section  # folded already
    lines = section.split("\n")
    if sum(1 for line in lines if "def " in line and _DEF.match(line)) != 1:
        return section  # nested graphs: a subgraph's body is not the graph's
    body = _body(lines)
    if body is None or body[1] - body[0] < 2 * _MIN:
        return section
    start, end = body
    every_code = [_code(line) for line in lines]
    codes = every_code[start:end]
    callees = [_callee(code) for code in codes]
    if not _repeats(callees):
        return section
    # the body's code split once: its text without identifiers, then its values' names masked
    parts = split_identifiers("\n".join(codes))
    if not _may_repeat(callees, "".join(parts[0::2]).split("\n")):
        return section
    names = _variables(lines, start)
    found = name_positions(parts, names)
    by_line = _by_line(parts, found, len(codes))  # each line's names in order, when first asked
    for k in found:
        parts[k] = "\0"
    # each line with its values' names masked; a line's names in order are read only where two
    # lines' skeletons match (`_extend`)
    skeletons = [
        skeleton + lines[start + k][len(code) :]
        for k, (code, skeleton) in enumerate(zip(codes, "".join(parts).split("\n")))
    ]

    def tokens(k: int) -> list[str]:
        return by_line()[k]

    folds = _find_folds(skeletons, tokens)
    if not folds:
        return section
    return _write(lines, start, folds, every_code)


def _by_line(parts: list[str], found: list[int], count: int) -> Callable[[], list[list[str]]]:
    """The names at `found` in `parts` (the split lines of a body), line by line: read once,
    when first asked (their text before the caller masks them)."""
    names = [parts[k] for k in found]
    # where the lines break: the texts between identifiers that hold a line break
    breaks = [x for x in range(0, len(parts), 2) if "\n" in parts[x]]

    @functools.cache
    def read() -> list[list[str]]:
        lines: list[list[str]] = [[] for _ in range(count)]
        line = b = 0
        for k, name in zip(found, names):
            while b < len(breaks) and breaks[b] < k:
                line += parts[breaks[b]].count("\n")
                b += 1
            lines[line].append(name)
        return lines

    return read


def _body(lines: list[str]) -> tuple[int, int] | None:
    """(first, last + 1) of the statements of the section's one graph or `call`."""
    first = next((k for k, line in enumerate(lines) if _DEF.match(line)), None)
    if first is None:
        return None
    while first < len(lines) and not _code(lines[first]).rstrip().endswith(":"):
        first += 1
    end = next((k for k in range(first + 1, len(lines)) if _RETURN.match(lines[k])), None)
    return None if end is None else (first + 1, end)


def _may_repeat(callees: list[str], rests: list[str]) -> bool:
    """Whether `_MIN` lines in a row call what `_MIN` earlier lines call, with the same code
    between their identifiers (`rests`): a prefilter, most graphs are left here.

    A fold needs that much; most graphs (a model without repeated layers) have
    no such run, and are left before their names are read. A line's callee
    counts only where it is no value's name (`torch.ops.aten.mm.default`,
    `extern_kernels.mm`, a kernel); any other line matches any other such line.
    Two lines whose names mask alike also read the same once every identifier
    is dropped (`: "[12, 32][32, 1]" = ....(, [12, 32])`). The caller asks
    `_repeats(callees)` first, which needs no pattern.
    """
    return _repeats([f"{callee}\0{rest}" for callee, rest in zip(callees, rests)])


def _repeats(keys: list[str]) -> bool:
    """Whether `_MIN` keys in a row repeat `_MIN` keys that end before them."""
    first: dict[tuple[str, ...], int] = {}
    for k in range(len(keys) - _MIN + 1):
        earlier = first.setdefault(tuple(keys[k : k + _MIN]), k)
        if k - earlier >= _MIN:  # a copy starts after its original ends
            return True
    return False


#: how the callees a prefilter tells apart start: torch's ops and functions, Inductor's calls
_CALLS = (
    "torch.",
    "aten.",
    "extern_kernels.",
    "empty_strided",
    "reinterpret_tensor",
    "cpp_",
    "triton_",
)


def _callee(code: str) -> str:
    head = (code.partition(" = ")[2] or code).lstrip().partition("(")[0]
    return head if head.startswith(_CALLS) else "?"


def _variables(lines: list[str], start: int) -> set[str]:
    """Names that are values: defined in the body, the graph's inputs, `call`'s unpacked args."""
    names = {
        match[1]
        for line in lines
        if " = " in line  # what every definition holds: no pattern on other lines
        for match in (FX_DEFINED.match(line),)
        if match
    }
    names.update(name for name, _ in FX_PARAM.findall("\n".join(lines[:start])))
    names.update(
        t for line in lines[start:] if line.rstrip().endswith("= args") for t in names_in(line)
    )
    names.discard("args")
    return names


def _code(line: str) -> str:
    """A line without its comment (`  # ...`); a comment line is all comment."""
    if "#" not in line:
        return line
    if line.lstrip().startswith("#"):
        return ""
    return line.partition("  # ")[0]


Fold = tuple[int, int, int, dict[str, str]]  # (copy's first, original's first, length, names)


def _find_folds(skeletons: list[str], tokens: Callable[[int], list[str]]) -> list[Fold]:
    """Later runs that repeat an earlier, unfolded run: one pass, each window indexed once."""
    seen: dict[tuple[str, ...], int] = {}
    folds: list[Fold] = []
    j = 0
    while j + _MIN <= len(skeletons):
        window = tuple(skeletons[j : j + _WINDOW])
        i = seen.get(window)
        if i is not None:
            limit = min([j, *(f[0] for f in folds if f[0] > i)])
            length, mapping = _extend(i, j, limit, skeletons, tokens)
            if length >= _MIN:
                folds.append((j, i, length, mapping))
                j += length
                continue
        seen.setdefault(window, j)
        j += 1
    return folds


def _extend(
    i: int, j: int, limit: int, skeletons: list[str], tokens: Callable[[int], list[str]]
) -> tuple[int, dict[str, str]]:
    """How many lines from `j` repeat those from `i` (before `limit`), with names read one to one."""
    forward: dict[str, str] = {}
    backward: dict[str, str] = {}
    length = 0
    while i + length < limit and j + length < len(skeletons):
        if skeletons[i + length] != skeletons[j + length]:
            break
        new: dict[str, str] = {}
        back: dict[str, str] = {}
        for a, b in zip(tokens(i + length), tokens(j + length)):
            if forward.get(a, new.get(a, b)) != b or backward.get(b, back.get(b, a)) != a:
                break
            new[a], back[b] = b, a
        else:
            forward.update(new)
            backward.update(back)
            length += 1
            continue
        break
    return length, forward


def _write(lines: list[str], start: int, folds: list[Fold], codes: list[str]) -> str:
    """The section with each fold's copy as its `# again:` line and the copy's names renamed.

    `codes`: each line's code (`_code`), where a copy's new name must not be taken yet."""
    code = "\n".join(codes)
    taken: set[str] | None = None
    copies_names: dict[str, str] = {}
    kept: list[
        tuple[int, int, int, int, list[str]]
    ] = []  # copy, first, last, fold's number, inputs
    for copy, (j, i, length, mapping) in enumerate(folds, 1):
        defined = {FX_DEFINED.match(lines[start + k]) for k in range(i, i + length)}
        inside = {m[1] for m in defined if m}
        new = {mapping[a]: f"{a}_R{copy}" for a in inside if a in mapping}
        # a substring search rules most out: first the suffix every new name of the copy ends in
        clash = [n for n in new.values() if n in code] if f"_R{copy}" in code else []
        if clash:
            taken = set(names_in(code)) if taken is None else taken
            if any(n in taken for n in clash):
                continue  # a name would collide: this copy stays written out
        inputs = [
            f"{copies_names.get(b, b)} for {copies_names.get(a, a)}"
            for a, b in mapping.items()
            if a not in inside and a != b
        ]
        kept.append((start + j, start + i, start + i + length, copy, inputs))
        copies_names.update(new)
    skipped = {k for j, i, last, _, _ in kept for k in range(j + 1, j + last - i)}
    if not kept:
        return "\n".join(lines)
    number = {}  # a kept line's number in the folded section, from 1
    for k in range(len(lines)):
        if k not in skipped:
            number[k] = len(number) + 1
    markers = {}
    for j, first, last, copy, inputs in kept:
        indent = lines[j][: len(lines[j]) - len(lines[j].lstrip())]
        markers[j] = f"{indent}{MARKER}{number[first]}-{number[last - 1]}, names _R{copy}" + (
            f", with {', '.join(inputs)}" if inputs else ""
        )
    first = min(markers)  # a copy's names are read only after it
    later = [k for k in range(first + 1, len(lines)) if k not in skipped and k not in markers]
    # their code renamed in one split, each line's comment kept
    new_codes = renamed("\n".join(codes[k] for k in later), copies_names).split("\n")
    out = {k: code + lines[k][len(codes[k]) :] for k, code in zip(later, new_codes)}
    out.update(markers)
    return "\n".join(out.get(k, line) for k, line in enumerate(lines) if k not in skipped)


def _rename_names(line: str, mapping: dict[str, str]) -> str:
    """`mapping` applied to the code of a line (a comment line, or a line's comment, stays)."""
    code = _code(line)
    if not code or not mapping:
        return line
    return renamed(code, mapping) + line[len(code) :]


@per_frame_section
def unfold_repeats(section: str) -> str:
    """Each `# again:` line written out as the lines it stands for, names as they were read."""
    if MARKER not in section:
        return section
    lines = section.split("\n")
    out: list[str] = []
    for line in lines:
        fold = _FOLD_LINE.match(line)
        if fold is None:
            out.append(line)
            continue
        original = lines[int(fold["first"]) - 1 : int(fold["last"])]
        suffix = f"_R{fold['copy']}"
        mapping = {m[1]: m[1] + suffix for m in map(FX_DEFINED.match, original) if m is not None}
        for pair in (fold["inputs"] or "").split(", "):
            if " for " in pair:
                new, old = pair.split(" for ")
                mapping[old] = new
        out.extend(_rename_names(each, mapping) for each in original)
    return "\n".join(out)
