"""Guards texts read back as checks: each leaf guard's kind, the source it checks, its code.

Either format the plugin has stored: Dynamo's tree and the compact form.
Every parser accepts any text (fewer facts, never an exception). Pure text,
no torch.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from ...._torch.patterns.guards import (
    DIMENSION_KIND,
    LEAF_LINE,
    MANAGER_LINE,
    MANAGER_SOURCE,
    NO_ATTRS,
    SOURCE_START,
    TREE_LINE,
    TYPE_NOTE,
    code_and_comment,
)
from ...artifacts.sections import SECTION_HEADER

_SPACES = re.compile(r"\s+")


@dataclass(frozen=True)
class Guard:
    """One leaf guard: its kind, the source it checks, and its check.

    `check` is the guard's code without the provenance comment and without
    the `, type=<...>` annotation an ID match carries (a type match keeps its
    class); '' for a bare
    marker (`OBJECT_ALIASING` printed on the second of two sources whose
    check is printed on the first). `source` is the value the check reads
    (`L['self']._modules['fc1']`), taken from the check itself so that the
    tree and the compact format give the same source; see `guard_source`.
    """

    kind: str
    source: str
    check: str


_PLACEHOLDER = re.compile(
    r"(?<=[:\[,])(<\w+>)(?=[,}\]])"
)  # `"num_threads":<N>`, masked by normalize, is not JSON
_ATTRIBUTE = re.compile(r"\.[A-Za-z_]\w*")


def parse_guards(text: str) -> list[Guard]:
    """The leaf guards of one frame's guards text, in either format the plugin has stored.

    - the tree Dynamo prints (`| | +- TYPE_MATCH: ...` under `GuardManager:
      source=...` lines), stored by the plugin before the compact form;
    - the compact form (`compact.compact_guards`): one `KIND: check  # comment`
      per line, a tensor's five dimension-marking guards as one
      `KIND: X has no _dynamo_..., ...` line, and, in files stored before
      layers were written out, each layer's copy of a guard as one
      `..._modules[*]...  [* = 0, 1]` line.

    Both give the same guards for the same checks (a tree file and its
    compact form compare as text only). A text in neither format gives one
    guard per line, kind `line`, so that a changed line is still a changed
    check.
    """
    lines = [line for line in text.splitlines() if line.strip() and not SECTION_HEADER.match(line)]
    if any(TREE_LINE.match(line) for line in lines):
        guards = _tree_guards(lines)
    else:
        guards = _compact_guards(lines)
    with_code = {g.kind for g in guards if g.check}
    return [
        g for g in guards if g.check or g.kind not in with_code
    ]  # a bare marker repeats a check already read


def _tree_guards(lines: list[str]) -> list[Guard]:
    guards: list[Guard] = []
    sources: dict[int, str] = {}
    for line in lines:
        match = TREE_LINE.match(line)
        if match is None:
            continue
        depth = len(match[1]) // 2
        item = match[2].strip()
        manager = MANAGER_SOURCE.match(item)
        if manager is not None:
            sources[depth] = manager[1] or ""
            continue
        leaf = LEAF_LINE.match(item)
        if leaf is None or MANAGER_LINE.match(item):
            continue
        check = _check(leaf[2] or "")
        place = next((sources[d] for d in range(depth - 1, -1, -1) if d in sources), "")
        guards.append(Guard(leaf[1], guard_source(check) or place, check))
    return guards


def _compact_guards(lines: list[str]) -> list[Guard]:
    guards: list[Guard] = []
    for line in lines:
        leaf = LEAF_LINE.match(line.strip())
        if leaf is None or MANAGER_LINE.match(line.strip()):
            check = _check(line)
            guards += (
                [Guard("line", "", check)] if check and not line.lstrip().startswith("#") else []
            )
            continue
        check = _check(leaf[2] or "")
        marks = NO_ATTRS.match(check) if leaf[1] == DIMENSION_KIND else None
        if marks is not None:  # the tree's form, one guard per attribute
            guards += [
                Guard(DIMENSION_KIND, marks[1], f"hasattr({marks[1]}, '{a}') == False")
                for a in marks[2].split(", ")
            ]
            continue
        guards.append(Guard(leaf[1], guard_source(check), check))
    return guards


def guard_source(check: str) -> str:
    """The value a guard checks, read from its code; '' for a frame-wide check.

    The first local or global access path in the check, with the attributes
    and subscripts that follow it, up to a method call: `L['x']` in
    `check_tensor(L['x'], ...)` and in `L['x'].size()[0] == 4`,
    `G['F'].linear` in `___check_obj_id(G['F'].linear, <id>)`,
    `L['self']._modules['bn']` in `not ___dict_contains('forward',
    dict(type(L['self']._modules['bn']).__dict__))`. A check that reads no
    local or global (`___check_global_state()`,
    `utils_device.CURRENT_DEVICE == None`) has none: Dynamo puts those on
    the root of the tree, whose source is empty too.
    """
    match = SOURCE_START.search(check)
    if match is None:
        return ""
    end = match.end() - 1  # at the `[`
    while end < len(check):
        if check[end] == "[":
            close = _closing(check, end)
            if close < 0:
                break
            end = close + 1
        elif (attr := _ATTRIBUTE.match(check, end)) is not None:
            if check.startswith("(", attr.end()):
                break  # a method call: `.size()` reads the value, it is not a part of it
            end = attr.end()
        else:
            break
    return check[match.start() : end]


def _closing(text: str, start: int) -> int:
    """Index of the `]` that closes the `[` at `start`, skipping quoted strings; -1 if none."""
    depth, quote, escaped = 0, "", False
    for index in range(start, len(text)):
        char = text[index]
        if quote:
            escaped, quote = (
                (not escaped and char == "\\"),
                ("" if char == quote and not escaped else quote),
            )
        elif char in "'\"":
            quote = char
        elif char in "[(":
            depth += 1
        elif char in "])":
            depth -= 1
            if depth == 0:
                return index if char == "]" else -1
    return -1


def _check(code: str) -> str:
    """The code compared: no comment; an identity check without its note (torch 2.11 prints the
    object's repr there, later releases its class), a type check with it (the class is what
    the check compares: its id is masked)."""
    code = code_and_comment(code)[0].strip()
    note = TYPE_NOTE.match(code)
    if note is not None and not note[1].startswith("___check_type_id("):
        code = note[1]
    return _unordered(_SPACES.sub(" ", code))


_NO_ALIASING = "check_no_aliasing("


def _unordered(check: str) -> str:
    """`check_no_aliasing(L['y'], L['x'])` as `check_no_aliasing(L['x'], L['y'])`: which tensors
    it relates is the check, not the order Dynamo lists them in (their names' order)."""
    if not check.startswith(_NO_ALIASING) or not check.endswith(")"):
        return check
    parts, depth, start = [], 0, len(_NO_ALIASING)
    for index in range(start, len(check) - 1):
        char = check[index]
        depth += char in "([{"
        depth -= char in ")]}"
        if char == "," and depth == 0:
            parts.append(check[start:index].strip())
            start = index + 1
    parts.append(check[start:-1].strip())
    return f"{_NO_ALIASING}{', '.join(sorted(parts))})"


def global_state(check: str) -> dict[str, object] | None:
    """The switches a GLOBAL_STATE guard compares (`___check_global_state() against {...}`), or None."""
    _, sep, raw = check.partition(" against ")
    if not sep:
        return None
    try:
        value = json.loads(_PLACEHOLDER.sub(r'"\1"', raw))
    except ValueError:
        return None
    return value if isinstance(value, dict) else None
