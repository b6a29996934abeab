"""AOTAutograd's view-and-mutation metadata, read from its trace record.

AOTAutograd logs the metadata of every graph it compiles (the artifact
`aot_forward_graph_fw_metadata`, on a cache hit too, in torch 2.11 to 2.15)
as `dataclass_repr(ViewAndMutationMeta(...))`. `parse_meta` reads that text
back into `AotMeta`: which inputs the graph mutates and how, what its outputs
alias, how many tensors and sizes the forward saves for the backward, effect
tokens and random-state counts. The program file's runtime wrapper is written
from it. Pure text: no torch import.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from typing import Any

#: one token of the repr that needs rewriting before `ast` reads it, or a string literal that must
#: not be (a stack trace quoted in a field holds `File "<eval_with_key>.3"`): tried at each position
#: left to right, so a string is consumed whole before a `<` inside it is seen. The reprs that are
#: not Python: `<OutputType.non_alias: 1>`, `<class 'x.Y'>`, `<function f at 0x..>`, and a
#: lambda's `<function M.__init__.<locals>.<lambda> at 0x..>`.
_TOKEN = re.compile(
    r"""(?P<string>'(?:[^'\\\n]|\\.)*'|"(?:[^"\\\n]|\\.)*")"""
    r"|<(?P<enum>\w+)\.(?P<member>\w+): [^<>]*>"
    r"|<class '(?P<cls>[^']*)'>"
    r"|(?P<other><(?:[^<>]|<[^<>]*>)*>)"  # one level nested: `<function f.<locals>.<lambda> at 0x..>`
)
#: a subclass's own repr, which may be any text (torchao's NF4 weight prints lines of prose): it
#: stands before `original_subclass_type=` in `SubclassCreationMeta` on torch 2.11 to 2.15, and is
#: read as None, as the runtime metadata has it (`make_runtime_safe`)
_ORIGINAL_SUBCLASS = re.compile(r"original_subclass=.*?,(\s*original_subclass_type=)", re.DOTALL)
#: how much of an unexpected expression the error message quotes, and a file path in it
_QUOTED = 80
_PATH = re.compile(r"(?:[\w.~-]*/)+[\w.<>-]+")

#: a tangent's layout: (size, stride), a memory format's name (`torch.channels_last`), or None.
TangentLayout = tuple[tuple[int, ...], tuple[int, ...]] | str | None

#: output types whose value is the compiled graph's own tensor (AOT's `non_alias` group).
PLAIN_OUTPUTS = ("non_alias", "unsafe_view_alias", "custom_function_view")


@dataclass(frozen=True)
class Node:
    """A constructor call in the repr: `Name(key=value, ...)`."""

    name: str
    fields: dict[str, Any]

    def __getitem__(self, key: str) -> Any:
        return self.fields[key]

    def get(self, key: str, default: Any = None) -> Any:
        return self.fields.get(key, default)


class MetaFormatError(ValueError):
    """The metadata text is not the `ViewAndMutationMeta(...)` repr this module reads."""


def parse_repr(text: str) -> Any:
    """The repr as plain values: calls become `Node`s, unknown `<...>` reprs strings."""
    text = _ORIGINAL_SUBCLASS.sub(r"original_subclass=None,\1", text)
    text = _TOKEN.sub(_python_token, text)
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as exc:
        raise MetaFormatError(f"AOTAutograd's metadata does not parse: {exc}") from None
    return _value(tree.body)


def _python_token(match: re.Match[str]) -> str:
    """A string literal as it is; a repr that is not Python as a string (an enum as its member's name)."""
    if match.group("string") is not None:
        return match.group("string")
    if match.group("member") is not None:
        return repr(match.group("member"))
    if match.group("cls") is not None:
        return repr(match.group("cls"))
    return repr(match.group("other"))


def _value(node: ast.expr) -> Any:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, (ast.List, ast.Tuple)):
        return [_value(e) for e in node.elts]
    if isinstance(node, ast.Set):
        return {_value(e) for e in node.elts}
    if isinstance(node, ast.Dict):
        return {_value(k): _value(v) for k, v in zip(node.keys, node.values) if k is not None}
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -_value(node.operand)
    if isinstance(node, ast.Attribute):
        return ast.unparse(node)
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Call):
        name = ast.unparse(node.func)
        if name == "set":
            return set(_value(node.args[0])) if node.args else set()
        if name == "torch.Size":
            return _value(node.args[0])
        fields = {k.arg: _value(k.value) for k in node.keywords if k.arg}
        fields.update({f"_{i}": _value(a) for i, a in enumerate(node.args)})
        return Node(name, fields)
    raise MetaFormatError(
        f"AOTAutograd's metadata holds an expression this reader does not know "
        f"({type(node).__name__}): {_excerpt(ast.unparse(node))}"
    )


