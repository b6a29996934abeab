"""One fresh process's compile, and the facts of one side (cold or warm) over several of them.

A fact is a count or a setting that repeats exactly when nothing changed:
cache outcomes, bypass reasons, codegen runs, autotunings, node, op, guard
and IR counts, the cache switches. It is measured, never estimated. Over the
runs of a side, a fact that differed between them is `Varies`: reported,
never compared, so a fact torch does not keep steady cannot fail a gate.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..._torch.compile_cost import COUNTED_OUTCOMES, Component, Lookup
from ..contention import Contention
from ..stats import round_sig

SIDES = ("cold", "warm")
#: shortest phase (median seconds) a stored side keeps
SHOWN_PHASE_S = 0.01
BYPASS = "bypass"
SWITCH = "switch."

#: each fact's words in a message (a cache switch reads as its own name)
FACT_LABELS: dict[str, str] = {
    "fx_graph.hit": "FX graph cache hits",
    "fx_graph.miss": "FX graph cache misses",
    "fx_graph.bypass": "FX graph cache bypasses",
    "aot_autograd.hit": "AOTAutograd cache hits",
    "aot_autograd.miss": "AOTAutograd cache misses",
    "aot_autograd.bypass": "AOTAutograd cache bypasses",
    "aot_autograd.saved": "AOTAutograd cache entries saved",
    "autotune": "autotunings",
    "codegen": "codegen runs",
    "joint_trace": "AOT joint traces",
    "cpp_compiles": "C++ compiler runs",
    "frames": "frame compiles",
    "graph_nodes": "graph nodes",
    "graph_ops": "graph ops",
    "guards": "guards",
    "ir": "Dynamo IR instructions",
    BYPASS: "bypass reasons",
}
CACHE_LABELS = {"fx_graph": "FX graph cache", "aot_autograd": "AOTAutograd cache"}

Fact = int | str


def label(fact: str) -> str:
    return FACT_LABELS.get(fact, fact.removeprefix(SWITCH))


@dataclass(frozen=True)
class Varies:
    """A fact that differed between the runs of a side: its values, in run order."""

    values: tuple[Fact, ...]

    def __str__(self) -> str:
        return "varies (" + ", ".join(map(str, self.values)) + ")"


@dataclass(frozen=True)
class CompileRun:
    """One process's compile of a case: its cost and what torch's caches did.

    `cpu_s` is the CPU time of the compiling process and its children over
    the first compiled call (compile workers included); `wall_s` that call's
    wall time; `frame_compile_s` Dynamo's own `entire_frame_compile_time_s`;
    `phases` seconds per `dynamo_timed` phase; `lookups` every cache lookup
    with its key's parts.
    """

    side: str
    cpu_s: float
    wall_s: float
    frame_compile_s: float
    facts: Mapping[str, Fact]
    phases: Mapping[str, float] = field(default_factory=dict)
    lookups: tuple[Lookup, ...] = ()
    triton_compile_s: float | None = None
    contention: Contention = Contention()

    def to_json(self) -> dict[str, object]:
        return {
            "side": self.side,
            "cpu_s": self.cpu_s,
            "wall_s": self.wall_s,
            "frame_compile_s": self.frame_compile_s,
            "facts": dict(self.facts),
            "phases": dict(self.phases),
            "lookups": [_lookup_json(lookup) for lookup in self.lookups],
            "triton_compile_s": self.triton_compile_s,
            "contention": self.contention.to_json(),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> CompileRun:
        return cls(
            side=str(data["side"]),
            cpu_s=float(data["cpu_s"]),
            wall_s=float(data["wall_s"]),
            frame_compile_s=float(data["frame_compile_s"]),
            facts=dict(data.get("facts", {})),
            phases={k: float(v) for k, v in data.get("phases", {}).items()},
            lookups=tuple(_lookup_from(item) for item in data.get("lookups", [])),
            triton_compile_s=data.get("triton_compile_s"),
            contention=Contention.from_json(data.get("contention", {})),
        )


def run_facts(
    counts: Mapping[str, int],
    phase_counts: Mapping[str, int],
    frame_counts: Mapping[str, int],
    switches: Mapping[str, str],
    lookups: Sequence[Lookup],
) -> dict[str, Fact]:
    """One run's facts, named as `FACT_LABELS` names them, from what the watch read."""
    facts: dict[str, Fact] = {**counts, **phase_counts, **frame_counts}
    facts.update({SWITCH + name: value for name, value in switches.items()})
    reasons = sorted(
        {
            f"{CACHE_LABELS.get(x.cache, x.cache)}: {x.bypass_reason}"
            for x in lookups
            if x.bypass_reason
        }
    )
    facts[BYPASS] = "; ".join(reasons) if reasons else "none"
    return facts


