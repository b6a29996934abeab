"""The words of a comparison: what moved, how it is named, and in which order.

A `Finding` is one thing that moved between two snapshots of one case,
marked behaviour or text, with its topic (one word per thing, the same in a
failure's headline, its verdict line and the upgrade report: `TOPICS`, most
important first), its full sentence, and the short fact a headline says
(`ops: relu -> silu`). A `CaseDiff` holds one case's verdict, counters and
findings, and says them as one line (`line`) or as a headline (`headline`).
Pure: no files, torch or pytest.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from ...common.counters import COUNTER_LABELS
from ..artifacts.catalogue import ARTIFACTS

BEHAVIOUR = "behaviour changed"
TEXT = "text only"
UNCHANGED = "unchanged"

#: the counters of a case's row, in order; `op count` is the summary's ops per graph.
OP_COUNT = "op count"
COUNTERS = (*COUNTER_LABELS.values(), OP_COUNT)
#: what moved, most important first: the order in which a failure's first line names it.
#: One word per thing, the same in the headline, the verdict and the upgrade report.
#: The counters first, then the shapes, dtypes and strides (layout) of the model's inputs,
#: parameters and buffers, then ops and fusion; guards, which follow from all of these, last.
TOPICS = (
    "damaged file",
    "graphs",
    "graph breaks",
    "recompiles",
    "kernels",
    "ddp buckets",
    "shapes",
    "strides",
    "break reasons",
    "recompile reasons",
    "ops",
    "fusion",
    "frames",
    "backend",
    "kernel code",
    "extern calls",
    "call arguments",
    "graph dataflow",
    OP_COUNT,
    "generated code",
    "kernel names",
    "guards",
)
#: the topics read from the `summary` artifact.
SUMMARY_TOPICS = (*COUNTERS, "backend", "break reasons", "recompile reasons", "kernel names")
#: facts a failure's first line names at most (the rest: `(+N more, -v)`).
HEADLINE_FACTS = 3
#: about how many characters a failure's first line takes (pytest's short summary repeats it).
HEADLINE_WIDTH = 200
#: how many characters of a generated kernel's fused ops a headline keeps
KERNEL_OPS_SHOWN = 24
#: topics a verdict line names at most (the rest: `N more`).
_SHOWN = 4


@dataclass(frozen=True)
class Finding:
    """One thing that moved.

    `topic` is its word in the one-line verdict (`TOPICS` ranks them);
    `message` the full sentence of the report; `fact` the short phrase a
    failure's first line names (`ops: relu -> silu`), '' when the topic says
    enough.
    """

    behaviour: bool
    topic: str
    message: str
    artifacts: tuple[str, ...] = ()
    fact: str = ""

    def render(self) -> str:
        """The message, naming the artifacts it was found in unless it starts with the one it names."""
        named = len(self.artifacts) == 1 and self.message.startswith(self.artifacts[0])
        return (
            self.message
            if named or not self.artifacts
            else f"{self.message} ({', '.join(self.artifacts)})"
        )


Counts = tuple[str | None, str | None]


@dataclass(frozen=True)
class CaseDiff:
    """The verdict for one case, its counters old -> new, and what moved."""

    verdict: str
    counters: dict[str, Counts] = field(default_factory=dict)
    findings: tuple[Finding, ...] = ()

    def moved(self) -> list[str]:
        """`kernels 5 -> 7` for each counter that moved."""
        return [
            f"{name} {old} -> {new}"
            for name, (old, new) in self.counters.items()
            if counter_moved(old, new)
        ]

    def line(self) -> str:
        """`behaviour changed: kernels 5 -> 7, op count 59 -> 105, fusion`, or `text only: ...`, or `unchanged`."""
        parts = self.what_moved()
        return f"{self.verdict}: {', '.join(parts)}" if parts else self.verdict

    def what_moved(self) -> list[str]:
        """What the verdict line names after the verdict: the counters that moved, then the
        topics of the findings of the verdict's kind, ranked (`kernels 5 -> 7`, `shapes`,
        `guards`); the one source of every label a report gives a case."""
        if self.verdict == UNCHANGED:
            return []
        wanted = [f for f in self.findings if f.behaviour == (self.verdict == BEHAVIOUR)]
        parts = self.moved() if self.verdict == BEHAVIOUR else []
        topics = list(dict.fromkeys(f.topic for f in ranked(wanted) if f.topic not in COUNTERS))
        return (
            parts
            + topics[:_SHOWN]
            + ([f"{len(topics) - _SHOWN} more"] if len(topics) > _SHOWN else [])
        )

    def headline(self, width: int = HEADLINE_WIDTH) -> str:
        """The most important facts, for a failure's first line: `ops: relu -> silu; kernels fused
        differently: cpp_fused_relu_0 -> cpp_fused_silu_0`; for text only, what kind of text moved.

        At most `HEADLINE_FACTS` facts in about `width` characters, kernel names
        shortened; `(+N more, -v)` counts the rest, which `-v` lists whole.
        """
        if self.verdict != BEHAVIOUR:
            return fit("text changed" if self.line() == TEXT else self.line(), width)
        facts = [
            short_kernels(f)
            for f in dict.fromkeys(_facts(ranked(f for f in self.findings if f.behaviour)))
        ]
        return fit_facts(facts, width)


def fit_facts(facts: list[str], width: int) -> str:
    """Facts joined by `; ` while they fit `width` (the first always, cut to fit), then `(+N more, -v)`."""
    shown: list[str] = []
    for fact in facts[:HEADLINE_FACTS]:
        rest = len(facts) - len(shown) - 1
        more = f" (+{rest} more, -v)" if rest else ""
        joined = "; ".join([*shown, fact]) + more
        if shown and len(joined) > width:
            break
        shown.append(fact if shown else fit(fact, width - len(more)))
    rest = len(facts) - len(shown)
    return "; ".join(shown) + (f" (+{rest} more, -v)" if rest else "")


def fit(text: str, width: int) -> str:
    """`text`, cut at a word to about `width` characters with `...` (the full text is one -v away)."""
    if len(text) <= width:
        return text
    cut = text[: max(width - 3, 20)]
    space = cut.rfind(" ")
    return (cut[:space] if space > len(cut) // 2 else cut).rstrip(",;: ") + "..."


_KERNEL = re.compile(r"\b((?:cpp|triton_[a-z]+|cuda|halide)_fused_)(\w+?)(_\d+)\b")


def short_kernels(fact: str) -> str:
    """Generated kernels' names with their fused ops cut: `cpp_fused__log_softmax__to_copy_add_embedding_0`
    -> `cpp_fused__log_softmax__to_copy_..._0` (the verdict and `-v` keep them whole)."""

    def cut(match: re.Match[str]) -> str:
        ops = match[2]
        if len(ops) <= KERNEL_OPS_SHOWN:
            return match[0]
        return f"{match[1]}{ops[:KERNEL_OPS_SHOWN]}...{match[3]}"

    return _KERNEL.sub(cut, fact)


def ranked(findings: Iterable[Finding]) -> list[Finding]:
    """Findings in the order of `TOPICS` (an unknown topic last), then by pipeline stage."""
    rank = {topic: n for n, topic in enumerate(TOPICS)}

    def stage(f: Finding) -> int:
        known = [ARTIFACTS[a].stage for a in f.artifacts if a in ARTIFACTS]
        return min(known, default=len(ARTIFACTS))

    return sorted(findings, key=lambda f: (rank.get(f.topic, len(TOPICS)), stage(f)))


def _facts(findings: list[Finding]) -> list[str]:
    """Each finding's short phrase, in order. Ops are said as the earliest graph that shows
    them moving says them (the later graphs show their decompositions); findings of one
    topic that list names fold into one fact naming at most `_NAMED` of them."""
    facts: list[str] = []
    folded: dict[str, list[str]] = {}
    said_ops = False
    for f in findings:
        if f.topic == "ops":
            if said_ops:
                continue
            said_ops = True
        head, sep, names = (f.fact or f.message).partition(": ")
        if sep and f.topic in _FOLDED:
            if head not in folded:
                folded[head] = []
                facts.append(head)
            folded[head].extend(n for n in names.split(", ") if n not in folded[head])
        else:
            facts.append(f.fact or f.message)
    return [f"{fact}: {_named(folded[fact])}" if fact in folded else fact for fact in facts]


def _named(names: list[str]) -> str:
    shown = ", ".join(names[:_NAMED])
    return shown + (f" and {len(names) - _NAMED} more" if len(names) > _NAMED else "")


#: topics whose facts read `<what>: <names>`: several findings fold into one fact.
_FOLDED = ("fusion", "guards", "kernel code", "break reasons", "recompile reasons")
_NAMED = 2


def counter_moved(old: str | None, new: str | None) -> bool:
    """A counter one side does not state (another summary format) is not compared."""
    return old is not None and new is not None and old != new


def short_op(op: str) -> str:
    """An operator as a reviewer says it: `aten.relu.default`, `torch.nn.functional.relu`,
    its C binding and `torch.relu` are `relu`; a method `.sum` is `sum`; a Python
    operator in a Dynamo graph (`_ * 2`) is named as `operator` names it (`mul`)."""
    if not _DOTTED.fullmatch(op):
        symbol = _SYMBOL.search(op)
        return _OPERATORS.get(symbol.group(0), op) if symbol else op
    parts = [p for p in op.split(".") if p]
    if op.startswith("aten.") and len(parts) >= 3:
        parts = parts[:-1]  # the overload: default, Tensor, dim_IntList
    return parts[-1] if parts else op


_DOTTED = re.compile(r"[\w.]+")
_OPERATORS = {
    "**": "pow", "//": "floordiv", "<<": "lshift", ">>": "rshift", "==": "eq", "!=": "ne",
    "<=": "le", ">=": "ge", "*": "mul", "+": "add", "-": "sub", "/": "truediv", "%": "mod",
    "@": "matmul", "&": "and_", "|": "or_", "^": "xor", "<": "lt", ">": "gt", "~": "invert",
}  # fmt: skip
_SYMBOL = re.compile("|".join(re.escape(s) for s in _OPERATORS))


def op_swaps(old: Counter[str], new: Counter[str]) -> str:
    """`relu -> silu` for one op swapped for another, else `-relu +silu +mul`, by short names."""
    removed = sorted(Counter(short_op(o) for o in (old - new).elements()))
    added = sorted(Counter(short_op(o) for o in (new - old).elements()))
    gone, came = sorted(set(removed) - set(added)), sorted(set(added) - set(removed))
    if len(gone) == len(came) == 1:
        return f"{gone[0]} -> {came[0]}"
    return (
        " ".join([*(f"-{o}" for o in gone), *(f"+{o}" for o in came)]) or "same ops, other counts"
    )
