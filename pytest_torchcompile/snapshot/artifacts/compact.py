"""The stored form of the large artifacts: every fact once, no renumbering noise.

Pure, idempotent text functions over one artifact's normalized text (each
artifact names its own in `catalogue.py`). What they drop is the same in
every compile or said by the lines they keep; every guard, op with its
shape, dtype and stride, kernel body and wrapper call stays.

- `compact_guards`: one leaf guard per line in Dynamo's check order, without
  the accessor tree; a comment once for a run of guards from one user line;
  a tensor's five `DIMENSION_DYNAMIC_MARKING_GUARD`s as one line.
- `drop_fx_frees`: no `;  x = None` frees; the dataflow says when a value dies.
- `renumber_fx_names`: names defined in a graph body renumbered in order of
  definition (`add`, `add_1`, ...), so the same ops and edges read the same.
- `drop_fx_blank_lines`: each group of a graph already starts with its
  `# File:` comment.
- `compact_output_code`: Inductor's output code without its module
  boilerplate, `call`'s size checks of its inputs and the integer-division
  checks every C++ kernel opens and closes with.

Two rules shape the default artifacts further, leaving the full text to an
opt-in one:

- `outline_output_code` (`wrapper_code`): each kernel's source as one line
  with its length and a digest (its own name masked, so a kernel renamed
  with the same code keeps its digest), `call` without its frees and its
  provenance comments; the full source is `output_code`.
- `drop_fx_provenance` (the AOT graphs): no `# File:` comments; Dynamo's
  graph says which user line each op came from.
- `drop_fx_input_aliases` (Dynamo's graph): no `l_x_ = L_x_` lines; the body
  uses the inputs by their own names.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterable

from ..._torch.patterns.code import (
    CPP_HEADER,
    FX_BLANK_LINE,
    FX_DEFINED,
    FX_FREES,
    FX_INPUT_ALIAS,
    FX_PROVENANCE,
    INPUT_ASSERT,
    KERNEL_BODY_END,
    KERNEL_BOILERPLATE,
    KERNEL_NAME_DEF,
    OUTPUT_ALIAS,
    OUTPUT_BOILERPLATE_BLOCK,
    OUTPUT_BOILERPLATE_LINE,
    OUTPUT_IMPORT,
    WRAPPER_FREE,
    WRAPPER_PROVENANCE,
)
from ..._torch.patterns.guards import (
    BARE_KIND,
    DIMENSION_KIND,
    DIMENSION_MARK,
    MANAGER_LINE,
    TREE_LINE_START,
    code_and_comment,
)
from .sections import per_frame_section

Rule = Callable[[str], str]

# --- guards --------------------------------------------------------------------


@per_frame_section
def compact_guards(section: str) -> str:
    """One leaf guard per line, each comment once per run; see the module docstring."""
    out: list[str] = []
    marks: list[str] | None = None  # [source, comment, name, name, ...]
    last_comment = ""
    # each line read once: (the line, whether it is a tree line, its content: None for a manager)
    lines = [
        (raw, tree, _leaf(raw[tree.end() :] if tree else raw))
        for raw in section.splitlines()
        for tree in (TREE_LINE_START.match(raw),)
    ]
    kinds_with_code = {leaf.split(":", 1)[0] for _, _, leaf in lines if leaf and ":" in leaf}

    def flush() -> None:
        nonlocal marks
        if marks is not None:
            source, comment, *names = marks
            out.append(
                f"DIMENSION_DYNAMIC_MARKING_GUARD: {source} has no {', '.join(names)}"
                + (f"  {comment}" if comment else "")
            )
            marks = None

    for raw, tree, leaf in lines:
        if tree is None:  # headers, and anything not laid out as a tree, stay as they are
            flush()
            if leaf is not None:  # not a manager line
                out.append(raw)
            continue
        if leaf is None or (":" not in leaf and BARE_KIND.match(leaf) and leaf in kinds_with_code):
            continue  # a manager line, or a relational guard repeated under each value it relates
        code, comment = _split_comment(leaf)
        shown = "" if comment == last_comment else comment
        last_comment = comment or last_comment
        mark = DIMENSION_MARK.match(code) if code.startswith(DIMENSION_KIND) else None
        if mark and marks is not None and marks[0] == mark.group(1):
            marks.append(mark.group(2))
            continue
        flush()
        if mark:
            marks = [mark.group(1), shown, mark.group(2)]
            continue
        out.append(code + (f"  {shown}" if shown else ""))
    flush()
    return "\n".join(out) + ("\n" if section.endswith("\n") else "")


def _leaf(body: str) -> str | None:
    """The guard of a tree line's content, or None for a manager (structure) line."""
    # every manager's name ends in `Manager` (the root's in `MANAGER`): the pattern's `\w*` is
    # tried only where one can match
    manager = ("Manager" in body or "MANAGER" in body) and MANAGER_LINE.match(body)
    return None if manager else body