def _lookup_json(lookup: Lookup) -> dict[str, object]:
    return {
        "cache": lookup.cache,
        "outcome": lookup.outcome,
        "key": lookup.key,
        "bypass_reason": lookup.bypass_reason,
        "components": [[c.name, c.hash, c.value] for c in lookup.components],
    }


def _lookup_from(data: Mapping[str, Any]) -> Lookup:
    return Lookup(
        str(data["cache"]),
        str(data["outcome"]),
        str(data.get("key", "")),
        tuple(Component(*map(str, part)) for part in data.get("components", [])),
        str(data.get("bypass_reason", "")),
    )


@dataclass(frozen=True)
class SideFacts:
    """The facts of one side over its runs (a fact that differed is `Varies`), the median
    seconds of each phase, and the median Triton compile time where there was one."""

    facts: Mapping[str, Fact | Varies]
    phases: Mapping[str, float] = field(default_factory=dict)
    triton_compile_s: float | None = None

    def to_json(self) -> dict[str, object]:
        """As stored: phases of at least `SHOWN_PHASE_S` (the rest are too short to name)."""
        data: dict[str, object] = {
            "facts": {
                k: ({"varies": list(v.values)} if isinstance(v, Varies) else v)
                for k, v in self.facts.items()
            },
            "phases": {
                k: round_sig(v, 3) for k, v in sorted(self.phases.items()) if v >= SHOWN_PHASE_S
            },
        }
        if self.triton_compile_s is not None:
            data["triton_compile_s"] = round(self.triton_compile_s, 4)
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> SideFacts:
        facts: dict[str, Fact | Varies] = {}
        for name, value in dict(data.get("facts", {})).items():
            if isinstance(value, Mapping):
                facts[name] = Varies(tuple(value.get("varies", ())))
            elif isinstance(value, (int, str)) and not isinstance(value, bool):
                facts[name] = value
            else:
                raise ValueError(f"facts.{name}: {value!r} is not a count or a text")
        phases = {k: float(v) for k, v in dict(data.get("phases", {})).items()}
        triton = data.get("triton_compile_s")
        return cls(facts, phases, float(triton) if triton is not None else None)

    def summary(self) -> str:
        """`FX 0/2/0 AOT 0/1/0` (hits/misses/bypasses), for a table cell."""
        parts = []
        for cache, short in (("fx_graph", "FX"), ("aot_autograd", "AOT")):
            values = [self.facts.get(f"{cache}.{o}") for o in COUNTED_OUTCOMES[cache][:3]]
            if any(isinstance(v, int) and v for v in values) or any(
                isinstance(v, Varies) for v in values
            ):
                parts.append(f"{short} " + "/".join(_short(v) for v in values))
        return " ".join(parts) or "no cache lookup"


def _short(value: Fact | Varies | None) -> str:
    return "?" if isinstance(value, Varies) else "-" if value is None else str(value)


def fold(runs: Sequence[CompileRun]) -> SideFacts:
    """The facts of one side over `runs`: each fact that every run agreed on, else `Varies`."""
    names = sorted({name for run in runs for name in run.facts})
    facts: dict[str, Fact | Varies] = {}
    for name in names:
        values = tuple(run.facts.get(name, "absent") for run in runs)
        facts[name] = values[0] if len(set(values)) == 1 else Varies(values)
    phase_names = sorted({name for run in runs for name in run.phases})
    phases = {
        name: statistics.median(run.phases.get(name, 0.0) for run in runs) for name in phase_names
    }
    triton = [run.triton_compile_s for run in runs if run.triton_compile_s is not None]
    return SideFacts(facts, phases, statistics.median(triton) if triton else None)
