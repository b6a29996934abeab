"""Did the compiler's behaviour move between two snapshots of one case, or only its text?

`compare_case(old, new)` takes one case's artifact texts on each side (artifact
name -> text, stored or captured) and returns a `CaseDiff` (findings.py): the
verdict (`behaviour changed`, `text only`, `unchanged`), the counters old ->
new and each finding, marked behaviour or text. Pure: no files, torch or pytest.

Behaviour is what the compiled program does and when it is reused: the
counters and break/recompile reasons; the ops of each FX graph and its
dataflow, each input read as what it is (`readers.parse_graph`); kernels
fused differently, added, removed or with other code, and each step of the
wrapper's `call` with its arguments (`wrapper.py`); guards added, removed or
checking other values. Text is only what is proved not to change any of
these: renumbering, renamed kernels with the same body, comments and
layout, a guard moved in the tree, a frame's arguments renamed in place
(`arguments.py`), and the stored form of an older version of this plugin
(`stored_form` brings both sides to today's first). An artifact with no
reading (`transformed_code`, `program`, `runtime_wrapper`) or recorded on
one side only is said as text but never passes as text only (text_only.py).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import replace

from ...common.counters import COUNTER_LABELS
from ..artifacts import summary
from ..artifacts.catalogue import ARTIFACTS
from ..artifacts.normalize import STATIC_RULES, Normalizer
from ..artifacts.older_forms import DamagedText, written_out
from ..artifacts.sections import GraphKey, split_sections
from ..artifacts.summary import CaseSummary
from .arguments import renamed_sides
from .code_findings import InputNames, Inputs, compare_programs, delta
from .findings import (
    BEHAVIOUR,
    COUNTERS,
    OP_COUNT,
    SUMMARY_TOPICS,
    TEXT,
    UNCHANGED,
    CaseDiff,
    Counts,
    Finding,
    counter_moved,
    op_swaps,
)
from .guard_findings import compare_guards
from .reading.readers import (
    Graph,
    graph_inputs,
    parse_graph,
    return_keys,
)
from .shapes import shape_findings

#: what the upgrade report and other callers take from here (the words live in findings.py).
__all__ = [
    "BEHAVIOUR",
    "COUNTERS",
    "GENERATED_CODE",
    "TEXT",
    "UNCHANGED",
    "CaseDiff",
    "Finding",
    "compare_case",
    "stored_form",
]

#: the plugin's text rules without the checkout's path rule: stored texts carry no absolute paths.
_NORMALIZE = Normalizer(STATIC_RULES)


def compare_case(old: Mapping[str, str], new: Mapping[str, str]) -> CaseDiff:
    """Compare one case's artifact texts (artifact name -> text) on two sides; see the module docstring.

    Keys are artifact names (`summary`, `guards`); a file name of an artifact
    (`summary.txt`) or sides that hold no artifact at all raise ValueError.
    """
    _check_names(old, new)
    damaged = _damaged(old, "OLD") + _damaged(new, "NEW")
    if damaged:
        return CaseDiff(BEHAVIOUR, {}, tuple(damaged))
    raw_old, raw_new = old, new
    old, new = _same_code_form(stored_form(old), stored_form(new))
    old, renamed = renamed_sides(old, new)
    code = next((n for n in GENERATED_CODE if n in old and n in new), None)
    findings: list[Finding] = [
        Finding(False, "stored form", f"{name}: older stored form of the same text", (name,))
        for name in sorted(set(old) & set(new))
        if old[name] == new[name] and raw_old[name] != raw_new[name]
    ]
    if renamed:
        message = f"arguments renamed in place: {', '.join(renamed)}"
        findings.append(Finding(False, "arguments renamed", message))
    summaries = (summary.read(old.get("summary", "")), summary.read(new.get("summary", "")))
    counters = _counters(*summaries) if "summary" in old and "summary" in new else {}
    if counters:
        findings += _summary_findings(*summaries, counters, has_code=code is not None)
    inputs = (_inputs(old), _inputs(new))
    if code:
        findings += compare_programs(
            code, old[code], new[code], inputs, (_outputs(old, inputs[0]), _outputs(new, inputs[1]))
        )
    respelled = _same_aot_graphs(old, new, inputs)
    for name in sorted(set(old) | set(new)):
        findings += _compare_artifact(name, old.get(name), new.get(name), inputs, respelled)
    findings = _merged(findings)
    named = {a for f in findings for a in f.artifacts}
    if any(f.topic in SUMMARY_TOPICS for f in findings):
        named.add("summary")  # its counters or reasons moved: the findings say how
    if code == "output_code":
        named.add("wrapper_code")  # an outline of the output code read above
    if code in named and _without_kernel_names(summaries[0]) == _without_kernel_names(summaries[1]):
        named.add("summary")  # only the kernel names moved: the generated code's findings say how
    findings += [
        Finding(False, f"{name} text", f"{name}: text differs, same facts", (name,))
        for name in sorted(set(old) | set(new))
        if old.get(name) != new.get(name) and name not in named
    ]
    if any(f.behaviour for f in findings):
        verdict = BEHAVIOUR
    elif findings:
        verdict = TEXT
    else:
        verdict = UNCHANGED
    return CaseDiff(verdict, counters, tuple(sorted(findings, key=lambda f: not f.behaviour)))


#: the artifacts read as generated code, fullest first: a case is read through the first
#: both sides hold (`output_code` when a test opts in to it, else `wrapper_code`).
GENERATED_CODE = ("output_code", "wrapper_code")


def _same_code_form(
    old: dict[str, str], new: dict[str, str]
) -> tuple[dict[str, str], dict[str, str]]:
    """Sides that hold the generated code in different artifacts (a set recorded with the full
    `output_code`, the other with the default `wrapper_code` only) are both read as
    `wrapper_code`: the full text is outlined, and is not "only in" one side."""

    def outlined(this: dict[str, str], other: dict[str, str]) -> dict[str, str]:
        if "output_code" not in this or "output_code" in other or "wrapper_code" not in other:
            return this
        kept = {k: v for k, v in this.items() if k != "output_code"}
        kept.setdefault("wrapper_code", _stored("wrapper_code", this["output_code"]))
        return kept

    return outlined(old, new), outlined(new, old)


def _check_names(*sides: Mapping[str, str]) -> None:
    """Artifact names as keys: a file name would compare as an unknown text and say `text only`."""
    filenames = {a.filename: a.name for a in ARTIFACTS.values()}
    for name in (n for side in sides for n in side):
        if name in filenames:
            raise ValueError(
                f"compare_case takes artifact names as keys, not file names: {name!r} is artifact {filenames[name]!r}"
            )
    if not any(name in ARTIFACTS for side in sides for name in side):
        found = sorted({n for side in sides for n in side})
        raise ValueError(
            f"compare_case found no artifact name among the keys {found}: use {', '.join(ARTIFACTS)}"
        )


def stored_form(texts: Mapping[str, str]) -> dict[str, str]:
    """Each artifact in the form this version of the plugin stores it (`normalize`).

    A set recorded by an earlier version of the plugin stored some artifacts
    otherwise (guards as Dynamo's tree, output code with its module
    boilerplate, FX names as traced, repeated layers folded); compared as
    they are, a kernel would differ by five `#include`-like lines it never
    ran. The rules are pure text and idempotent, so a text already in the
    stored form is left as it is. A text no version wrote raises `DamagedText`.
    """
    return {name: _stored(name, written_out(text)) for name, text in texts.items()}


def _stored(name: str, text: str) -> str:
    """One artifact in the stored form; a file the catalogue does not name gets the common rules."""
    artifact = ARTIFACTS.get(name)
    return artifact.normalize(_NORMALIZE, text) if artifact else _NORMALIZE(text)


def _damaged(texts: Mapping[str, str], side: str) -> list[Finding]:
    """A finding for each text that no version of the plugin wrote (older_forms.py)."""
    found = []
    for name, text in texts.items():
        try:
            written_out(text)
        except DamagedText as exc:
            message = (
                f"{name} ({side}) is damaged: {exc}; it was edited outside pytest: "
                "run `pytest --update-snapshots` to rewrite it"
            )
            found.append(Finding(True, "damaged file", message, (name,), f"damaged file: {name}"))
    return found


def _inputs(texts: Mapping[str, str]) -> InputNames:
    """Per frame compile, what each input of its AOT graphs and generated code is, by name
    (`readers.graph_inputs`; None where the AOT graph does not take Dynamo's graph's inputs
    one for one)."""
    dynamo = split_sections(texts.get("dynamo_graph", ""))
    found: InputNames = {}
    for name in ("aot_forward", "aot_inference"):
        for key, section in split_sections(texts.get(name, "")).items():
            graph = dynamo.get(GraphKey(key.frame, key.compile))
            if graph is not None and (key.frame, key.compile) not in found:
                found[(key.frame, key.compile)] = graph_inputs(graph, section)
    return found


def _outputs(texts: Mapping[str, str], inputs: InputNames) -> dict[GraphKey, list[str]]:
    """Per section of the generated code (a frame compile's forward or inference, `[1 of 2]`,
    its backward, `[2 of 2]`), what each value its `call` returns is (`return_keys`)."""
    found: dict[GraphKey, list[str]] = {}
    for name, part in (("aot_inference", 1), ("aot_forward", 1), ("aot_backward", 2)):
        for key, section in split_sections(texts.get(name, "")).items():
            names = inputs.get((key.frame, key.compile))
            found[GraphKey(key.frame, key.compile, part)] = return_keys(section, names)
    return found


#: the graphs read as what Dynamo's graph computes, after AOTAutograd has traced it
AOT_GRAPHS = ("aot_forward", "aot_backward", "aot_inference")


def _same_aot_graphs(
    old: Mapping[str, str], new: Mapping[str, str], inputs: Inputs
) -> set[tuple[int, int]]:
    """The frame compiles whose AOT graphs read the same on both sides, each input known as
    Dynamo's graph names it: their Dynamo graphs compute the same, however written
    (`x.sum(dim=0)` and `x.sum(0)` are two texts of one `aten.sum.dim_IntList(x, [0])`)."""
    frames = {
        f for f, names in inputs[0].items() if names is not None and inputs[1].get(f) is not None
    }
    same: set[tuple[int, int]] = set()
    for frame in frames:
        read = [
            (parse_graph(a, inputs[0][frame]), parse_graph(b, inputs[1][frame]))
            for name in AOT_GRAPHS
            if name in old and name in new
            for key, a in split_sections(old[name]).items()
            if (key.frame, key.compile) == frame
            for b in (split_sections(new[name]).get(key),)
            if b is not None
        ]
        if read and all((x.ops, x.dataflow) == (y.ops, y.dataflow) for x, y in read):
            same.add(frame)
    return same


def _compare_artifact(
    name: str,
    old: str | None,
    new: str | None,
    inputs: Inputs,
    respelled: set[tuple[int, int]] = frozenset(),  # type: ignore[assignment]
) -> list[Finding]:
    if old == new:
        return []
    known = ARTIFACTS.get(name)
    reading = known.reading if known is not None else "text"
    if old is None or new is None:
        side = "NEW" if old is None else "OLD"
        produced = reading in ("graph", "generated code")  # its absence is a program not produced
        return [
            Finding(produced, f"{name} only in {side.lower()}", f"{name}: only in {side}", (name,))
        ]
    if reading in ("counters", "generated code"):  # read above, with the other side's facts
        return []
    if reading == "graph":
        shapes = shape_findings(old, new) if name == "dynamo_graph" else []
        return shapes + _compare_graphs(name, old, new, inputs, respelled)
    if reading == "guards":
        return compare_guards(old, new)
    return [Finding(False, "unread text", "text differs, not read for behaviour", (name,))]


# ---------------------------------------------------------------- summary


def _counters(old: CaseSummary, new: CaseSummary) -> dict[str, Counts]:
    def ops(s: CaseSummary) -> str | None:
        per_graph = s.ops_per_graph()
        return None if per_graph is None else "+".join(map(str, per_graph))

    def text(s: CaseSummary, name: str) -> str | None:
        value = getattr(s, name)
        return None if value is None else str(value)

    found = {label: (text(old, name), text(new, name)) for name, label in COUNTER_LABELS.items()}
    return {**found, OP_COUNT: (ops(old), ops(new))}


def _without_kernel_names(s: CaseSummary) -> CaseSummary:
    return replace(s, frames=tuple(replace(f, kernels=()) for f in s.frames))


def _summary_findings(
    old: CaseSummary, new: CaseSummary, counters: dict[str, Counts], has_code: bool
) -> list[Finding]:
    found = [
        Finding(True, name, f"{name}: {o} -> {n}", fact=f"{name} {o} -> {n}")
        for name, (o, n) in counters.items()
        if counter_moved(o, n)
    ]
    if old.backend != new.backend:
        found.append(Finding(True, "backend", f"backend: {old.backend} -> {new.backend}"))
    before, after = dict(old.facts), dict(new.facts)
    found += [
        Finding(
            True,
            label,
            f"summary: {label}: {before[label]} -> {after[label]}",
            ("summary",),
            f"{label} {before[label]} -> {after[label]}",
        )
        for label in before.keys() & after.keys()
        if before[label] != after[label]
    ]
    found += _multiset_findings(
        "graph break", old.break_reasons, new.break_reasons, topic="break reasons"
    )
    found += _multiset_findings(
        "recompile reason", old.recompile_reasons, new.recompile_reasons, topic="recompile reasons"
    )
    old_kernels = [k for f in old.frames for k in f.kernels]
    new_kernels = [k for f in new.frames for k in f.kernels]
    if not has_code and Counter(old_kernels) != Counter(new_kernels):
        message = "summary: kernel names differ, and no output_code on both sides tells a rename from a new fusion"
        found.append(Finding(True, "kernel names", message, ("summary",)))
    return found


def _multiset_findings(
    what: str, old: Iterable[str], new: Iterable[str], topic: str
) -> list[Finding]:
    before, after = Counter(old), Counter(new)
    found = [
        Finding(True, topic, f"{what} removed: {r}", fact=f"{what} removed: {_first_line(r)}")
        for r in (before - after).elements()
    ]
    return found + [
        Finding(True, topic, f"{what} added: {r}", fact=f"{what} added: {_first_line(r)}")
        for r in (after - before).elements()
    ]


def _first_line(text: str) -> str:
    return text.splitlines()[0] if text else text


# ---------------------------------------------------------------- graphs


def _compare_graphs(
    name: str, old: str, new: str, inputs: Inputs, respelled: set[tuple[int, int]]
) -> list[Finding]:
    before, after = split_sections(old), split_sections(new)
    found: list[Finding] = []
    for key in sorted(set(before) | set(after)):
        if key not in before or key not in after:
            side = "NEW" if key not in before else "OLD"
            found.append(Finding(True, "frames", f"{key.label()}: graph only in {side}", (name,)))
            continue
        if before[key] != after[key]:
            frame = (key.frame, key.compile)
            graphs = (
                parse_graph(before[key], inputs[0].get(frame)),
                parse_graph(after[key], inputs[1].get(frame)),
            )
            finding = _graph_finding(name, key, *graphs)
            if finding.behaviour and name == "dynamo_graph" and frame in respelled:
                message = (
                    f"{key.label()}: Dynamo's graph written otherwise, its AOT graphs read the same"
                )
                finding = Finding(False, "Dynamo graph spelling", message, (name,))
            found.append(finding)
    return found


def _graph_finding(name: str, key: GraphKey, old: Graph, new: Graph) -> Finding:
    if old.ops != new.ops:
        message = f"{key.label()} ops: {delta(old.ops, new.ops)}"
        return Finding(True, "ops", message, (name,), fact=f"ops: {op_swaps(old.ops, new.ops)}")
    if old.dataflow == new.dataflow:
        return Finding(
            False, "FX renumbering", "FX graphs: numbering, names or comments only", (name,)
        )
    removed, added = (
        list((old.nodes - new.nodes).elements()),
        list((new.nodes - old.nodes).elements()),
    )
    example = f": {_node_change(removed[0], added[0])}" if removed and added else ""
    count = max(len(removed), len(added))
    what = (
        f"{_nodes(count)} with other arguments or types{example}"
        if count
        else "the same nodes, reading other inputs or each other otherwise"
    )
    return Finding(True, "graph dataflow", f"{key.label()}: same ops, {what}", (name,))


def _nodes(count: int) -> str:
    return f"{count} node" + ("s" if count != 1 else "")


def _node_change(old: tuple[str, str], new: tuple[str, str]) -> str:
    """`aten.sum.dim_IntList(_, [-1], True) -> aten.sum.dim_IntList(_, [1], True)`, with result types where they differ."""
    if old[1] == new[1]:
        op, paren, _ = old[0].partition("(")
        return f"{old[0]} -> {new[0].removeprefix(op) if paren and new[0].startswith(op + paren) else new[0]}"
    return f"{old[0]}: {old[1]} -> {new[0]}: {new[1]}"


# ---------------------------------------------------------------- grouping


def _merged(findings: list[Finding]) -> list[Finding]:
    """One finding per message: the same ops moving in four graph artifacts is one line naming the four."""
    merged: dict[tuple[bool, str, str, str], dict[str, None]] = {}
    for f in findings:
        key = (f.behaviour, f.topic, f.message, f.fact)
        merged.setdefault(key, {}).update(dict.fromkeys(f.artifacts))
    return [Finding(b, t, m, tuple(a), fact) for (b, t, m, fact), a in merged.items()]
