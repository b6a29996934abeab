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
import json
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field

from ..._torch.patterns.code import (
    FUSED_NAME,
    FX_DEF,
    FX_DELETIONS,
    FX_NODE,
    FX_PARAM,
    FX_TORCH_OP,
    KERNEL_BODY_END,
    KERNEL_NAME_DEF,
    SYMBOL,
    WRAPPER_CALL,
)
from ..._torch.patterns.guards import (
    COMMENT_TAIL,
    DIMENSION_KIND,
    LEAF_LINE,
    MANAGER_LINE,
    MANAGER_SOURCE,
    NO_ATTRS,
    SOURCE_START,
    TREE_LINE,
    TYPE_NOTE,
)
from ..artifacts.compact import unfold_layer_guard
from ..artifacts.repeats import unfold_repeats
from ..artifacts.sections import SECTION_HEADER

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
    printed. `nodes` keeps each node's local form (inputs masked as `_`) for
    saying what differs.
    """

    ops: Counter[str]
    dataflow: Counter[str]
    nodes: Counter[tuple[str, str]]


_IDENT = re.compile(r"(?<![\w.'\"])([A-Za-z_]\w*)")
_CALLEE = re.compile(r"^([A-Za-z_][\w.]*)\(")
_RETURN = re.compile(r"^\s+return\b(.*)$")
_COMMENT = re.compile(r"\s+#.*$")
_SPACES = re.compile(r"\s+")


def parse_graph(text: str) -> Graph:
    """Ops, dataflow fingerprints and node forms of one printed FX graph section.

    A layer's copy the stored form folded (`repeats.fold_repeats`) is read written out.
    """
    text = _canonical_symbols(unfold_repeats(text))
    prints: dict[str, str] = {}
    ops: Counter[str] = Counter()
    dataflow: Counter[str] = Counter()
    nodes: Counter[tuple[str, str]] = Counter()
    inputs = 0
    lines = iter(text.splitlines())
    for line in lines:
        if FX_DEF.match(line):
            for name, annotation in _arguments(line, lines).items():
                prints[name] = _hash(f"input {inputs} {annotation}")
                inputs += 1
            continue
        if (ret := _RETURN.match(line)) is not None:
            body = ret[1]
            while body.count("(") > body.count(")") and (more := next(lines, None)) is not None:
                body += " " + _COMMENT.sub("", more).strip()
            out = _SPACES.sub("", _with_refs(_COMMENT.sub("", body), prints)[0]).replace(",)", ")")
            dataflow[_hash("return " + out)] += 1
            continue
        match = FX_NODE.match(line)
        if match is None or line.lstrip().startswith("#"):
            continue
        name, annotation, expr = match[1], match[2] or "", FX_DELETIONS.sub("", match[3])
        if expr in prints and not annotation:  # `l_x_ = L_x_`: a rename, not a node
            prints[name] = prints[expr]
            continue
        deep, local = _with_refs(expr, prints)
        prints[name] = _hash(f"{_SPACES.sub('', deep)} -> {annotation}")
        dataflow[prints[name]] += 1
        nodes[(local.removeprefix("torch.ops."), annotation)] += 1
        ops[_operator(expr, prints)] += 1
    return Graph(ops, dataflow, nodes)


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


def _with_refs(expr: str, prints: dict[str, str]) -> tuple[str, str]:
    """`expr` with each node it reads replaced by that node's fingerprint, and by `_`."""
    deep = _IDENT.sub(lambda m: f"#{prints[m[1]]}" if m[1] in prints else m[1], expr)
    local = _IDENT.sub(lambda m: "_" if m[1] in prints else m[1], expr)
    return deep, local


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


# ---------------------------------------------------------------- output code


@dataclass(frozen=True)
class Kernel:
    """One generated kernel: its name, and its source with that name masked."""

    name: str
    body: str

    @property
    def fused(self) -> str:
        """The fused ops the name lists: `cpp_fused_add_relu_3` -> `add_relu`."""
        return FUSED_NAME.sub("", self.name)


