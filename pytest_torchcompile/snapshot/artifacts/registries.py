"""Rules for guards on what a process chose: a registry's positions, a set-built list's order.

Pure, idempotent text rules (`normalize.STATIC_RULES` runs them in order), over the guard tree,
the stored form and the program file's lines alike. What a key or a list means is read by
`emit/unordered.py`, which the program file's checks share: the snapshot stores what the guard
means (the class a registry entry holds, the set of axes), never an order or a position
another process may not reproduce, and another class or axis still reads as another check.
"""

from __future__ import annotations

import re

from ..._torch.patterns.guards import (
    GLOBAL_DICT_MANAGER,
    GLOBAL_DICT_POSITION,
    KEY_VALUE_PAIR,
    TREE_PREFIX_OR_KEY,
)
from ..emit.unordered import SET_BUILT, KeyName, global_dict_keys, position, sorted_set_built


def stable_global_dict_keys(text: str) -> str:
    """Guards on a dict reached from a module global: by what its keys hold, not by position.

    Dynamo guards a dict key by key, by position: `list(dict.keys(D))[13] ==
    "<class '...BartEncoder'>"`, `___check_obj_id(list(dict.keys(D))[36], <id>),
    type=<class 'torch.nn.parameter.Parameter'>`, `G['tensordict'].TensorDict is
    list(dict.keys(D))[37]`. When D is process-global state of a library (transformers'
    `_CAN_RECORD_REGISTRY` gains a key for every model class built in the process,
    tensordict's `_TENSORCLASS_MEMO` one for every class it has seen), the positions, and the
    keys before the one looked up, say what earlier tests did. So for a dict under `G[...]`: a
    key the compile read (its value is guarded too) stays, written as what it holds (`K in
    dict.keys(D)`, `D[K]`); a key it only checked by position is left out; a position no guard
    names is masked (`[<key>]`). Dicts reached from the frame's locals (`L[...]`) are
    untouched: their order is the test's own. Nested dicts come out on the next pass.
    """
    for _ in range(4):
        rewritten = _global_dict_keys_once(text)
        if rewritten == text:
            break
        text = rewritten
    return text


def _global_dict_keys_once(text: str) -> str:
    if "list(dict.keys(G[" not in text:
        return text
    positions = {(m[1], m[2]) for m in GLOBAL_DICT_POSITION.finditer(text)}
    names = global_dict_keys([text])
    read = set()
    for d, index in positions:
        key = position(d, index)
        lookup = f"dict.__getitem__({d}, {key})"
        text = text.replace(lookup, f"{d}[{key}]")
        if f"{d}[{key}]" in text or f"{d}[{names.get((d, index), KeyName('', '')).text}]" in text:
            read.add((d, index))
    lines = []
    for line in text.split("\n"):
        found = [(d, i) for (d, i) in positions if position(d, i) in line]
        if found and not any(f in read for f in found) and _droppable_key_line(line):
            if all(f in names for f in found):
                continue
        for d, index in found:
            line = _named(line, d, index, names.get((d, index)))
        lines.append(line)
    return "\n".join(lines)


def _named(line: str, d: str, index: str, name: KeyName | None) -> str:
    """One line with the key at `index` of `d` written as what it holds (masked if nothing says)."""
    key = position(d, index)
    if name is None:
        return line.replace(key, f"list(dict.keys({d}))[<key>]")
    held = f"{name.text} in dict.keys({d})"
    line = re.sub(
        rf"___check_obj_id\({re.escape(key)}, (?:\d+|<id>)\), type=<class '[^'\n]*'>", held, line
    )
    line = re.sub(rf"{re.escape(key)} == (\"[^\"\n]*\"|'[^'\n]*')", rf"\1 in dict.keys({d})", line)
    if name.kind == "alias":
        source = re.escape(name.text)
        line = re.sub(rf"{source} is {re.escape(key)}|{re.escape(key)} is {source}", held, line)
    return line.replace(key, name.text)


def _droppable_key_line(line: str) -> bool:
    """A tree or compact guard line, or a joined `and ...` line of the program."""
    return bool(TREE_PREFIX_OR_KEY.match(line)) or line.lstrip().startswith(
        ("and ", "EQUALS_MATCH:", "KeyManager:", "ID_MATCH:", "LAMBDA_GUARD:")
    )


def sort_global_dict_entries(text: str) -> str:
    """The key-and-value guards of a dict under `G[...]` in the order of their text, not of positions.

    Dynamo checks a dict's guarded entries by position (`KeyValueManager pair at index=36`);
    with the keys named by what they hold (`stable_global_dict_keys`, which runs first), the
    positions, and the order they give, are what another process did before. The entries of a
    dict are a conjunction: their order is not part of what they check.
    """
    if "KeyValueManager pair at index=" not in text:
        return text
    lines, out, i = text.split("\n"), [], 0
    while i < len(lines):
        out.append(lines[i])
        match = GLOBAL_DICT_MANAGER.match(lines[i])
        i += 1
        if not match:
            continue
        child = len(match[1]) + 2
        blocks: list[list[str]] = []
        while i < len(lines) and _depth(lines[i]) >= child:
            if _depth(lines[i]) == child or not blocks:
                blocks.append([])
            blocks[-1].append(KEY_VALUE_PAIR.sub(r"\1<key>", lines[i]))
            i += 1
        out.extend(line for block in sorted(blocks, key=_entry_key) for line in block)
    return "\n".join(out)


#: a name Dynamo numbers (`_1402..._c0`, and `_obj0` once renumbered by first use, which follows
#: this very order): masked in the sort's key, so that sorting the renumbered text keeps its order
_NUMBERED_NAME = re.compile(r"(?<=[A-Za-z_'])_(?:\d{6,}_c\d+(?:/\d+)*|obj\d+)(?![\w/])")


def _entry_key(block: list[str]) -> tuple[list[str], list[str]]:
    return [_NUMBERED_NAME.sub("_#", line) for line in block], block


def _depth(line: str) -> int:
    """Characters before `+- ` on a guard tree line; -1 for any other line."""
    index = line.find("+- ")
    return index if index >= 0 and not line[:index].replace("| ", "").strip() else -1


def sort_set_built_lists(text: str) -> str:
    """`EQUALS_MATCH: X.input_composition_known_unknown[2] == ([4, 3], [5])` -> `([3, 4], [5])`.

    The lists `emit/unordered.SET_BUILT` names are made from a set, in the order the set
    iterates, which for strings follows `PYTHONHASHSEED`; their library reads them as a set.
    Sorted, every process writes them alike; another element still shows.
    """
    if not any(name in text for name in SET_BUILT):
        return text
    return "\n".join(
        sorted_set_built(line)
        if "EQUALS_MATCH" in line and any(n in line for n in SET_BUILT)
        else line
        for line in text.split("\n")
    )
