"""Guarded values whose order or position a process chooses, named by what they hold.

Two kinds, both read the same way by the snapshot's rules (`artifacts/registries.py`) and by
the program file's checks (`guards.py`), so neither stores nor checks what another process
may not reproduce:

- A list a library builds from a set: its order follows the process's `PYTHONHASHSEED`.
  einops keeps, per input axis of a pattern, the positions of its known axes as a list made
  from a set (`input_composition_known_unknown[2] == ([4, 3], [5])` in one process,
  `([3, 4], [5])` in another) and only multiplies them. `SET_BUILT` names such values; the
  snapshot sorts them and the program file compares them sorted. Another element still differs.
- A key of a dict reached from a global, which Dynamo guards by position
  (`list(dict.keys(G[...]._TENSORCLASS_MEMO))[36]`): where the dict is process-wide state
  (tensordict's memo of the classes it has seen, transformers' registries), the position says
  what the process did before. `global_dict_keys` names each such key by what it holds: the
  object another guarded source reads (`G['tensordict'].TensorDict is list(...)[37]`), the
  constant it equals, or the class its identity guard names. Another class still differs.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from ..._torch.patterns.guards import GLOBAL_DICT_KEY, GLOBAL_DICT_KEY_ALIAS, GLOBAL_DICT_KEY_ID

# --- lists built from sets ----------------------------------------------------------

#: `<attribute>[N] == (list, list)`: the attributes whose elements hold, at the given places, a
#: list a library builds from a set (einops' `TransformRecipe`: a group's known axes, then its
#: one unknown axis)
SET_BUILT: dict[str, tuple[int, ...]] = {"input_composition_known_unknown": (0,)}

#: `X.input_composition_known_unknown[2] == ([4, 3], [5])`: the guarded source and the literal
_SET_BUILT_GUARD = re.compile(
    r"(?P<source>[LG]\[[^\s#]*?\.(?P<attribute>"
    + "|".join(map(re.escape, SET_BUILT))
    + r")\[\d+\]) == (?P<value>\((?:\[[\d, ]*\](?:, )?)+\))"
)
_LIST = re.compile(r"\[[\d, ]*\]")


def sorted_set_built(code: str) -> str:
    """`X.input_composition_known_unknown[2] == ([4, 3], [5])` -> `... == ([3, 4], [5])`."""
    return _SET_BUILT_GUARD.sub(
        lambda m: f"{m['source']} == {_sorted_value(m['value'], SET_BUILT[m['attribute']])}", code
    )


def unordered_check(code: str) -> str:
    """The same guard as a Python check that holds whatever order the process built the lists in:
    `(sorted(X[0]), *X[1:]) == ([3, 4], [5])` (two lists are a tuple of two lists again)."""

    def check(m: re.Match[str]) -> str:
        places = SET_BUILT[m["attribute"]]
        parts = ", ".join(
            f"sorted({m['source']}[{i}])" if i in places else f"{m['source']}[{i}]"
            for i in range(len(_LIST.findall(m["value"])))
        )
        return f"({parts},) == {_sorted_value(m['value'], places)}"

    return _SET_BUILT_GUARD.sub(check, code)


def _sorted_value(value: str, places: tuple[int, ...]) -> str:
    lists = _LIST.findall(value)
    written = [
        str(sorted(int(n) for n in text[1:-1].split(",") if n.strip())) if i in places else text
        for i, text in enumerate(lists)
    ]
    return "(" + ", ".join(written) + ("," if len(written) == 1 else "") + ")"


# --- keys of global dicts, by what they hold ----------------------------------------


@dataclass(frozen=True)
class KeyName:
    """What a key read by position holds: `alias` (the object a source reads, `text` that source),
    `literal` (a constant, `text` its repr) or `class` (the class its identity guard names)."""

    kind: str
    text: str


def global_dict_keys(codes: Iterable[str]) -> dict[tuple[str, str], KeyName]:
    """(dict source, position) -> what the key there holds, for every key of a dict under `G[...]`
    that a guard names: by another source first (it is found again in any process), then by a
    constant, then by the class an identity guard prints."""
    names: dict[tuple[str, str], KeyName] = {}
    texts = list(codes)
    for text in texts:
        for m in GLOBAL_DICT_KEY_ID.finditer(text):
            names.setdefault((m[1], m[2]), KeyName("class", m[3]))
    for text in texts:
        for m in GLOBAL_DICT_KEY.finditer(text):
            if names.get((m[1], m[2]), KeyName("class", "")).kind == "class":
                names[(m[1], m[2])] = KeyName("literal", m[3])
    for text in texts:
        for m in GLOBAL_DICT_KEY_ALIAS.finditer(text):
            source, d, index = (m[1], m[2], m[3]) if m[1] else (m[6], m[4], m[5])
            names[(d, index)] = KeyName("alias", source)
    return names


def position(d: str, index: str) -> str:
    """`list(dict.keys(D))[N]`, as Dynamo writes a key by position."""
    return f"list(dict.keys({d}))[{index}]"