@dataclass(frozen=True)
class Program:
    """One output code: its kernels, and the calls the wrapper makes, in order."""

    kernels: tuple[Kernel, ...]
    calls: tuple[str, ...] = field(default=())

    def externs(self) -> Counter[str]:
        names = {k.name for k in self.kernels}
        return Counter(c for c in self.calls if c not in names)


def parse_output_code(text: str) -> Program:
    """Kernels (bodies with their own name masked) and the wrapper's calls to kernels and extern ops.

    A layer's calls the stored form folded (`repeats.fold_repeats`) are read written out.
    """
    kernels: list[Kernel] = []
    outside: list[str] = []
    lines = unfold_repeats(text).splitlines()
    index = 0
    while index < len(lines):
        match = KERNEL_NAME_DEF.match(lines[index])
        if match is None:
            outside.append(lines[index])
            index += 1
            continue
        start = index
        index += 1
        while index < len(lines) and not KERNEL_BODY_END.match(lines[index]):
            index += 1
        body = "\n".join(lines[start : index + 1]).replace(match[1], "<kernel>")
        kernels.append(Kernel(match[1], body.split(" = ", 1)[1]))
        index += 1
    names = {k.name for k in kernels}
    calls = tuple(
        callee
        for line in outside
        if not line.lstrip().startswith("#")
        for callee in WRAPPER_CALL.findall(line)
        if callee in names or "." in callee
    )
    return Program(tuple(kernels), calls)


# ---------------------------------------------------------------- guards


@dataclass(frozen=True)
class Guard:
    """One leaf guard: its kind, the source it checks, and its check.

    `check` is the guard's code without the provenance comment and without
    the `, type=<...>` annotation an ID match carries (a type match keeps its
    class); '' for a bare
    marker (`OBJECT_ALIASING` printed on the second of two sources whose
    check is printed on the first). `source` is the value the check reads
    (`L['self']._modules['fc1']`), taken from the check itself so that the
    tree and the compact format give the same source; see `guard_source`.
    """

    kind: str
    source: str
    check: str


_PLACEHOLDER = re.compile(
    r"(?<=[:\[,])(<\w+>)(?=[,}\]])"
)  # `"num_threads":<N>`, masked by normalize, is not JSON
_ATTRIBUTE = re.compile(r"\.[A-Za-z_]\w*")


def parse_guards(text: str) -> list[Guard]:
    """The leaf guards of one frame's guards text, in either format the plugin has stored.

    - the tree Dynamo prints (`| | +- TYPE_MATCH: ...` under `GuardManager:
      source=...` lines), stored by the plugin before the compact form;
    - the compact form (`compact.compact_guards`): one `KIND: check  # comment`
      per line, a tensor's five dimension-marking guards as one
      `KIND: X has no _dynamo_..., ...` line, and each layer's copy of a
      guard as one `..._modules[*]...  [* = 0, 1]` line (`fold_layer_guards`).

    Both give the same guards for the same checks (a tree file and its
    compact form compare as text only). A text in neither format gives one
    guard per line, kind `line`, so that a changed line is still a changed
    check.
    """
    lines = [line for line in text.splitlines() if line.strip() and not SECTION_HEADER.match(line)]
    if any(TREE_LINE.match(line) for line in lines):
        guards = _tree_guards(lines)
    else:
        guards = _compact_guards(lines)
    with_code = {g.kind for g in guards if g.check}
    return [
        g for g in guards if g.check or g.kind not in with_code
    ]  # a bare marker repeats a check already read


