"""A case's compile-time block, and what moved against the baseline's, in words.

`CompileBlock` is what a `CaseRecord` holds of the fresh-process compiles:
both sides' facts, the cold start's cache keys, how many runs a side, the
worst contention they saw, and why this run's warm lookups missed (each warm
key against the cold start's in the same cache folder). The comparisons
return sentences, most decisive first, for the gate's rows and a failure's
first line: `warm start missed the FX graph cache (2 of 2 lookups): gm:
mul(relu, 1.5) -> mul(relu, 1.552)`. Pure data and text: no torch, no pytest.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ..contention import Contention, worst_contention
from ..stats import Summary, summarize_runs
from .keys import (
    UNSTABLE,
    KeyShape,
    fold_keys,
    keys_from_json,
    keys_to_json,
    moved_parts,
    warm_miss_causes,
)
from .runs import CACHE_LABELS, SIDES, SWITCH, CompileRun, SideFacts, Varies, fold, label

#: what each run measures, pooled per side into the metric `<side>_<figure>` (`cold_cpu_s` ...)
FIGURES = ("cpu_s", "wall_s", "frame_compile_s")

#: the warm contract: a warm start finds every graph in the caches and redoes none of the work
#: (fact, what a warm start does when the fact is not 0)
WARM_CONTRACT = (
    ("fx_graph.miss", "missed the FX graph cache"),
    ("fx_graph.bypass", "bypassed the FX graph cache"),
    ("aot_autograd.miss", "missed the AOTAutograd cache"),
    ("aot_autograd.bypass", "bypassed the AOTAutograd cache"),
    ("codegen", "ran codegen"),
    ("joint_trace", "traced the AOT joint graph"),
    ("autotune", "autotuned"),
)
#: most moved key parts a sentence names
NAMED = 3
#: the exact rows of a case's fresh-process compiles: a FAIL's note is the sentence saying what moved
FACT_METRICS = ("compile facts (cold)", "compile facts (warm)", "cache keys")


@dataclass(frozen=True)
class CompileBlock:
    """The fresh-process compiles of one case: `runs` a side."""

    runs: int
    cold: SideFacts
    warm: SideFacts
    keys: tuple[KeyShape, ...] = ()
    contention: Contention | None = None
    warm_misses: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "runs": self.runs,
            "cold": self.cold.to_json(),
            "warm": self.warm.to_json(),
            "keys": keys_to_json(self.keys),
        }
        if self.contention is not None:
            data["contention"] = self.contention.to_json()
        if self.warm_misses:
            data["warm_misses"] = list(self.warm_misses)
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> CompileBlock:
        """As stored; a ValueError or KeyError says what is damaged."""
        runs = data["runs"]
        if isinstance(runs, bool) or not isinstance(runs, int) or runs < 1:
            raise ValueError(f"runs: {runs!r} is not a positive count")
        contention = data.get("contention")
        return cls(
            runs,
            SideFacts.from_json(data["cold"]),
            SideFacts.from_json(data["warm"]),
            keys_from_json(data.get("keys", [])),
            Contention.from_json(contention) if isinstance(contention, Mapping) else None,
            tuple(map(str, data.get("warm_misses", []))),
        )

    def side(self, name: str) -> SideFacts:
        return self.cold if name == "cold" else self.warm


@dataclass
class CompileRuns:
    """The runs measured so far, each side in run order (run i of both sides shared a cache folder)."""

    cold: list[CompileRun] = field(default_factory=list)
    warm: list[CompileRun] = field(default_factory=list)

    def block(self) -> CompileBlock:
        return build_block(self.cold, self.warm)

    def samples(self) -> dict[str, tuple[float, ...]]:
        """Each run's figures, by metric name, in run order."""
        return {
            f"{side}_{figure}": tuple(getattr(run, figure) for run in self.side(side))
            for figure in FIGURES
            for side in SIDES
        }

    def metrics(self, confidence: float) -> dict[str, Summary]:
        """Each figure's median over the runs, with the interval few runs leave (`summarize_runs`)."""
        return {name: summarize_runs(values, confidence) for name, values in self.samples().items()}

    def side(self, name: str) -> list[CompileRun]:
        return self.cold if name == "cold" else self.warm


