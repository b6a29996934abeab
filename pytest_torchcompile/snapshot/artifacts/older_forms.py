"""Texts an earlier version of the plugin stored folded, written out again when read.

For a while the stored form wrote a model's repeated layers once: each later
copy of a layer's code as one line,

    # again: lines 40-121, names _R1, with arg13_1 for arg3_1, add_7 for clone

(lines 40 to 121 of this section again, every name they define with `_R1`
appended, `arg13_1` read where they read `arg3_1`), and each layer's copy of
a guard as one `..._modules[*]...  [* = 0, 1]` line. Files stored so still
sit in users' repositories. A comparison writes them out first, so that
they read as the same facts as today's plain text (`text only: stored form`,
which `--torchcompile-update-text-only` rewrites).

A committed file is input from a pull request, so the reading is bounded and
checked: a fold must point at earlier lines of its own section that hold no
fold, name a copy and its inputs in the form written, and the whole text
written out may not exceed `MAX_WRITTEN_OUT` characters. Anything else
raises `DamagedText`, which a comparison reports as a damaged file, never as
a change of the model.
"""

from __future__ import annotations

import re

from ..._torch.patterns.code import FX_DEFINED
from .names import renamed
from .sections import split_at_headers

#: what every fold line holds (a prefilter: most texts hold none)
MARKER = "# again: lines "
_FOLD_LINE = re.compile(
    r"^(?P<indent>[ \t]*)# again: lines (?P<first>\d{1,7})-(?P<last>\d{1,7}), names _R(?P<copy>\d{1,6})"
    r"(?:, with (?P<inputs>.*))?$"
)
#: one `new for old` pair of a fold line's inputs
_INPUT = re.compile(r"^([A-Za-z_]\w*) for ([A-Za-z_]\w*)$")
#: the most characters a text may have once written out (a real 48-layer graph has a few MB)
MAX_WRITTEN_OUT = 32 * 1024 * 1024

#: a folded guard line's indices: `  [* = 0, 1, 2, 3]`
_FOLDED_INDICES = re.compile(r"  \[\* = (\d{1,6}(?:, \d{1,6})*)\]")
_FOLDED = "._modules[*]"


class DamagedText(ValueError):
    """A stored text that no version of the plugin wrote: what is wrong, and where."""


def written_out(text: str) -> str:
    """`text` with every fold of an earlier stored form written out; `text` itself when it has none.

    Raises `DamagedText` for a fold line that does not point at earlier,
    unfolded lines of its section, is not in the form written, or would write
    out more than `MAX_WRITTEN_OUT` characters in all.
    """
    if MARKER not in text and "  [* = " not in text:
        return text
    budget = [MAX_WRITTEN_OUT - len(text)]
    pieces = [_section(piece, budget) for piece in split_at_headers(text)]
    return "".join(pieces)


def _section(section: str, budget: list[int]) -> str:
    lines = section.split("\n")
    out: list[str] = []
    for number, line in enumerate(lines, 1):
        if "  [* = " in line and _FOLDED in line:
            out += _guard_copies(line, number, budget)
        elif MARKER in line:
            out += _layer_copy(lines, number, budget)
        else:
            out.append(line)
    return "\n".join(out)


def _layer_copy(lines: list[str], number: int, budget: list[int]) -> list[str]:
    """The lines fold line `number` (counted from its section's header, 1) stands for."""
    line = lines[number - 1]
    fold = _FOLD_LINE.match(line)
    if fold is None:
        raise DamagedText(
            f"line {number} of its section is a fold line in no form written: {line[:120]!r}"
        )
    first, last = int(fold["first"]), int(fold["last"])
    if not 1 <= first <= last < number:
        raise DamagedText(
            f"line {number} of its section repeats lines {first}-{last}, which are not lines before it"
        )
    original = lines[first - 1 : last]
    if any(MARKER in each for each in original):
        raise DamagedText(
            f"line {number} of its section repeats lines {first}-{last}, which hold a fold"
        )
    _spend(budget, original, number)  # before any work: a fold bomb stops here, cheaply
    mapping = {m[1]: m[1] + f"_R{fold['copy']}" for m in map(FX_DEFINED.match, original) if m}
    for pair in (fold["inputs"] or "").split(", ") if fold["inputs"] else ():
        names = _INPUT.match(pair)
        if names is None:
            raise DamagedText(
                f"line {number} of its section names an input in no form written: {pair[:80]!r}"
            )
        mapping[names[2]] = names[1]
    return [_renamed_code(each, mapping) for each in original]


def _guard_copies(line: str, number: int, budget: list[int]) -> list[str]:
    """A guard line folded over layers, one line per layer."""
    indices = _FOLDED_INDICES.search(line)
    if indices is None:
        raise DamagedText(
            f"line {number} of its section folds guards over no indices: {line[:120]!r}"
        )
    bare = line[: indices.start()] + line[indices.end() :]
    copies = [bare.replace(_FOLDED, f"._modules['{i}']", 1) for i in indices[1].split(", ")]
    _spend(budget, copies, number)
    return copies


def _spend(budget: list[int], lines: list[str], number: int) -> None:
    budget[0] -= sum(len(each) + 1 for each in lines)
    if budget[0] < 0:
        raise DamagedText(
            f"written out, its folds (the last at line {number} of its section) would exceed "
            f"{MAX_WRITTEN_OUT // (1024 * 1024)} MB: no file this plugin wrote folds so much"
        )


def _renamed_code(line: str, mapping: dict[str, str]) -> str:
    """`mapping` applied to a line's code; a comment line, and a line's comment, stay."""
    if line.lstrip().startswith("#"):
        return line
    code, sep, comment = line.partition("  # ")
    return renamed(code, mapping) + sep + comment