def _tree_guards(lines: list[str]) -> list[Guard]:
    guards: list[Guard] = []
    sources: dict[int, str] = {}
    for line in lines:
        match = TREE_LINE.match(line)
        if match is None:
            continue
        depth = len(match[1]) // 2
        item = match[2].strip()
        manager = MANAGER_SOURCE.match(item)
        if manager is not None:
            sources[depth] = manager[1] or ""
            continue
        leaf = LEAF_LINE.match(item)
        if leaf is None or MANAGER_LINE.match(item):
            continue
        check = _check(leaf[2] or "")
        place = next((sources[d] for d in range(depth - 1, -1, -1) if d in sources), "")
        guards.append(Guard(leaf[1], guard_source(check) or place, check))
    return guards


def _compact_guards(lines: list[str]) -> list[Guard]:
    guards: list[Guard] = []
    for line in (each for folded in lines for each in unfold_layer_guard(folded)):
        leaf = LEAF_LINE.match(line.strip())
        if leaf is None or MANAGER_LINE.match(line.strip()):
            check = _check(line)
            guards += (
                [Guard("line", "", check)] if check and not line.lstrip().startswith("#") else []
            )
            continue
        check = _check(leaf[2] or "")
        marks = NO_ATTRS.match(check) if leaf[1] == DIMENSION_KIND else None
        if marks is not None:  # the tree's form, one guard per attribute
            guards += [
                Guard(DIMENSION_KIND, marks[1], f"hasattr({marks[1]}, '{a}') == False")
                for a in marks[2].split(", ")
            ]
            continue
        guards.append(Guard(leaf[1], guard_source(check), check))
    return guards


def guard_source(check: str) -> str:
    """The value a guard checks, read from its code; '' for a frame-wide check.

    The first local or global access path in the check, with the attributes
    and subscripts that follow it, up to a method call: `L['x']` in
    `check_tensor(L['x'], ...)` and in `L['x'].size()[0] == 4`,
    `G['F'].linear` in `___check_obj_id(G['F'].linear, <id>)`,
    `L['self']._modules['bn']` in `not ___dict_contains('forward',
    dict(type(L['self']._modules['bn']).__dict__))`. A check that reads no
    local or global (`___check_global_state()`,
    `utils_device.CURRENT_DEVICE == None`) has none: Dynamo puts those on
    the root of the tree, whose source is empty too.
    """
    match = SOURCE_START.search(check)
    if match is None:
        return ""
    end = match.end() - 1  # at the `[`
    while end < len(check):
        if check[end] == "[":
            close = _closing(check, end)
            if close < 0:
                break
            end = close + 1
        elif (attr := _ATTRIBUTE.match(check, end)) is not None:
            if check.startswith("(", attr.end()):
                break  # a method call: `.size()` reads the value, it is not a part of it
            end = attr.end()
        else:
            break
    return check[match.start() : end]


def _closing(text: str, start: int) -> int:
    """Index of the `]` that closes the `[` at `start`, skipping quoted strings; -1 if none."""
    depth, quote, escaped = 0, "", False
    for index in range(start, len(text)):
        char = text[index]
        if quote:
            escaped, quote = (
                (not escaped and char == "\\"),
                ("" if char == quote and not escaped else quote),
            )
        elif char in "'\"":
            quote = char
        elif char in "[(":
            depth += 1
        elif char in "])":
            depth -= 1
            if depth == 0:
                return index if char == "]" else -1
    return -1


def _check(code: str) -> str:
    """The code compared: no comment; an identity check without its note (torch 2.11 prints the
    object's repr there, later releases its class), a type check with it (the class is what
    the check compares: its id is masked)."""
    code = COMMENT_TAIL.sub("", code).strip()
    note = TYPE_NOTE.match(code)
    if note is not None and not note[1].startswith("___check_type_id("):
        code = note[1]
    return _SPACES.sub(" ", code)


def global_state(check: str) -> dict[str, object] | None:
    """The switches a GLOBAL_STATE guard compares (`___check_global_state() against {...}`), or None."""
    _, sep, raw = check.partition(" against ")
    if not sep:
        return None
    try:
        value = json.loads(_PLACEHOLDER.sub(r'"\1"', raw))
    except ValueError:
        return None
    return value if isinstance(value, dict) else None