def build_block(cold: Sequence[CompileRun], warm: Sequence[CompileRun]) -> CompileBlock:
    """Fold the runs of each side; run i of each side shared one cache folder."""
    return CompileBlock(
        runs=min(len(cold), len(warm)),
        cold=fold(cold),
        warm=fold(warm),
        keys=fold_keys([run.lookups for run in cold]),
        contention=_with_reference(
            worst_contention(run.contention for run in (*cold, *warm)), cold
        ),
        warm_misses=tuple(dict.fromkeys(c for pair in zip(cold, warm) for c in _misses(*pair))),
    )


def _with_reference(merged: Contention, cold: Sequence[CompileRun]) -> Contention:
    """The worst of each signal, but the reference compile's median over the pairs (each pair's
    runs carry the reference measured before it): the machine's speed, not its worst moment."""
    references = [run.contention.reference_s for run in cold if run.contention.reference_s]
    return replace(merged, reference_s=statistics.median(references) if references else None)


def _misses(cold: CompileRun, warm: CompileRun) -> list[str]:
    """Why the warm run's lookups missed what the cold run in its folder had stored."""
    stored = {}
    for lookup in cold.lookups:
        stored.setdefault(lookup.cache, []).append(lookup)
    seen: dict[str, int] = {}
    causes = []
    for lookup in warm.lookups:
        index = seen.get(lookup.cache, 0)
        seen[lookup.cache] = index + 1
        earlier = stored.get(lookup.cache, [])
        if lookup.outcome == "hit" or index >= len(earlier):
            continue
        found = warm_miss_causes(earlier[index], lookup)
        causes += found or [
            f"no part of the {CACHE_LABELS.get(lookup.cache, lookup.cache)} key differs from the "
            "cold start's: the cold start stored nothing it could find"
        ]
    return causes


def contract_breaks(side: SideFacts) -> dict[str, str]:
    """The warm contract's clauses `side` breaks: fact -> what the warm start did."""
    broken = {}
    for fact, words in WARM_CONTRACT:
        value = side.facts.get(fact, 0)
        values = value.values if isinstance(value, Varies) else (value,)
        if any(v != 0 for v in values):
            broken[fact] = words
    return broken


def fact_changes(base: SideFacts, now: SideFacts) -> list[str]:
    """`<fact> old -> new` for each fact the baseline's runs agreed on that this run's did not
    keep; a cache switch first (`enable_autograd_cache True -> False`: the likely cause)."""
    changes = []
    for name, old in sorted(base.facts.items(), key=lambda item: not item[0].startswith(SWITCH)):
        if isinstance(old, Varies):
            continue
        new = now.facts.get(name, "absent")
        if new != old:
            changes.append(f"{label(name)} {old} -> {new}")
    return changes


def warm_sentence(base: CompileBlock, now: CompileBlock) -> str:
    """`warm start missed the FX graph cache (2 of 2 lookups): <cause>`, when this run breaks a
    clause of the warm contract the baseline's warm starts kept; '' otherwise."""
    kept = contract_breaks(base.warm)
    new = {f: w for f, w in contract_breaks(now.warm).items() if f not in kept}
    clauses = [f"{words} ({_how_much(fact, base.warm, now.warm)})" for fact, words in new.items()]
    clauses += _fewer_hits(base.warm, now.warm)
    if not clauses:
        return ""
    causes = list(now.warm_misses) + _switch_moves(base, now)
    return "warm start " + ", ".join(clauses) + (f": {causes[0]}" if causes else "")


def _fewer_hits(base: SideFacts, now: SideFacts) -> list[str]:
    """A cache the warm start hit less often than the baseline's, without missing it (switched
    off, it is not even looked up): `stopped hitting the AOTAutograd cache (hits 1 -> 0)`."""
    clauses = []
    for cache, words in CACHE_LABELS.items():
        old, new = base.facts.get(f"{cache}.hit"), now.facts.get(f"{cache}.hit")
        missed = now.facts.get(f"{cache}.miss")
        if isinstance(old, int) and isinstance(new, int) and new < old and missed == 0:
            clauses.append(f"stopped hitting the {words} (hits {old} -> {new})")
    return clauses


def _how_much(fact: str, base: SideFacts, now: SideFacts) -> str:
    value = now.facts.get(fact, 0)
    if fact.endswith((".miss", ".bypass")) and isinstance(value, int):
        cache = fact.split(".")[0]
        total = sum(
            v
            for o in ("hit", "miss", "bypass")
            if isinstance(v := now.facts.get(f"{cache}.{o}"), int)
        )
        return f"{value} of {total} lookups"
    return f"{base.facts.get(fact, 0)} -> {value}"