def _excerpt(code: str) -> str:
    """The start of an expression for a message: file paths as their names, cut whole with `...`."""
    code = _PATH.sub(lambda m: m.group(0).rsplit("/", 1)[-1], " ".join(code.split()))
    return code if len(code) <= _QUOTED else code[: _QUOTED - 3].rstrip() + "..."


@dataclass(frozen=True)
class InputInfo:
    """One graph input: whether and how the graph mutates it, and whether it needs grad."""

    mutates_data: bool
    mutates_metadata: bool
    mutates_storage_metadata: bool
    storage_resize: bool
    hidden_from_autograd: bool
    under_no_grad: bool
    requires_grad: bool
    is_leaf: bool
    keep_mutations: bool

    @property
    def mutated(self) -> bool:
        return self.mutates_data or self.mutates_metadata or self.storage_resize

    @property
    def mutated_in_graph(self) -> bool:
        """The compiled graph applies the mutation itself (AOT's MUTATED_IN_GRAPH)."""
        if not self.mutated or not self.keep_mutations:
            return False
        return (self.mutates_data or self.mutates_storage_metadata or self.storage_resize) and (
            (not self.mutates_metadata and not self.requires_grad)
            or self.hidden_from_autograd
            or self.under_no_grad
        )


@dataclass(frozen=True)
class OutputInfo:
    """One user output: what it aliases and whether it carries a gradient."""

    output_type: str
    base_idx: int | None
    requires_grad: bool
    requires_grad_for_backward: bool
    raw_type: str
    dynamic_dims: tuple[int, ...]

    @property
    def is_tensor(self) -> bool:
        return "Tensor" in self.raw_type or "Parameter" in self.raw_type


@dataclass(frozen=True)
class AotMeta:
    """What the runtime wrapper around one compiled graph needs to know."""

    inputs: tuple[InputInfo, ...]
    outputs: tuple[OutputInfo, ...]
    num_intermediate_bases: int
    num_symints_saved: int
    num_opaque_saved: int
    num_tokens: int
    num_rng_states: int
    tangent_layouts: tuple[TangentLayout, ...]
    grad_enabled_mutation: bool | None
    #: the inputs that are tensor subclasses (AOTAutograd hands the graph their inner tensors)
    subclass_inputs: tuple[int, ...]
    #: an output the graph returns as a subclass's inner tensors, wrapped again after it
    subclass_outputs: bool
    #: a subclass's sizes or strides passed as symbols too (dynamic shapes)
    subclass_symints: bool
    raw: dict[str, Any] = field(repr=False, default_factory=dict)

    @property
    def mutated_runtime_indices(self) -> list[int]:
        """Inputs the wrapper copies updated values into (AOT's MUTATED_OUT_GRAPH)."""
        return [
            i for i, info in enumerate(self.inputs) if info.mutated and not info.mutated_in_graph
        ]

    @property
    def in_graph_mutations_seen_by_autograd(self) -> list[int]:
        return [
            i
            for i, info in enumerate(self.inputs)
            if info.mutated_in_graph and not info.hidden_from_autograd
        ]

    @property
    def num_forward_returns(self) -> int:
        return len(self.mutated_runtime_indices) + len(self.outputs) + self.num_intermediate_bases

    @property
    def aliased_outputs(self) -> list[int]:
        return [i for i, o in enumerate(self.outputs) if o.output_type not in PLAIN_OUTPUTS]

    @property
    def unsafe_view_outputs(self) -> list[int]:
        return [i for i, o in enumerate(self.outputs) if o.output_type == "unsafe_view_alias"]

    def non_differentiable_returns(self) -> list[int]:
        """Forward returns (mutated inputs, then outputs) that carry no gradient."""
        metas = [self.inputs[i].requires_grad for i in self.mutated_runtime_indices]
        metas += [o.requires_grad for o in self.outputs]
        return [i for i, needs in enumerate(metas) if not needs]

    def tangent_returns(self) -> list[int]:
        """Forward returns whose incoming gradient the compiled backward takes, in its order."""
        n_mut = len(self.mutated_runtime_indices)
        mutated = [
            i
            for i, idx in enumerate(self.mutated_runtime_indices)
            if self.inputs[idx].mutates_data and self.inputs[idx].requires_grad
        ]
        outputs = [
            n_mut + i
            for i, o in enumerate(self.outputs)
            if o.output_type in PLAIN_OUTPUTS and o.is_tensor and o.requires_grad_for_backward
        ]
        start = n_mut + len(self.outputs)
        return mutated + outputs + list(range(start, start + self.num_intermediate_bases))


