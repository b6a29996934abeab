"""A frame's arguments, renamed between two snapshots, read as the same arguments.

Dynamo names what a graph reads after the frame's locals: the guards check
`L['x']`, Dynamo's graph takes `L_x_` (`L['self']._modules['fc1']` becomes
`L_self_modules_fc1_...`). A comparison reads those names as what is read,
so `x - y` -> `y - x` is a change of behaviour. A parameter renamed is not:
`forward(self, x)` -> `forward(self, inp)` still reads the first argument.
Each section's header names its function with its arguments
(`# ===== frame 0 compile 0: forward(self, x) =====`); where both sides name
them, the old side's locals are renamed to the new side's by place (the
positional arguments, and `*args`, `**kwargs`) or, for keyword-only
arguments, where one side's names are the other's renamed one for one.
A module global the frame reads renamed (a helper function `helper` ->
`combined`) is read the same way where it is the one global only the old
side reads and the new side's is the one only it reads: what the two read
is then compared as it stands (the code they inline, the values their
guards check). Everything else keeps its name: another argument read
(`x` -> `y`, both arguments) is behaviour, and so is a module attribute
renamed (what the state_dict holds changed).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from ..._torch.patterns.dynamo import LOCAL_INPUT, local_input_prefix
from ..artifacts.sections import ELIDED, SECTION_HEADER, split_at_headers

#: `L['x']`: a local as guards and reasons read it
_LOCAL = re.compile(r"(?<![\w.])L\[(['\"])([A-Za-z_]\w*)\1\]")
#: `G['helper']`: a module global the frame reads (names Dynamo makes up start with `_`)
_GLOBAL = re.compile(r"(?<![\w.])G\[(['\"])([A-Za-z]\w*)\1\]")
#: `tensor 'x' size mismatch`: a local as a recompile reason names it
_REASON_LOCAL = re.compile(r"(\btensor ')([A-Za-z_]\w*)(')")
#: `  - 0/1: ...`: a recompile reason of frame 0's compile 1
_REASON = re.compile(r"^  - (\d+)/(\d+): ")


def arguments(header: str) -> tuple[list[str], list[str]] | None:
    """(positional, keyword-only) arguments named by a section header; None where it names none.

    Positional holds `*args` and `**kwargs` as written, so a variadic keeps its place. A list
    cut short (`forward(self, x, ..., +25 more)`, `sections.MAX_HEADER`) gives the positional
    arguments it names before any `*` and no keyword-only ones: what it does not name is never
    paired, so a rename there reads as another argument (behaviour), never the reverse.
    """
    match = SECTION_HEADER.match(header)
    function = (match[3] or "") if match else ""
    if not function.endswith(")") or "(" not in function:
        return None
    inside = function[function.index("(") + 1 : -1]
    cut = inside.rfind("...")
    if cut >= 0 and ELIDED.match(inside[cut:]):
        named = [a.strip() for a in inside[:cut].split(",") if a.strip()]
        stop = next((i for i, a in enumerate(named) if a.startswith("*")), len(named))
        return named[:stop], []
    listed = [a.strip() for a in inside.split(",") if a.strip()]
    positional: list[str] = []
    keyword: list[str] = []
    star = False
    for name in listed:
        if name == "*" or (name.startswith("*") and not name.startswith("**")):
            star = True
            if name != "*":
                positional.append(name)
        elif name.startswith("**"):
            positional.append(name)
        else:
            (keyword if star else positional).append(name)
    return positional, keyword


def renames(old: tuple[list[str], list[str]], new: tuple[list[str], list[str]]) -> dict[str, str]:
    """Old local -> new local for the arguments renamed in place (see the module)."""
    mapping = {
        a.lstrip("*"): b.lstrip("*")
        for a, b in zip(old[0], new[0])
        if a != b
        and a.startswith("*") == b.startswith("*")
        and a.startswith("**") == b.startswith("**")
    }
    only_old = [a for a in old[1] if a not in new[1]]
    only_new = [b for b in new[1] if b not in old[1]]
    if len(only_old) == len(only_new):
        mapping.update(zip(only_old, only_new))
    return mapping


def renamed_sides(
    old: Mapping[str, str], new: Mapping[str, str]
) -> tuple[dict[str, str], list[str]]:
    """The old side's texts with its arguments renamed as the new side names them, and the
    renames (`x -> inp`), for each frame compile whose header both sides state."""
    frames_old, frames_new = _headers(old), _headers(new)
    per_frame = {
        key: mapping
        for key, header in frames_old.items()
        if key in frames_new
        for before, after in ((arguments(header), arguments(frames_new[key])),)
        if before is not None and after is not None
        for changed in (renames(before, after),)
        if changed
        # every local of the frame, so that `L_x_mask_` is `x_mask`'s when only `x` is renamed
        for mapping in (
            {**{a.lstrip("*"): a.lstrip("*") for a in before[0] + before[1]}, **changed},
        )
    }
    for key, mapping in _global_renames(old, new).items():
        per_frame.setdefault(key, {}).update(mapping)
    if not per_frame:
        return dict(old), []
    texts = {
        name: (_summary(text, per_frame) if name == "summary" else _sections(text, per_frame))
        for name, text in old.items()
    }
    said = sorted(
        {
            f"{a.removeprefix(_GLOBAL_KEY)} -> {b}"
            for mapping in per_frame.values()
            for a, b in mapping.items()
            if a.removeprefix(_GLOBAL_KEY) != b
        }
    )
    return texts, said


#: how a global's rename is keyed in a frame's mapping, apart from a local of the same name
_GLOBAL_KEY = "G:"


def _global_renames(
    old: Mapping[str, str], new: Mapping[str, str]
) -> dict[tuple[int, int], dict[str, str]]:
    """Per frame compile, the one global only the old side's guards read -> the one only the
    new side's read (see the module)."""
    before, after = _globals(old.get("guards", "")), _globals(new.get("guards", ""))
    found = {}
    for key in before.keys() & after.keys():
        gone, came = before[key] - after[key], after[key] - before[key]
        if len(gone) == len(came) == 1:
            found[key] = {_GLOBAL_KEY + gone.pop(): came.pop()}
    return found


