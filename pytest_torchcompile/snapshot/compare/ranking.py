"""What a reviewer reads first: causes shared by many cases folded, cases in order of weight.

Each finding of a case is split into facts (one guard kind added, one op
removed from one graph, one text change in one artifact) keyed so that the
same cause in another model folds with it: a guard kind with the sources it
was installed on left out, an op with its count left out, a text change with
kernel names and numbers masked. A fact shared by at least `FOLD_AT` cases
(or by every changed case, when fewer changed) is said once with its count;
each case keeps what is its own. Fusion, kernel-code and counter findings
are never folded: they are what a reviewer must read case by case.

Tiers order the cases: counters moved, then generated code changed (kernels
fused otherwise, added, removed or with other code, other calls), ops, shapes
or dataflow changed, guards only, text only. A tier orders; what a report
says of a case is its verdict line's words (`CaseDiff.what_moved`), read from
the same findings as the test's verdict. Pure: findings in, text out.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from .behaviour import BEHAVIOUR, COUNTERS, TEXT, CaseDiff, Finding

#: a fact shared by this many changed cases is said once, above the cases.
FOLD_AT = 3
TIERS = (
    "counters moved",
    "generated code changed",
    "ops, shapes or dataflow changed",
    "guards only",
    "text only",
    "unchanged",
)
#: the finding topics of each behaviour tier (a topic not listed weighs as ops).
_TIER_TOPICS = {
    0: {*COUNTERS, "backend"},  # a counter's finding is topic'd by its name
    1: {
        "fusion",
        "kernel code",
        "extern calls",
        "call arguments",
        "generated code",
        "kernel names",
    },
    3: {"guards"},
}
_GUARDS = re.compile(
    r"^guards (?P<where>[^:]+): (?P<how>added|removed) (?:(?P<n>\d+) (?=[A-Z_]+ on ))?(?P<kind>[A-Z_]+)(?P<rest>.*)$"
)
_OPS = re.compile(r"^(?P<where>.*\bops): (?P<delta>[+-]\S+(?: x\d+)?(?: [+-]\S+(?: x\d+)?)*)$")
_OP = re.compile(r"(?P<op>[+-]\S+)(?: x(?P<n>\d+))?")
_KERNEL = re.compile(r"\b(?:cpp|triton)_\w+")


@dataclass(frozen=True)
class Fact:
    """One fold-able piece of a finding: `key` folds across cases, `text` is this case's wording."""

    key: tuple[str, ...]
    text: str
    behaviour: bool
    finding: int  # index of the finding it came from, to put a split finding back together
    amount: int = 1
    sources: tuple[str, ...] = ()


@dataclass(frozen=True)
class SharedCause:
    """A fact many cases share, said once: `12 of 12: guards +DICT_CONTAINS (6-10 per case) ...`."""

    behaviour: bool
    summary: str
    cases: tuple[str, ...]
    of: int

    def render(self) -> str:
        return f"{len(self.cases)} of {self.of}: {self.summary}"


def label(diff: CaseDiff) -> str:
    """What a report says moved in a case: its verdict line's words (`shapes, guards`), or its
    verdict where the line names nothing more. Never a tier's name: `ops changed` for a case
    whose ops did not change, or `fused differently` for `same fusion, code changed`, would
    name a change that did not happen."""
    return ", ".join(diff.what_moved()) or diff.verdict


def tier(diff: CaseDiff) -> int:
    """The case's weight, an index into TIERS: its heaviest behaviour finding."""
    if diff.verdict == TEXT:
        return 4
    if diff.verdict != BEHAVIOUR:
        return 5
    topics = {f.topic for f in diff.findings if f.behaviour}
    for rank in (0, 1):
        if topics & _TIER_TOPICS[rank]:
            return rank
    return 3 if topics <= _TIER_TOPICS[3] else 2


def facts(findings: Sequence[Finding]) -> list[Fact]:
    """Every finding split into facts (see the module docstring); one fact where it has no parts."""
    out: list[Fact] = []
    for index, f in enumerate(findings):
        guards = _GUARDS.match(f.message) if f.behaviour else None
        ops = _OPS.match(f.message) if f.behaviour else None
        if guards:
            out.append(_guard_fact(f, index, guards))
        elif ops:
            out += _op_facts(f, index, ops)
        elif not f.behaviour:
            out += [_text_fact(f, index, artifact) for artifact in f.artifacts or ("",)]
        else:
            out.append(Fact(("fact", f.render()), f.render(), True, index))
    return out


def _guard_fact(f: Finding, index: int, m: re.Match[str]) -> Fact:
    how, kind, rest = m["how"], m["kind"], m["rest"]
    if m["n"]:  # several guards of one kind: the kind folds, whatever it guards
        sources = tuple(re.sub(r" x\d+$", "", s) for s in _split_top(rest.removeprefix(" on ")))
        return Fact(
            ("guards", m["where"], how, kind), f.render(), True, index, int(m["n"]), sources
        )
    return Fact(("guards", m["where"], how, kind, _shape(rest)), f.render(), True, index)