def parse_meta(text: str) -> AotMeta:
    """`AotMeta` from the text of an `aot_forward_graph_fw_metadata` record."""
    root = parse_repr(text)
    if not isinstance(root, Node) or root.name != "ViewAndMutationMeta":
        raise MetaFormatError("AOTAutograd's metadata record is not a ViewAndMutationMeta repr")
    inputs = tuple(_input(n) for n in root.get("input_info", []))
    outputs = tuple(_output(n) for n in root.get("output_info", []))
    tangents = tuple(_tangent_layout(m) for m in root.get("subclass_tangent_meta", []) or [])
    inputs_meta = list(root.get("subclass_inp_meta", []) or [])
    outputs_meta = list(root.get("subclass_fw_graph_out_meta", []) or [])
    return AotMeta(
        inputs=inputs,
        outputs=outputs,
        num_intermediate_bases=int(root.get("num_intermediate_bases", 0) or 0),
        num_symints_saved=int(root.get("num_symints_saved_for_bw", 0) or 0),
        num_opaque_saved=int(root.get("num_opaque_objects_saved_for_bw", 0) or 0),
        num_tokens=len(root.get("tokens", {}) or {}),
        num_rng_states=int(root.get("num_graphsafe_rng_states", 0) or 0),
        tangent_layouts=tangents,
        grad_enabled_mutation=root.get("grad_enabled_mutation"),
        subclass_inputs=tuple(i for i, m in enumerate(inputs_meta) if _is_subclass(m)),
        subclass_outputs=any(_is_subclass(m) for m in outputs_meta),
        subclass_symints=any(_with_symints(m) for m in inputs_meta + outputs_meta),
        raw=dict(root.fields),
    )


def _is_subclass(meta: object) -> bool:
    """A `SubclassCreationMeta` (an int or a `PlainTensorMeta` is a plain tensor)."""
    return isinstance(meta, Node) and meta.name == "SubclassCreationMeta"


def _with_symints(meta: object) -> bool:
    """Whether a subclass, or one inside it, has a size or stride that is a symbol (AOTAutograd then
    passes it to the graph after the inner tensors; `included_subclass_symints` only says it may)."""
    if not _is_subclass(meta):
        return False
    assert isinstance(meta, Node)
    dims = [*(meta.get("outer_size") or []), *(meta.get("outer_stride") or [])]
    inner = meta.get("attrs") or {}
    return any(not isinstance(d, int) for d in dims) or any(
        _with_symints(m) for m in (inner.values() if isinstance(inner, dict) else ())
    )


def _input(node: Node) -> InputInfo:
    return InputInfo(
        mutates_data=bool(node.get("mutates_data")),
        mutates_metadata=bool(node.get("mutates_metadata")),
        mutates_storage_metadata=bool(node.get("mutates_storage_metadata")),
        storage_resize=bool(node.get("mutation_inductor_storage_resize")),
        hidden_from_autograd=bool(node.get("mutations_hidden_from_autograd")),
        under_no_grad=bool(node.get("mutations_under_no_grad_or_inference_mode")),
        requires_grad=bool(node.get("requires_grad")),
        is_leaf=bool(node.get("is_leaf")),
        keep_mutations=bool(node.get("keep_input_mutations")),
    )


def _output(node: Node) -> OutputInfo:
    dims = node.get("dynamic_dims") or set()
    return OutputInfo(
        output_type=str(node.get("output_type")),
        base_idx=node.get("base_idx"),
        requires_grad=bool(node.get("requires_grad")),
        requires_grad_for_backward=bool(
            node.get("requires_grad_for_backward", node.get("requires_grad"))
        ),
        raw_type=str(node.get("raw_type")),
        dynamic_dims=tuple(sorted(dims)),
    )


def _tangent_layout(meta: object) -> TangentLayout:
    """How AOT lays a tangent out before the backward: (size, stride), a memory format, or None."""
    if not isinstance(meta, Node):
        return None
    memory = meta.get("memory_format")
    if not isinstance(memory, Node):
        return None
    if memory.get("memory_format") is not None:
        return str(memory["memory_format"])
    if memory.get("size") is None or memory.get("stride") is None:
        return None
    return tuple(int(s) for s in memory["size"]), tuple(int(s) for s in memory["stride"])