def _globals(guards: str) -> dict[tuple[int, int], set[str]]:
    found: dict[tuple[int, int], set[str]] = {}
    for piece in split_at_headers(guards):
        match = SECTION_HEADER.match(piece.split("\n", 1)[0])
        if match:
            found[(int(match[1]), int(match[2]))] = {m[2] for m in _GLOBAL.finditer(piece)}
    return found


def _headers(texts: Mapping[str, str]) -> dict[tuple[int, int], str]:
    """Each frame compile's header line, as the sides' artifacts state it."""
    found: dict[tuple[int, int], str] = {}
    for text in texts.values():
        for line in text.splitlines():
            match = SECTION_HEADER.match(line)
            if match and match[3] and "(" in match[3]:
                found.setdefault((int(match[1]), int(match[2])), line)
    return found


def _sections(text: str, per_frame: Mapping[tuple[int, int], dict[str, str]]) -> str:
    pieces = []
    for piece in split_at_headers(text):
        match = SECTION_HEADER.match(piece.split("\n", 1)[0])
        mapping = per_frame.get((int(match[1]), int(match[2]))) if match else None
        if mapping:
            header, _, body = piece.partition("\n")
            piece = header + "\n" + rename_locals(body, mapping)
        pieces.append(piece)
    return "".join(pieces)


def _summary(text: str, per_frame: Mapping[tuple[int, int], dict[str, str]]) -> str:
    """A summary's recompile reasons name the frame compile they are about: renamed as it is."""
    lines = []
    for line in text.split("\n"):
        match = _REASON.match(line)
        mapping = per_frame.get((int(match[1]), int(match[2]))) if match else None
        if mapping:
            line = rename_locals(line, mapping)
            line = _REASON_LOCAL.sub(
                lambda m, names=mapping: m[1] + names[m[2]] + m[3] if m[2] in names else m[0], line
            )
        lines.append(line)
    return "\n".join(lines)


def rename_locals(text: str, mapping: Mapping[str, str]) -> str:
    """`L['x']` and Dynamo's input names made of it (`L_x_...`) renamed at once (a swap stays a
    swap); a global keyed `G:name` as `G['name']` and `G_name_...`."""
    local = {a: b for a, b in mapping.items() if not a.startswith(_GLOBAL_KEY)}
    glob = {a[len(_GLOBAL_KEY) :]: b for a, b in mapping.items() if a.startswith(_GLOBAL_KEY)}
    text = _LOCAL.sub(lambda m: f"L[{m[1]}{local.get(m[2], m[2])}{m[1]}]", text)
    text = _GLOBAL.sub(lambda m: f"G[{m[1]}{glob.get(m[2], m[2])}{m[1]}]", text)
    prefixes = sorted(
        [
            *((local_input_prefix(a), local_input_prefix(b)) for a, b in local.items()),
            *((local_input_prefix(a, "G"), local_input_prefix(b, "G")) for a, b in glob.items()),
        ],
        key=lambda pair: -len(pair[0]),
    )

    def placeholder(match: re.Match[str]) -> str:
        name = match[0]
        for before, after in prefixes:
            if name.startswith(before):
                return after + name[len(before) :]
        return name

    return LOCAL_INPUT.sub(placeholder, text) if "L_" in text or "G_" in text else text