def _op_facts(f: Finding, index: int, m: re.Match[str]) -> list[Fact]:
    where = ", ".join(f.artifacts)
    return [
        Fact(("ops", m["where"], op["op"], where), op[0], True, index, int(op["n"] or 1))
        for op in _OP.finditer(m["delta"])
    ]


def _text_fact(f: Finding, index: int, artifact: str) -> Fact:
    masked = re.sub(r"\b(x?)\d+\b", r"\1N", _KERNEL.sub("<kernel>", f.message))
    return Fact(("text", f.topic, masked, artifact), f.message, False, index)


def _shape(text: str) -> str:
    """A guard's check with what differs per model masked: subscripts, compared values, ids."""
    text = re.sub(r"\['[^']*'\]", "[…]", text)
    return re.sub(r" (==|!=|is not|is) .*$", r" \1 …", text)


def _split_top(text: str) -> list[str]:
    """`a[1, 2], b` -> [`a[1, 2]`, `b`]: commas outside brackets and quotes."""
    parts, depth, quoted, start = [], 0, False, 0
    for i, ch in enumerate(text):
        if ch == "'":
            quoted = not quoted
        elif not quoted and ch in "([{":
            depth += 1
        elif not quoted and ch in ")]}":
            depth -= 1
        elif not quoted and depth == 0 and text.startswith(", ", i):
            parts.append(text[start:i])
            start = i + 2
    return [*parts, text[start:]]


@dataclass
class Folding:
    """The shared causes of a set of changed cases, and what each case says of its own."""

    causes: list[SharedCause] = field(default_factory=list)
    own: dict[str, list[str]] = field(default_factory=dict)  # case -> behaviour lines
    own_text: dict[str, list[str]] = field(default_factory=dict)  # case -> text facts


def fold(diffs: Mapping[str, CaseDiff]) -> Folding:
    """Fold the facts of the changed cases (`diffs`: case id -> its diff) into shared causes."""
    per_case = {case: facts(diff.findings) for case, diff in diffs.items()}
    holders: dict[tuple[str, ...], list[str]] = {}
    for case, found in per_case.items():
        for key in dict.fromkeys(f.key for f in found):
            holders.setdefault(key, []).append(case)
    needed = min(FOLD_AT, len(diffs))
    shared = {k for k, cases in holders.items() if len(cases) >= max(2, needed) and _foldable(k)}
    folding = Folding()
    for key in sorted(shared, key=lambda k: (-len(holders[k]), k[0] == "text", k)):
        mine = {case: [f for f in per_case[case] if f.key == key] for case in holders[key]}
        behaviour = next(iter(mine.values()))[0].behaviour
        folding.causes.append(
            SharedCause(behaviour, _summary(key, mine), tuple(holders[key]), len(diffs))
        )
    for case, found in per_case.items():
        kept = [f for f in found if f.key not in shared]
        folding.own[case] = _rejoined(diffs[case].findings, kept)
        folding.own_text[case] = _text_lines(f for f in kept if not f.behaviour)
    return folding


def _foldable(key: tuple[str, ...]) -> bool:
    return key[0] in ("guards", "ops", "text")


def _summary(key: tuple[str, ...], mine: dict[str, list[Fact]]) -> str:
    """The cause in words; `mine`: each holding case's facts of it."""
    amounts = sorted({sum(f.amount for f in found) for found in mine.values()})
    per_case = (
        f" ({amounts[0]}-{amounts[-1]} per case)"
        if len(amounts) > 1
        else (f" ({amounts[0]} per case)" if amounts[0] > 1 else "")
    )
    if key[0] == "guards":
        sign = "+" if key[2] == "added" else "-"
        detail = key[4] if len(key) > 4 else ""
        common = Counter(
            s for found in mine.values() for s in dict.fromkeys(x for f in found for x in f.sources)
        ).most_common(1)
        seen = f", most often on {common[0][0]} ({common[0][1]} cases)" if common else ""
        return f"guards {key[1]}: {sign}{key[3]}{detail}{per_case}{seen}"
    if key[0] == "ops":
        return f"{key[1]}: {key[2]} in {key[3]}{per_case}"
    message, artifact = key[2], key[3]
    named = not artifact or message.startswith(artifact)
    return (message if named else f"{message} ({artifact})") + per_case


def _rejoined(findings: Sequence[Finding], kept: list[Fact]) -> list[str]:
    """The behaviour lines a case keeps: a finding whole where no part folded, else its parts left."""
    lines = []
    for index, f in enumerate(findings):
        if not f.behaviour:
            continue
        parts = [k for k in kept if k.finding == index]
        if len(parts) == len(facts([f])):
            lines.append(f.render())
        elif parts and parts[0].key[0] == "ops":
            lines.append(
                f"{parts[0].key[1]}: {' '.join(p.text for p in parts)} ({parts[0].key[3]})"
            )
        else:
            lines += [p.text for p in parts]
    return lines


def _text_lines(kept: Iterable[Fact]) -> list[str]:
    """Text facts merged back by message: one line naming every artifact it was found in."""
    merged: dict[tuple[str, str], list[str]] = {}
    for fact in kept:
        artifact = fact.key[3]
        merged.setdefault((fact.key[1], fact.text), []).extend([artifact] if artifact else [])
    return [Finding(False, t, m, tuple(a)).render() for (t, m), a in merged.items()]
