"""Cache keys by their parts: kept compact beside a baseline, compared, and read for why a warm start missed.

A key's components (torch's `[hash] name: value` lines) number in the
hundreds (every Inductor config entry is one), so a baseline keeps them
compact. Parts are grouped by the name before `[`: `inductor_config[cpp.simdlen]`
is entry `cpp.simdlen` of group `inductor_config`; a group keeps a hash of
its entry names and each entry's value in their order; a value is kept as
printed when short (`None`, `256`), else as `#` and torch's hash of it (a
graph, a tensor's metadata). The entry names are read from this run's own
lookups, so a moved entry is named whenever both sides list the same
entries. A part that differed between the runs of a side is `~` and never
compared: what varies from process to process cannot fail a gate.
"""

from __future__ import annotations

import difflib
import hashlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..._torch.compile_cost import Component, Lookup

#: longest value kept as printed (longer ones are kept as their hash)
SHORT = 40
UNSTABLE = "~"
#: a group stored as it is in the first key (Inductor's config is the same for every graph of a case)
SAME_AS_FIRST = "=0"
#: longest text of a value shown in a message
SHOWN = 60
#: a line's words, each with the spaces and punctuation after it
WORD = re.compile(r"[\w.]+\W*|\W+")


@dataclass(frozen=True)
class Group:
    """The entries of one group of key parts: a hash of their names, their values in order,
    and (in this process only, never stored) the names themselves."""

    names: str
    values: tuple[str, ...]
    entries: tuple[str, ...] = ()

    def to_json(self) -> dict[str, object]:
        return {"names": self.names, "values": list(self.values)}


Part = str | Group


@dataclass(frozen=True)
class KeyShape:
    """One cache lookup's key, compact: the cache, the key (or `~`), its parts by group."""

    cache: str
    key: str
    parts: Mapping[str, Part]


def _value(component: Component) -> str:
    value = component.value
    if len(value) <= SHORT and "\n" not in value and value != UNSTABLE:
        return value
    return "#" + component.hash[:10]


def _split(name: str) -> tuple[str, str | None]:
    """`inductor_config[cpp.simdlen]` -> (`inductor_config`, `cpp.simdlen`); `gm` -> (`gm`, None)."""
    group, bracket, rest = name.partition("[")
    if not bracket or not rest.endswith("]"):
        return name, None
    return group, rest[:-1]


def _names_hash(entries: Sequence[str]) -> str:
    return hashlib.sha256("\n".join(entries).encode()).hexdigest()[:10]


def compact(lookup: Lookup) -> KeyShape:
    """A lookup's key as the baseline keeps it."""
    singles: dict[str, str] = {}
    grouped: dict[str, list[tuple[str, str]]] = {}
    for component in lookup.components:
        group, entry = _split(component.name)
        if entry is None:
            singles[group] = _value(component)
        else:
            grouped.setdefault(group, []).append((entry, _value(component)))
    parts: dict[str, Part] = dict(singles)
    for group, items in grouped.items():
        entries = tuple(entry for entry, _ in items)
        parts[group] = Group(_names_hash(entries), tuple(v for _, v in items), entries)
    return KeyShape(lookup.cache, lookup.key, parts)


def fold_keys(runs: Sequence[Sequence[Lookup]]) -> tuple[KeyShape, ...]:
    """The keys of several runs of a side, each part that differed between them `~`.

    Runs that looked up different caches (or a different number of times) keep no key.
    """
    shapes = [[compact(lookup) for lookup in run] for run in runs]
    if not shapes or any([s.cache for s in run] != [s.cache for s in shapes[0]] for run in shapes):
        return ()
    return tuple(_fold_one(list(same)) for same in zip(*shapes))


def _fold_one(shapes: list[KeyShape]) -> KeyShape:
    first = shapes[0]
    key = first.key if all(s.key == first.key for s in shapes) else UNSTABLE
    parts: dict[str, Part] = {}
    for name, part in first.parts.items():
        others = [s.parts.get(name) for s in shapes]
        parts[name] = _fold_part(part, others)
    return KeyShape(first.cache, key, parts)


def _fold_part(part: Part, others: list[Part | None]) -> Part:
    if isinstance(part, str):
        return part if all(o == part for o in others) else UNSTABLE
    groups = [o for o in others if isinstance(o, Group) and o.names == part.names]
    if len(groups) != len(others):
        return UNSTABLE
    values = tuple(
        v if all(g.values[i] == v for g in groups) else UNSTABLE for i, v in enumerate(part.values)
    )
    return replace(part, values=values)