def _split_comment(leaf: str) -> tuple[str, str]:
    """`code<padding>  # comment` -> (code, `# comment`); Dynamo pads code to a column. A `#`
    inside the code's string literals is code (`== 'fast # v1'`)."""
    code, comment = code_and_comment(leaf)
    return code.rstrip(), (f"# {comment[1:].strip()}" if comment else "")


# --- FX graphs -----------------------------------------------------------------

_COUNTER = re.compile(r"^(.*?)(?:_(\d+))?$")


@per_frame_section
def renumber_fx_names(section: str) -> str:
    """Body names of each graph renumbered in order of definition: `add`, `add_1`, ..."""
    defined = list(dict.fromkeys(FX_DEFINED.findall(section)))
    families: dict[str, list[str]] = {}
    for name in defined:
        families.setdefault(_COUNTER.match(name).group(1) or name, []).append(name)  # type: ignore[union-attr]
    renumbered = {
        base: [base if k == 0 else f"{base}_{k}" for k in range(len(names))]
        for base, names in families.items()
    }
    if all(renumbered[base] == names for base, names in families.items()):
        return section  # numbered in order already: nothing to rename, no need to read the names
    lines = section.split("\n")
    code = "\n".join(
        _outside_comment(line, lambda code: code, keep_comment=False) if "#" in line else line
        for line in lines
    )
    owned = set(defined)
    taken = _names_in(code, {n for new in renumbered.values() for n in new if n not in owned})
    kept = {base for base, new in renumbered.items() if any(n in taken for n in new)}
    mapping = _without_joins(families, renumbered, kept)
    if not mapping:
        return section
    pattern = _whole_names(mapping)

    def rename(match: re.Match[str]) -> str:
        name = match.group(0)
        return mapping[name] if _starts_a_name(match.string, match.start()) else name

    return "\n".join(
        _outside_comment(line, lambda code: pattern.sub(rename, code))
        if "#" in line
        else pattern.sub(rename, line)  # no comment: all of the line is code (most of a graph)
        for line in lines
    )


def _without_joins(
    families: dict[str, list[str]], renumbered: dict[str, list[str]], kept: set[str]
) -> dict[str, str]:
    """Old name -> new name for the families not `kept` (a new name of theirs would collide
    with a name the rule does not own: an input, a global), keeping more families as they are
    until no two names share one: `sh_3` renumbered to `sh_1` while family `sh_1`'s `sh_1_1`
    becomes `sh_1` too (e3nn's names) would join two values."""
    kept = set(kept)
    while True:
        final: dict[str, list[str]] = {}
        for base, names in families.items():
            for renamed in names if base in kept else renumbered[base]:
                final.setdefault(renamed, []).append(base)
        joined = {b for bases in final.values() if len(bases) > 1 for b in bases} - kept
        if not joined:
            break
        kept |= joined
    return {
        old: new
        for base, names in families.items()
        if base not in kept
        for old, new in zip(names, renumbered[base])
        if old != new
    }


def _names_in(code: str, names: set[str]) -> set[str]:
    """Those of `names` that `code` uses as names (not attributes, not inside strings)."""
    names = {name for name in names if name in code}  # a substring search rules most out
    if not names:
        return names
    return {
        m.group(0) for m in _whole_names(names).finditer(code) if _starts_a_name(code, m.start())
    }


def _whole_names(names: Iterable[str]) -> re.Pattern[str]:
    """`names` as whole names, longest first. The alternation leads, so the search skips to where
    one can start; what precedes it (`_starts_a_name`) is checked on each match, where a
    lookbehind in front would be tried at every position of the text."""
    alternatives = "|".join(map(re.escape, sorted(names, key=len, reverse=True)))
    return re.compile(f"(?:{alternatives})(?![\\w'\"])")


def _starts_a_name(text: str, start: int) -> bool:
    """Whether a name at `start` is one: not the tail of a word, an attribute or a string's text."""
    if start == 0:
        return True
    before = text[start - 1]
    return not (before.isalnum() or before in "_.'\"")


def _outside_comment(line: str, rewrite: Callable[[str], str], keep_comment: bool = True) -> str:
    """Rewrite the code part of a line; `# File: ... code: ...` comments quote user code."""
    if line.lstrip().startswith("#"):
        return line if keep_comment else ""
    code, sep, comment = line.partition("  # ")
    return rewrite(code) + (sep + comment if keep_comment else "")


