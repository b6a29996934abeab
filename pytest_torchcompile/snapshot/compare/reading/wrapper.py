"""Generated code read back as facts: its kernels, and what its `call` does, step by step.

Inductor's output code (or its outline, `wrapper_code`) defines kernels and
a `call(args)` that allocates buffers and calls kernels and extern ops on
them. Two texts that differ only in names (a kernel renamed, buffers
numbered otherwise) run the same program; any other difference, an offset
in `reinterpret_tensor`, an `alpha` of `addmm`, a size, a stride, which
input a call reads, is behaviour.

So each statement of `call` is read as a dataflow step: its text with every
kernel named by its code, every input by what it is (Dynamo's name for it,
through the AOT graph's place: `arg0_1` is the graph's first input), and
every buffer by the step that last wrote it. A call writes its `out=`
buffer, the pointers a C++ kernel does not declare `const`, and (for a
kernel whose arguments are not declared) every buffer it is given. Two
`call`s with the same multiset of steps compute the same values the same
way, whatever order independent steps were printed in.

Pure text, no torch; any text parses (fewer facts, never an exception).
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field

from ...._torch.patterns.code import (
    AOT_INPUT,
    FUSED_NAME,
    KERNEL_ARGUMENT_TYPES,
    KERNEL_BODY_END,
    KERNEL_NAME_DEF,
    WRAPPER_CALL,
)


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
    """One output code: its kernels, the calls the wrapper makes in order, and its steps.

    `steps` is the multiset of `call`'s statements as dataflow fingerprints
    (see the module); `shown` the statement each fingerprint was read from,
    as printed, for saying what differs.
    """

    kernels: tuple[Kernel, ...]
    calls: tuple[str, ...] = field(default=())
    steps: Counter[str] = field(default_factory=Counter)
    shown: dict[str, str] = field(default_factory=dict)

    def externs(self) -> Counter[str]:
        names = {k.name for k in self.kernels}
        return Counter(c for c in self.calls if c not in names)


_IDENT = re.compile(r"(?<![\w.'\"])([A-Za-z_]\w*)(?![\w'\"])")
_DEF_CALL = re.compile(r"^(\s*)def call\(")
_UNPACK = re.compile(r"^\s*((?:[A-Za-z_]\w*,\s*)*[A-Za-z_]\w*),?\s*=\s*args\s*$")
_ASSIGN = re.compile(r"^([A-Za-z_]\w*)\s*=\s*(?!=)")
_OUT = re.compile(r"\bout=([A-Za-z_]\w*)")


def parse_output_code(
    text: str, inputs: Mapping[str, str] | None = None, outputs: list[str] | None = None
) -> Program:
    """Kernels (bodies with their own name masked), the wrapper's calls and `call`'s steps.

    `inputs` says what each input of `call` is, by name, as the comparison
    knows it (`readers.graph_inputs`: Dynamo's name for `arg0_1`, a forward
    node's fingerprint for a saved value); an input it does not name is read
    by its place. `outputs`: what each value `call` returns is, by its place, as
    the AOT graph it runs says (`readers.return_keys`): the model's outputs in
    order, a backward's gradients by their input, saved values as a multiset.
    """
    lines = text.splitlines()
    kernels, outside = _kernels(lines)
    names = {k.name for k in kernels}
    calls = tuple(
        callee
        for line in outside
        if not line.lstrip().startswith("#")
        for callee in WRAPPER_CALL.findall(line)
        if callee in names or "." in callee
    )
    steps, shown = _steps(outside, kernels, inputs or {}, outputs)
    return Program(tuple(kernels), calls, steps, shown)


def _kernels(lines: list[str]) -> tuple[list[Kernel], list[str]]:
    """The kernels defined, and every line outside their sources."""
    kernels: list[Kernel] = []
    outside: list[str] = []
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
    return kernels, outside


def _steps(
    lines: list[str], kernels: list[Kernel], inputs: Mapping[str, str], outputs: list[str] | None
) -> tuple[Counter[str], dict[str, str]]:
    reader = _Steps(kernels, inputs, outputs)
    for statement in _call_body(lines):
        reader.read(statement)
    return reader.steps, reader.shown


def _call_body(lines: list[str]) -> list[str]:
    """The statements of each `call` (a section holds one), without comments."""
    statements: list[str] = []
    indent: int | None = None
    for line in lines:
        opened = _DEF_CALL.match(line)
        if opened is not None:
            indent = len(opened[1])
            continue
        if indent is None or not line.strip() or line.lstrip().startswith("#"):
            continue
        if len(line) - len(line.lstrip()) <= indent:
            indent = None
            continue
        code = line.strip().partition("  # ")[0]
        statements += [part.strip() for part in code.split("; ") if part.strip()]
    return statements


class _Steps:
    """Reads statements in order, keeping each buffer's last writer (see the module)."""

    def __init__(
        self, kernels: list[Kernel], inputs: Mapping[str, str], outputs: list[str] | None
    ) -> None:
        self.kernels = {k.name: "kernel " + _hash(k.body) for k in kernels}
        self.written = {k.name: _written_places(k.body) for k in kernels}
        self.inputs = inputs
        self.outputs = outputs
        self.values: dict[str, str] = {}
        self.steps: Counter[str] = Counter()
        self.shown: dict[str, str] = {}

    def read(self, statement: str) -> None:
        if statement == "args.clear()" or statement.startswith(("del ", "assert_")):
            return  # frees, and checks of sizes, strides and alignment: no value is computed
        unpack = _UNPACK.match(statement)
        if unpack is not None:
            for place, name in enumerate(n.strip() for n in unpack[1].split(",")):
                self.values[name] = "input " + self._input(name, place)
            return
        assigned = _ASSIGN.match(statement)  # what a name is given is the step, not the name
        read = statement[assigned.end() :] if assigned else statement
        if statement.startswith("return (") and self.outputs is not None:
            step = _hash(self._returned(statement))
        else:
            step = _hash(("= " if assigned else "") + _IDENT.sub(self._named, read))
        self.steps[step] += 1
        self.shown.setdefault(step, statement)
        for name, place in self._writes(statement, assigned):
            self.values[name] = _hash(f"{step} writes {place}")

    def _input(self, name: str, place: int) -> str:
        if name in self.inputs:
            return self.inputs[name]
        if name.startswith("tangents_"):  # the gradient of output N
            return name
        if f"#{place}" in self.inputs:  # a backward's saved value, by its place
            return self.inputs[f"#{place}"]
        match = AOT_INPUT.match(name)
        return (
            f"#{int(match[1]) - 1 if match[1] else int(match[2])}" if match else f"#{place} {name}"
        )

    def _returned(self, statement: str) -> str:
        """Each value keyed by what it is (`outputs`): outputs by place, gradients by input,
        saved values as a multiset; as returned where the keys do not fit."""
        values = [_IDENT.sub(self._named, v) for v in _top_level_arguments(statement[8:-1])]
        if self.outputs is None or len(self.outputs) != len(values):
            return "return " + ",".join(values)
        return "return " + ";".join(f"{k}={v}" for k, v in sorted(zip(self.outputs, values)))

    def _named(self, match: re.Match[str]) -> str:
        name = match[1]
        return self.values.get(name) or self.kernels.get(name) or name

    def _writes(self, statement: str, assigned: re.Match[str] | None) -> list[tuple[str, str]]:
        """The names a statement writes, each with where (`=`, `out`, an argument's place)."""
        if assigned is not None:
            return [(assigned[1], "=")]
        out = _OUT.search(statement)
        if out is not None:
            return [(out[1], "out")]
        callee, _, rest = statement.partition("(")
        arguments = _top_level_arguments(rest.rpartition(")")[0])
        places = self.written.get(callee.removesuffix(".run"))
        return [
            (argument, str(place))
            for place, argument in enumerate(arguments)
            if argument in self.values and (places is None or place in places)
        ]


def call_difference(old: str, new: str) -> str:
    """What differs between two statements that call the same callee: `extern_kernels.addmm(...):
    alpha=2 -> alpha=3`; the two statements whole where the callee or the arguments' count differ."""
    call_a, call_b = _called(old), _called(new)
    callee_a, _, rest_a = call_a.partition("(")
    callee_b, _, rest_b = call_b.partition("(")
    if callee_a == callee_b and rest_a.endswith(")") and rest_b.endswith(")"):
        before = _top_level_arguments(rest_a[:-1])
        after = _top_level_arguments(rest_b[:-1])
        changed = [(a, b) for a, b in zip(before, after) if a != b]
        if len(before) == len(after) and changed:
            said = ", ".join(f"{a} -> {b}" for a, b in changed)
            return f"{callee_a}(...): {said}"
    return f"{old} -> {new}"


def _called(statement: str) -> str:
    """A statement without the name it assigns to."""
    assigned = _ASSIGN.match(statement)
    return statement[assigned.end() :] if assigned else statement


def _written_places(body: str) -> set[int] | None:
    """The argument places a C++ kernel writes (its pointers not declared `const`); None where
    its arguments are not declared (a Triton kernel: each buffer it is given may be written)."""
    types = KERNEL_ARGUMENT_TYPES.search(body)
    if types is None:
        return None
    declared = [t.strip().strip("'\"") for t in types[1].split(",") if t.strip()]
    return {k for k, t in enumerate(declared) if t.endswith("*") and not t.startswith("const ")}


def _top_level_arguments(text: str) -> list[str]:
    """The arguments of a call's text between its parentheses, split at its own commas."""
    found, depth, start = [], 0, 0
    for index, char in enumerate(text):
        if char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
        elif char == "," and depth == 0:
            found.append(text[start:index].strip())
            start = index + 1
    if text[start:].strip():
        found.append(text[start:].strip())
    return found


def _hash(text: str) -> str:
    return hashlib.sha1(text.encode()).hexdigest()[:16]