def keys_to_json(keys: Sequence[KeyShape]) -> list[dict[str, object]]:
    """Compact JSON: a group equal to the first key's of that name is stored as `=0`."""
    first = keys[0].parts if keys else {}
    stored = []
    for index, shape in enumerate(keys):
        parts: dict[str, object] = {}
        for name, part in shape.parts.items():
            if index and isinstance(part, Group) and first.get(name) == part:
                parts[name] = SAME_AS_FIRST
            else:
                parts[name] = part.to_json() if isinstance(part, Group) else part
        stored.append({"cache": shape.cache, "key": shape.key, "parts": parts})
    return stored


def keys_from_json(data: Sequence[Mapping[str, Any]]) -> tuple[KeyShape, ...]:
    keys: list[KeyShape] = []
    for item in data:
        parts: dict[str, Part] = {}
        for name, part in dict(item["parts"]).items():
            if part == SAME_AS_FIRST and keys:
                parts[name] = keys[0].parts[name]
            elif isinstance(part, Mapping):
                parts[name] = Group(str(part["names"]), tuple(map(str, part["values"])))
            else:
                parts[name] = str(part)
        keys.append(KeyShape(str(item["cache"]), str(item["key"]), parts))
    return tuple(keys)


def moved_parts(base: KeyShape, now: KeyShape) -> list[str]:
    """What moved from `base` to `now`, one `name old -> new` per part (names from `now`)."""
    moved = []
    for name in sorted(set(base.parts) | set(now.parts), key=_gm_first):
        old, new = base.parts.get(name), now.parts.get(name)
        if old is None or new is None:
            moved.append(f"{name} {'added' if old is None else 'removed'}")
        elif isinstance(old, Group) and isinstance(new, Group):
            moved += _moved_entries(name, old, new)
        elif isinstance(old, str) and isinstance(new, str):
            if UNSTABLE not in (old, new) and old != new:
                moved.append(_change(name, old, new))
        else:
            moved.append(f"{name} changed shape")
    return moved


def _gm_first(name: str) -> tuple[bool, str]:
    return name != "gm", name


def _moved_entries(name: str, old: Group, new: Group) -> list[str]:
    if old.names != new.names:
        return [f"{name}: its entries changed ({len(old.values)} -> {len(new.values)})"]
    moved = []
    for i, (a, b) in enumerate(zip(old.values, new.values)):
        if UNSTABLE not in (a, b) and a != b:
            entry = new.entries[i] if i < len(new.entries) else f"#{i}"
            moved.append(_change(f"{name}[{entry}]", a, b))
    return moved


def _change(name: str, old: str, new: str) -> str:
    if old.startswith("#") or new.startswith("#"):
        return f"{name} changed" if new.startswith("#") else f"{name} -> {new}"
    return f"{name} {old} -> {new}"


def warm_miss_causes(cold: Lookup, warm: Lookup) -> list[str]:
    """Why a warm lookup missed what the cold one stored: each part whose value differs,
    with its first differing line (`gm: mul(relu, 1.5) -> mul(relu, 1.552)`)."""
    before = {c.name: c for c in cold.components}
    causes = []
    for part in sorted(warm.components, key=lambda c: _gm_first(c.name)):
        old = before.get(part.name)
        if old is None:
            causes.append(f"{part.name} added")
        elif old.hash != part.hash:
            causes.append(f"{part.name}: {_first_difference(old.value, part.value)}")
    return causes


def _first_difference(old: str, new: str) -> str:
    """The first line that differs, as `old -> new`, each cut to the words that differ
    (`linear * 1.597 -> linear * 1.5838`, not the whole graph line)."""
    a, b = old.splitlines() or [""], new.splitlines() or [""]
    for tag, i1, _, j1, _ in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if tag != "equal":
            left = a[i1].strip() if i1 < len(a) else ""
            right = b[j1].strip() if j1 < len(b) else ""
            return " -> ".join(_cut(x) or "(no line)" for x in _differing_words(left, right))
    return f"{_cut(old)} -> {_cut(new)}"


def _differing_words(old: str, new: str) -> tuple[str, str]:
    """Both lines less their common words at each end, but the word before the first difference."""
    a, b = WORD.findall(old), WORD.findall(new)
    start = 0
    while start < min(len(a), len(b)) and a[start] == b[start]:
        start += 1
    end = 0
    while end < min(len(a), len(b)) - start and a[-1 - end] == b[-1 - end]:
        end += 1
    start = max(start - 1, 0)
    return "".join(a[start : len(a) - end]).strip(" ;"), "".join(b[start : len(b) - end]).strip(
        " ;"
    )


def _cut(text: str) -> str:
    return text if len(text) <= SHOWN else text[: SHOWN - 3] + "..."