def drop_fx_blank_lines(text: str) -> str:
    """No blank line inside a graph; sections stay apart."""
    previous = None
    while previous != text:
        previous, text = text, FX_BLANK_LINE.sub("\n", text)
    return text


# --- output code ---------------------------------------------------------------

_TRIPLE = re.compile(r"'''|\"\"\"")
#: a line the compact form drops: one match for the four kinds (imports, aliases, scaffolding,
#: the input checks), not four
_DROPPED_LINE = re.compile(
    "|".join(
        f"(?:{p.pattern})"
        for p in (OUTPUT_IMPORT, OUTPUT_ALIAS, OUTPUT_BOILERPLATE_LINE, INPUT_ASSERT)
    )
)


def compact_output_code(text: str) -> str:
    """Output code without its module boilerplate; kernels and `call` verbatim."""
    out: list[str] = []
    in_string = False
    block_indent: int | None = None
    for line in text.split("\n"):
        if in_string:
            stripped = line.strip()
            if stripped in KERNEL_BOILERPLATE:
                continue
            if stripped == "{" and out and CPP_HEADER.match(out[-1]):
                out[-1] += " {"
                continue
        else:
            if block_indent is not None:
                if not line.strip() or _indent(line) > block_indent:
                    continue
                block_indent = None
            if OUTPUT_BOILERPLATE_BLOCK.match(line):
                block_indent = _indent(line)
                continue
            if _DROPPED_LINE.match(line):
                continue
            if not line.strip() and (not out or not out[-1].strip()):
                continue
        out.append(line)
        if ("'''" in line or '"""' in line) and len(_TRIPLE.findall(line)) % 2:
            in_string = not in_string
    return "\n".join(out)


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def outline_output_code(text: str) -> str:
    """Compacted output code with each kernel's source as one line: `<N lines, sha256 D>`.

    `call` keeps its allocations and its calls of kernels and extern ops, in
    order, without `del` lines and provenance comments.
    """
    out: list[str] = []
    lines = text.split("\n")
    index = 0
    while index < len(lines):
        line = lines[index]
        index += 1
        kernel = KERNEL_NAME_DEF.match(line)
        if kernel is None:
            if not (WRAPPER_FREE.match(line) or WRAPPER_PROVENANCE.match(line)):
                out.append(line)
            continue
        body: list[str] = []
        while index < len(lines) and not KERNEL_BODY_END.match(lines[index]):
            body.append(lines[index])
            index += 1
        out += [line, kernel_digest(kernel[1], body)] if body else [line]
    return "\n".join(out)


_DIGEST = re.compile(r"^<(\d+) lines, sha256 ([0-9a-f]{12})>$")


def kernel_digest(name: str, body: list[str]) -> str:
    """`<136 lines, sha256 1a2b3c4d5e6f>` of a kernel's source with its own name masked.

    A body that already is a digest line is kept (the rule is idempotent).
    """
    if len(body) == 1 and _DIGEST.match(body[0]):
        return body[0]
    masked = "\n".join(body).replace(name, "<kernel>")
    return f"<{len(body)} lines, sha256 {hashlib.sha256(masked.encode()).hexdigest()[:12]}>"


def digest_lines(line: str) -> int | None:
    """The length a kernel digest line states; None for any other line."""
    match = _DIGEST.match(line.strip())
    return int(match[1]) if match else None


def drop_fx_frees(text: str) -> str:
    """`;  add = mul = None` dropped from each node's line.

    FX frees each value on the line that uses it last: one node inserted or
    removed moved a free to another line, changing two lines that compute
    the same. The lifetimes follow from the dataflow, which stays.
    """
    return FX_FREES.sub("", text)


def drop_fx_provenance(text: str) -> str:
    return FX_PROVENANCE.sub("", text)


@per_frame_section
def drop_fx_input_aliases(section: str) -> str:
    """`l_x_ = L_x_` lines dropped; `l_x_` read as `L_x_` in the rest of the graph."""
    aliases = dict(FX_INPUT_ALIAS.findall(section)) if " = L_" in section else {}
    if not aliases:
        return section
    section = FX_INPUT_ALIAS.sub("", section)
    pattern = re.compile("(?:" + "|".join(map(re.escape, aliases)) + r")(?!\w)")

    def unaliased(match: re.Match[str]) -> str:
        before = match.string[match.start() - 1] if match.start() else ""
        keep = before.isalnum() or before in ("_", ".")  # the tail of a longer name, an attribute
        return match.group(0) if keep else aliases[match.group(0)]

    return "\n".join(
        _outside_comment(line, lambda code: pattern.sub(unaliased, code))
        if "l_" in line  # every alias starts so: no other line holds one
        else line
        for line in section.split("\n")
    )
