"""Guards compared: a check added, removed or changed, or only relabelled or moved.

Each frame compile's guards are read as checks (`guard_reading.parse_guards`)
and compared by check, kind and source, never by line text: the same check
under another kind or place is text; a check added, removed or checking
another value is behaviour. Pure: no files, torch or pytest.
"""

from __future__ import annotations

from collections import Counter

from ..._torch.patterns.guards import TYPE_NOTE
from ..artifacts.sections import GraphKey, split_sections
from .findings import Finding
from .reading.guard_reading import Guard, global_state, parse_guards


def compare_guards(old: str, new: str) -> list[Finding]:
    before, after = split_sections(old), split_sections(new)
    found: list[Finding] = []
    for key in sorted(set(before) | set(after)):
        found += _guard_findings(
            key, parse_guards(before.get(key, "")), parse_guards(after.get(key, ""))
        )
    if not found:
        found.append(
            Finding(
                False,
                "guards text",
                "guards: same checks; comments, layout or markers only",
                ("guards",),
            )
        )
    return found


def _guard_findings(key: GraphKey, old: list[Guard], new: list[Guard]) -> list[Finding]:
    checks_old = Counter(g.check for g in old if g.check)
    checks_new = Counter(g.check for g in new if g.check)
    found: list[Finding] = []
    relabelled = _relabelled(old, new, checks_old & checks_new)
    if relabelled:
        found.append(
            Finding(
                False,
                "guards relabelled",
                f"guards: same checks, other kind or place: {', '.join(relabelled)}",
                ("guards",),
            )
        )
    lost = _excess(old, checks_old - checks_new)
    gained = _excess(new, checks_new - checks_old)
    for a in list(lost):
        b = next((g for g in gained if (g.kind, g.source) == (a.kind, a.source)), None)
        if b is not None:
            lost.remove(a)
            gained.remove(b)
            found.append(_changed_guard(key, a, b))
    found += _added_or_removed(key, "removed", lost)
    found += _added_or_removed(key, "added", gained)
    return found


def _added_or_removed(key: GraphKey, how: str, guards: list[Guard]) -> list[Finding]:
    """One finding per guard kind: the check itself for a single guard, the sources for several."""
    found = []
    for kind in dict.fromkeys(g.kind for g in guards):
        same = [g for g in guards if g.kind == kind]
        sources = Counter(g.source or g.check for g in same)
        listed = ", ".join(f"{source} x{n}" if n > 1 else source for source, n in sources.items())
        what = _where(same[0]) if len(same) == 1 else f"{len(same)} {kind} on {listed}"
        fact = f"guards {how}: {kind} on {listed}"
        found.append(
            Finding(True, "guards", f"guards {key.label()}: {how} {what}", ("guards",), fact)
        )
    return found


def _excess(guards: list[Guard], extra: Counter[str]) -> list[Guard]:
    """The guards whose check this side has more often than the other (the last ones, when repeated)."""
    budget = Counter(extra)
    picked = []
    for guard in reversed(guards):
        if budget[guard.check] > 0:
            budget[guard.check] -= 1
            picked.append(guard)
    return picked[::-1]


def _relabelled(old: list[Guard], new: list[Guard], common: Counter[str]) -> list[str]:
    """`LAMBDA_GUARD -> OBJECT_ALIASING` for each check both sides have, under another kind or source."""
    places: tuple[dict[str, list[tuple[str, str]]], dict[str, list[tuple[str, str]]]] = ({}, {})
    for side, guards in zip(places, (old, new)):
        for g in guards:
            if g.check in common:
                side.setdefault(g.check, []).append((g.kind, g.source))
    moves = []
    for check in common:
        before, after = sorted(places[0][check]), sorted(places[1][check])
        if before != after:
            moves.append(
                f"{before[0][0]} -> {after[0][0]}"
                if before[0][0] != after[0][0]
                else f"{before[0][0]} moved"
            )
    return [f"{move} x{n}" if n > 1 else move for move, n in Counter(moves).items()]


def _changed_guard(key: GraphKey, old: Guard, new: Guard) -> Finding:
    before, after = global_state(old.check), global_state(new.check)
    if old.kind == "GLOBAL_STATE" and before is not None and after is not None:
        shared = set(before) & set(after)
        if all(before[k] == after[k] for k in shared):
            extra = sorted(set(before) ^ set(after))
            message = f"guards: GLOBAL_STATE checks a switch only one side knows ({', '.join(extra)}), the others equal"
            return Finding(False, "GLOBAL_STATE switches", message, ("guards",))
        moved = ", ".join(
            f"{k} {before[k]} -> {after[k]}" for k in sorted(shared) if before[k] != after[k]
        )
        return Finding(
            True,
            "guards",
            f"guards {key.label()}: GLOBAL_STATE {moved}",
            ("guards",),
            f"guards changed: GLOBAL_STATE {moved}",
        )
    retyped = _retyped(old.check, new.check)
    return Finding(
        True,
        "guards",
        f"guards {key.label()}: changed {_where(old)} -> {new.check}",
        ("guards",),
        f"guards changed: {old.kind} on {old.source or old.check}{retyped}",
    )


def _retyped(old: str, new: str) -> str:
    """`: <class 'A'> -> <class 'B'>` when two checks differ only in the class they compare."""
    before, after = TYPE_NOTE.match(old), TYPE_NOTE.match(new)
    if before is None or after is None or before[1] != after[1]:
        return ""
    return f": {old[len(before[1]) + 7 :]} -> {new[len(after[1]) + 7 :]}"


def _where(guard: Guard) -> str:
    """`ID_MATCH: ___check_obj_id(G['f'], <id>)`; the source is named when the check does not show it."""
    shown = guard.source and guard.source not in guard.check
    return (
        f"{guard.kind} on {guard.source}: {guard.check}"
        if shown
        else f"{guard.kind}: {guard.check}"
    )
