"""Read snapshot texts back into the facts a comparison needs; pure text, no torch.

The upgrade report (`python -m pytest_torchcompile diff`) and a failing
snapshot's verdict both ask one question of two sets of artifact texts: did
the compiler's *behaviour* move, or only its *text*? Answering it needs the
texts as facts, not lines: the counters of `summary`, each FX graph as a
dataflow of ops (so that `add_9` renumbered to `add_7` is no change), each
generated kernel with its own name masked (so that a kernel renamed is told
apart from one fused differently), and each guard as a check on a source (so
that a guard re-labelled or moved in the tree is told apart from a new one).

Every parser here accepts any text: an artifact in a format it does not know
gives fewer facts, never an exception, because the report must work on sets
recorded by other torch versions and other versions of this plugin.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from ...._torch.patterns.code import (
    AOT_INPUT,
    FX_DEF,
    FX_DELETIONS,
    FX_NODE,
    FX_PARAM,
    FX_TORCH_OP,
    SYMBOL,
)
from ...._torch.patterns.dims import DIM_ARGUMENTS, rank, with_dims_counted_from_the_start
from ...._torch.patterns.guards import (
    code_and_comment,
)

# ---------------------------------------------------------------- FX graphs


@dataclass(frozen=True)
class Graph:
    """One printed FX graph as facts.

    `ops` is the multiset of operators it calls (`aten.relu.default`, or for a
    Dynamo graph the callee: `torch.tanh`, `.sum`, `>`); `dataflow` the
    multiset of node fingerprints, each a hash of the node's operator, its
    constant arguments, its result type and, recursively, the fingerprints of
    its inputs. Two graphs with equal `dataflow` compute the same thing with
    the same shapes, whatever their nodes are named or in which order they are
    printed. `nodes` keeps each node's local form (the nodes it reads masked
    as `_`, the graph's inputs named as `parse_graph` reads them) for saying
    what differs.
    """

    ops: Counter[str]
    dataflow: Counter[str]
    nodes: Counter[tuple[str, str]]
    #: each name the graph defines or takes, by its fingerprint
    values: dict[str, str] = field(default_factory=dict, compare=False)
    #: the fingerprints of the values a forward returns for its backward, in order
    saved: tuple[str, ...] = field(default=(), compare=False)


_IDENT = re.compile(r"(?<![\w.'\"])([A-Za-z_]\w*)")
_CALLEE = re.compile(r"^([A-Za-z_][\w.]*)\(")
_RETURN = re.compile(r"^\s+return\b(.*)$")
_COMMENT = re.compile(r"\s+#.*$")
_SPACES = re.compile(r"\s+")


def parse_graph(text: str, inputs: Mapping[str, str] | None = None) -> Graph:
    """Ops, dataflow fingerprints and node forms of one printed FX graph section.

    Each input is read as what it is: Dynamo's graph names its inputs after
    their sources (`L_x_`, `L_self_modules_fc1_parameters_weight_`), so by
    its own name; an AOT graph names them by place (`arg0_1`, `primals_1`)
    and a backward graph its saved values after the forward's nodes, so by
    what `inputs` says each name is (Dynamo's name for that place, the
    forward node's fingerprint: `graph_inputs`), else by place. `x - y` ->
    `y - x` then reads otherwise in every graph, as does a layer applied
    before another of the same shape, while the same graph traced in another
    order (its inputs and saved values numbered otherwise) reads the same.
    A return's values saved for the backward are read as a multiset.
    """
    text = _canonical_symbols(text)
    prints: dict[str, str] = {}
    ops: Counter[str] = Counter()
    dataflow: Counter[str] = Counter()
    nodes: Counter[tuple[str, str]] = Counter()
    named: dict[str, str] = {}  # each input as the comparison reads it, for saying what differs
    saved: list[str] = []
    annotations: dict[str, str] = {}  # each input's and node's printed type, for ranks
    lines = iter(text.splitlines())
    for line in lines:
        if FX_DEF.match(line):
            for place, (name, annotation) in enumerate(_arguments(line, lines).items()):
                identity = _input(name, place, inputs)
                prints[name] = _hash(f"input {identity} {annotation}")
                annotations[name] = annotation.strip("\"' ")
                named[name] = identity if identity.startswith(("L_", "G_")) else name
            continue
        if (ret := _RETURN.match(line)) is not None:
            returned, saved = _returned(ret[1], lines, prints, inputs)
            dataflow[_hash("return " + returned)] += 1
            continue
        match = FX_NODE.match(line)
        if match is None or line.lstrip().startswith("#"):
            continue
        name, annotation = match[1], match[2] or ""
        expr = _keywords_sorted(FX_DELETIONS.sub("", match[3]))
        if expr in prints and not annotation:  # `l_x_ = L_x_`: a rename, not a node
            prints[name] = prints[expr]
            annotations[name] = annotations.get(expr, "")
            continue
        annotations[name] = annotation
        expr = _dims_from_start(expr, annotations)
        deep, local = _with_refs(expr, prints, named)
        prints[name] = _hash(f"{_SPACES.sub('', deep)} -> {annotation}")
        dataflow[prints[name]] += 1
        nodes[(local.removeprefix("torch.ops."), annotation)] += 1
        ops[_operator(expr, prints)] += 1
    return Graph(ops, dataflow, nodes, prints, tuple(saved))


#: `# SavedForBackwardsAOTOutput(idx=3)`: a forward's output kept for its backward, by place
_SAVED = "SavedForBackwards"
#: `# PlainAOTOutput(idx=0)`: the model's output 0
_OUTPUT = re.compile(r"^PlainAOTOutput\(idx=(\d+)\)")
#: `# GradAOTOutput(grad_of=PlainAOTInput(idx=3))`: the gradient of the graph's input 3
_GRAD = re.compile(r"^GradAOTOutput\(grad_of=PlainAOTInput\(idx=(\d+)\)\)")


def _returned(
    first: str, lines: Iterator[str], prints: dict[str, str], inputs: Mapping[str, str] | None
) -> tuple[str, list[str]]:
    """A return statement as facts, and the values it saves for the backward, in order.

    Each value is keyed by what AOTAutograd's comment says it is (`return_keys`): the
    model's outputs by their place, a backward's gradients by the input they are the
    gradient of, the values a forward saves as a multiset. Their order is only the contract
    between a forward and its backward, which takes them in it: the same graph traced with
    its inputs in another order returns the same facts.
    """
    items = _return_items(first, lines)
    keys = return_keys(items, inputs)
    entries = [
        (key, _SPACES.sub("", _with_refs(value, prints)[0])) for key, (value, _) in zip(keys, items)
    ]
    saved = [value for key, value in entries if key == "saved"]
    return ";".join(f"{key}={value}" for key, value in sorted(entries)), saved


def _return_items(first: str, lines: Iterator[str]) -> list[tuple[str, str]]:
    """(value, comment) of each value a return statement returns."""
    text = [first]
    while (
        sum(t.count("(") - t.count(")") for t in (code_and_comment(x)[0] for x in text)) > 0
        and (more := next(lines, None)) is not None
    ):
        text.append(more)
    if len(text) == 1:  # `return (add, mul)`: no comments
        inner = first.strip()
        inner = inner[1:-1] if inner.startswith("(") and inner.endswith(")") else inner
        return [(v.strip(), "") for v in inner.split(",") if v.strip()]
    items = []
    for line in text[1:]:
        code, comment = code_and_comment(line)
        value = code.strip().rstrip(",").strip()
        if value and value != ")":
            items.append((value, comment.lstrip("#").strip()))
    return items


def return_keys(
    items: list[tuple[str, str]] | str, inputs: Mapping[str, str] | None = None
) -> list[str]:
    """What each returned value is, by its place (`items`, or the graph section to read them
    from): `out 000000` (the model's output 0), `saved`, `grad L_x_` (the gradient of input
    `L_x_`, named as `inputs` names `primals_<N+1>`)."""
    if isinstance(items, str):
        lines = iter(items.splitlines())
        first = next((ret[1] for line in lines if (ret := _RETURN.match(line))), None)
        items = [] if first is None else _return_items(first, lines)
    keys = []
    for place, (_, comment) in enumerate(items):
        output, grad = _OUTPUT.match(comment), _GRAD.match(comment)
        if _SAVED in comment:
            keys.append("saved")
        elif grad is not None:
            index = int(grad[1])
            keys.append(f"grad {(inputs or {}).get(f'primals_{index + 1}', f'#{index}')}")
        else:
            keys.append(f"out {int(output[1]) if output else place:06d}")
    return keys


def _input(name: str, place: int, inputs: Mapping[str, str] | None) -> str:
    """What a graph input is: what `inputs` says, its source for Dynamo's graph, else its place."""
    if inputs and name in inputs:
        return inputs[name]
    if name.startswith(("L_", "G_", "tangents_")):  # a source; the gradient of output N
        return name
    if inputs and f"#{place}" in inputs:  # a backward's saved value, by its place
        return inputs[f"#{place}"]
    aot = AOT_INPUT.match(name)
    return f"#{int(aot[1]) - 1 if aot[1] else int(aot[2])}" if aot else f"#{place} {name}"


def graph_inputs(dynamo_section: str, forward_section: str) -> dict[str, str] | None:
    """What each input of a frame compile's AOT graphs and generated code is, by name: Dynamo's
    name for `arg<N>_1` and `primals_<N+1>` (where the AOT graph takes Dynamo's graph's inputs
    one for one, each with the same type), and for a forward node's name, which a backward
    takes a saved value by, that node's fingerprint. None where the inputs do not match.

    A backward takes the values its forward saved in the order the forward returns them
    (`SavedForBackwardsAOTOutput(idx=k)`), whatever they are named: `#k` says what the
    backward's k-th input is (its name may be one the stored form renumbered in the forward)."""
    dynamo = list(parse_signature(dynamo_section).items())
    aot = [(n, a) for n, a in parse_signature(forward_section).items() if AOT_INPUT.match(n)]
    if len(aot) != len(dynamo) or any(a[1] != d[1] for a, d in zip(aot, dynamo)):
        return None
    names = {}
    for place, (name, _) in enumerate(dynamo):
        names[f"arg{place}_1"] = names[f"primals_{place + 1}"] = name
    forward = parse_graph(forward_section, names)
    saved = {f"#{k}": f"saved {fingerprint}" for k, fingerprint in enumerate(forward.saved)}
    return {**saved, **names}


def parse_signature(text: str) -> dict[str, str]:
    """The arguments of a printed FX graph's `forward`, name -> type annotation, in order
    (`L_x_` -> `f32[4, 8][8, 1]cpu`); on one line or one argument a line."""
    lines = iter(text.splitlines())
    for line in lines:
        if FX_DEF.match(line):
            return _arguments(line, lines)
    return {}


def _arguments(first: str, lines: Iterator[str]) -> dict[str, str]:
    """The `def forward(...)` header that starts at `first`, read to its closing colon."""
    header = first
    while not header.rstrip().endswith(":") and (more := next(lines, None)) is not None:
        header += " " + _COMMENT.sub("", more)
    return dict(FX_PARAM.findall(header.split("(", 1)[1]))


def _with_refs(
    expr: str, prints: dict[str, str], named: Mapping[str, str] | None = None
) -> tuple[str, str]:
    """`expr` with each node it reads replaced by that node's fingerprint, and by `_` (an
    input by its name in `named`, where it has one)."""
    named = named or {}
    deep = _IDENT.sub(lambda m: f"#{prints[m[1]]}" if m[1] in prints else m[1], expr)
    local = _IDENT.sub(lambda m: named.get(m[1], "_") if m[1] in prints else m[1], expr)
    return deep, local


_KEYWORD = re.compile(r"^[A-Za-z_]\w*\s*=(?!=)")


def _keywords_sorted(expr: str) -> str:
    """A call's keyword arguments in name order: `f(x, dim = 1, keepdim = True)` is
    `f(x, keepdim = True, dim = 1)` (a Dynamo graph prints them as the source wrote them)."""
    if "=" not in expr or (parts := _call_arguments(expr)) is None:
        return expr
    keywords = sorted(p for p in parts if _KEYWORD.match(p))
    if not keywords:
        return expr
    positional = [p for p in parts if p and not _KEYWORD.match(p)]
    return f"{expr[: expr.find('(') + 1]}{', '.join(positional + keywords)})"


def _dims_from_start(expr: str, annotations: Mapping[str, str]) -> str:
    """An ATen op's dimension arguments counted from the start (`[-1]` of a 2-d input is `[1]`):
    torch releases print them either way (`patterns.dims`)."""
    match = FX_TORCH_OP.match(expr)
    if match is None or match[1] not in DIM_ARGUMENTS or (parts := _call_arguments(expr)) is None:
        return expr

    def rank_of(name: str) -> int | None:
        return rank(annotations[name]) if name in annotations else None

    counted = with_dims_counted_from_the_start(match[1], parts, rank_of)
    return expr if counted == parts else f"{expr[: expr.find('(') + 1]}{', '.join(counted)})"


def _call_arguments(expr: str) -> list[str] | None:
    """The top-level arguments of a call `f(a, [b, c], k = d)` as printed; None for anything else."""
    open_at = expr.find("(")
    if open_at < 0 or not expr.endswith(")"):
        return None
    parts, depth, start, quote = [], 0, open_at + 1, ""
    for index in range(open_at + 1, len(expr) - 1):
        char = expr[index]
        if quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
            if depth < 0:
                return None  # the call ends before the text does: not one call
        elif char == "," and depth == 0:
            parts.append(expr[start:index].strip())
            start = index + 1
    parts.append(expr[start:-1].strip())
    return parts


def _operator(expr: str, prints: dict[str, str]) -> str:
    """`aten.add.Tensor` for a torch op; the callee (`torch.tanh`, `.sum`) or the expression's shape otherwise."""
    if (match := FX_TORCH_OP.match(expr)) is not None:
        return match[1]
    if (match := _CALLEE.match(expr)) is not None:
        head, _, method = match[1].partition(".")
        return f".{method}" if head in prints and method else match[1]
    return _IDENT.sub(lambda m: "_" if m[1] in prints else m[1], expr)


def _canonical_symbols(text: str) -> str:
    """Number shape symbols (`s77`, `u3`) in order of first use: their numbers are hashes, not meaning."""
    seen: dict[str, str] = {}

    def rename(match: re.Match[str]) -> str:
        return seen.setdefault(match[0], f"{match[1]}{len([k for k in seen if k[0] == match[1]])}")

    return SYMBOL.sub(rename, text)


def _hash(text: str) -> str:
    return hashlib.sha1(text.encode()).hexdigest()[:16]