def _switch_moves(base: CompileBlock, now: CompileBlock) -> list[str]:
    """The cache switches that moved (`enable_autograd_cache True -> False`): a warm start's likely cause."""
    switches = {n: v for n, v in base.warm.facts.items() if n.startswith(SWITCH)}
    return fact_changes(SideFacts(switches), now.warm)


def side_findings(side: str, base: CompileBlock, now: CompileBlock) -> list[str]:
    """What moved on one side, the warm contract first (the sentence a failure opens with)."""
    changes = fact_changes(base.side(side), now.side(side))
    if not changes:
        return []
    head = warm_sentence(base, now) if side == "warm" else ""
    detail = f"{side} start: {', '.join(changes)}"
    return [head, detail] if head else [detail]


def key_findings(base: Sequence[KeyShape], now: Sequence[KeyShape]) -> list[str]:
    """Each cache whose key moved since the baseline, naming the parts that moved."""
    if not base or not now:
        return []
    if [k.cache for k in base] != [k.cache for k in now]:
        return [f"the case looks up {len(now)} cache keys, the baseline {len(base)}"]
    found = []
    for old, new in zip(base, now):
        if UNSTABLE in (old.key, new.key) or old.key == new.key:
            continue
        moved = moved_parts(old, new) or ["a part that varies from run to run"]
        more = f" and {len(moved) - NAMED} more" if len(moved) > NAMED else ""
        found.append(
            f"{CACHE_LABELS.get(new.cache, new.cache)} key moved since the baseline "
            f"(a cache restored from it misses): {', '.join(moved[:NAMED])}{more}"
        )
    return list(dict.fromkeys(found))


def grown_phase(base: SideFacts, now: SideFacts, outer: frozenset[str]) -> str:
    """`<phase> +4.1 s`: the innermost phase that holds most of the growth; '' if none grew.

    Phases nest (`compile_fx_inner` wraps `GraphLowering.codegen`), and the
    records do not say how: a phase is taken to hold the growth when it grew by
    at least half as much as the phase that grew most, and of those the one
    that took least time is the innermost. The `outer` phases (those that wrap
    a whole compile) are named only when no other phase holds the growth, saying
    that the time went to no phase torch times inside it (the C++ compile of a
    kernel written, a hook installed, a burn planted in the lowering).
    """
    growth = {name: seconds - base.phases.get(name, 0.0) for name, seconds in now.phases.items()}
    top = max(growth.values(), default=0.0)
    if top <= 0:
        return ""
    holding = [name for name, grown in growth.items() if grown >= top / 2]
    inner = [name for name in holding if name not in outer]
    name = min(inner or holding, key=lambda n: (now.phases[n], n))
    where = "" if inner else " (in no phase torch times inside it)"
    return f"{name} +{growth[name]:.3g} s{where}"


@dataclass(frozen=True)
class FactRow:
    """One exact row: what the baseline and this run show, what moved, or why it is not gated."""

    metric: str
    baseline: str
    now: str
    moved: tuple[str, ...] = ()
    not_gated: str = ""


def fact_rows(
    base: CompileBlock, now: CompileBlock, same_machine: bool, software: str, source: str
) -> list[FactRow]:
    """Each side's facts and the cache keys against the baseline's (`FACT_METRICS`).

    On another machine nothing is compared (C++ compiler runs, autotunings
    and the keys are the machine's); keys not under other software either
    (they hold torch's version, so an upgrade moves every one).
    """
    cells = {f"compile facts ({s})": (base.side(s).summary(), now.side(s).summary()) for s in SIDES}
    cells["cache keys"] = (f"{len(base.keys)} keys", f"{len(now.keys)} keys")
    if not same_machine:
        return [FactRow(m, *cells[m], not_gated=f"other machine ({source})") for m in FACT_METRICS]
    rows = [
        FactRow(
            f"compile facts ({side})",
            *cells[f"compile facts ({side})"],
            tuple(side_findings(side, base, now)),
        )
        for side in SIDES
    ]
    if software:
        reason = f"other software ({software}): keys carry the versions"
        return [*rows, FactRow("cache keys", *cells["cache keys"], not_gated=reason)]
    return [
        *rows,
        FactRow("cache keys", *cells["cache keys"], tuple(key_findings(base.keys, now.keys))),
    ]
