"""The graph a frame compile calls (`__compiled_fn_<N>`): AOTAutograd's wrapper and the kernels, as Python.

Dynamo hands each graph to the backend and calls what comes back. For
Inductor and `aot_eager` that is AOTAutograd's runtime wrapper: it runs an
inference graph with grad off, or, for training, an `autograd.Function`
whose forward runs the compiled forward and saves what the compiled backward
needs; it then copies updated values into mutated inputs. Its layout comes
from AOTAutograd's metadata record (`_torch/program/aot_meta.py`). The kernels are
Inductor's output code (`call(args)`), or AOTAutograd's FX graphs where
Inductor wrote none (a backward that never ran) and for `aot_eager`. For
the `eager` backend the graph is Dynamo's own FX graph, called directly.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...._torch.formats import (
    AOT_KIND,
    FX_BODY_START,
    FX_CLASS_LINE,
    FX_CONSTANT_READ,
    FX_SELF_READ,
    constants_read,
    output_constants,
)
from ...._torch.program.aot_meta import AotMeta, MetaFormatError, parse_meta
from ....common.capture_log import CaptureLog, FrameKey
from .refusals import ProgramRefused

#: kernel kinds: how the file loads a kernel source.
OUTPUT_CODE, FX_BOXED, FX_CALL = (
    "output code",
    "fx graph",
    "fx graph, called with its arguments",
)


@dataclass(frozen=True)
class Kernel:
    key: str  # `f0c0_forward`
    kind: str
    source: str
    note: str
    #: the tensor constants it reads: (name, the expression that rebuilds the value)
    constants: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class GraphCode:
    """One compile's graph: the kernel sources it loads and the factory of its wrapper."""

    factory: str  # the name of `def compiled_fn_<label>(kernels)`
    source: str
    kernels: tuple[Kernel, ...]


def graph_code(
    log: CaptureLog,
    key: FrameKey,
    label: str,
    backend: str,
    where: str,
    constants: dict[str, str] | None = None,
    constants_problem: str = "",
) -> GraphCode:
    """The wrapper and kernels of the graph compiled for frame compile `key` (`constants`: the tensor
    constants its graphs read, as expressions; `constants_problem`: why some could not be read)."""
    if backend == "eager":
        return _dynamo_graph(log, key, label, where)
    kernels = _aot_kernels(log, key, label, backend, where, (constants or {}, constants_problem))
    meta = _meta(log, key, where)
    training = any(k.key.endswith("_forward") for k in kernels)
    _check_meta(meta, training, where)
    body = _training(meta, label, kernels) if training else _inference(meta, label)
    return GraphCode(f"compiled_fn_{label}", body, tuple(kernels))


def _dynamo_graph(log: CaptureLog, key: FrameKey, label: str, where: str) -> GraphCode:
    graphs = log.payloads("dynamo_graph", key)
    if len(graphs) != 1:
        raise ProgramRefused(
            where, f"{len(graphs)} Dynamo graphs were captured for one compiled call"
        )
    _check_fx(graphs[0], where)
    kernel = Kernel(
        f"{label}_graph",
        FX_CALL,
        graphs[0],
        "Dynamo's graph, which the eager backend runs as is",
    )
    source = "\n".join(
        [
            f"def compiled_fn_{label}(kernels):",
            f'    """The graph of {where}: the eager backend calls Dynamo\'s FX graph as is."""',
            f"    return kernels[{kernel.key!r}]",
        ]
    )
    return GraphCode(f"compiled_fn_{label}", source + "\n", (kernel,))


def _aot_kernels(
    log: CaptureLog,
    key: FrameKey,
    label: str,
    backend: str,
    where: str,
    constants: tuple[dict[str, str], str],
) -> list[Kernel]:
    kernels: dict[str, Kernel] = {}
    if backend == "inductor":
        for code in log.payloads("output_code", key):
            match = AOT_KIND.search(code)
            kind = match.group(1) if match else "inference"
            reads = _provided(output_constants(code), constants, where)
            kernels[kind] = Kernel(
                f"{label}_{kind}", OUTPUT_CODE, code, f"Inductor's output code ({kind})", reads
            )
    for kind in ("forward", "backward", "inference"):
        graphs = log.payloads(f"aot_{kind}", key)
        if kind in kernels or not graphs:
            continue
        reads = _provided(constants_read(graphs[-1]), constants, where)
        _check_fx(graphs[-1], where, {name for name, _ in reads})
        note = (
            "AOTAutograd's graph, which aot_eager runs as is"
            if backend == "aot_eager"
            else (
                "AOTAutograd's backward graph: Inductor compiled no backward during the capture, so its eager ops run"
            )
        )
        kernels[kind] = Kernel(f"{label}_{kind}", FX_BOXED, fx_source(graphs[-1]), note, reads)
    if not kernels:
        raise ProgramRefused(
            where,
            "no compiled graph was captured for it (no output code, no AOTAutograd graph)",
        )
    if "inference" in kernels and "forward" in kernels:
        raise ProgramRefused(
            where,
            "both an inference and a training graph were captured for one compiled call",
        )
    return [kernels[k] for k in ("forward", "backward", "inference") if k in kernels]


def _provided(
    names: list[str], constants: tuple[dict[str, str], str], where: str
) -> tuple[tuple[str, str], ...]:
    """The constants a kernel reads, each with the expression the file rebuilds it by; refused, saying
    why, when one of them could not be read."""
    sources, problem = constants
    missing = sorted(set(names) - set(sources))
    if missing:
        raise ProgramRefused(
            where,
            (
                problem
                or f"its graph reads tensor constant(s) {', '.join(missing)} whose values were not read"
            )
            + "; build such a tensor outside the compiled code and pass it in (or make it a buffer of the model)",
        )
    return tuple((name, sources[name]) for name in sorted(set(names)))


def _check_fx(text: str, where: str, constants: frozenset[str] | set[str] = frozenset()) -> None:
    """Refuse a graph that reads its GraphModule for anything but the tensor constants the file sets."""
    body = text.split(FX_BODY_START, 1)[-1]
    reads = [line for line in body.splitlines() if FX_SELF_READ.match(line)]
    other = [
        line
        for line in reads
        if (found := FX_CONSTANT_READ.fullmatch(line)) is None or found.group(1) not in constants
    ]
    if other or len(FX_CLASS_LINE.findall(text)) > 1:
        raise ProgramRefused(
            where,
            "its FX graph reads attributes or submodules of its GraphModule (constants, higher-order op bodies) "
            "that the printed graph does not hold",
        )


def fx_source(text: str) -> str:
    """A printed FX graph as a module defining `GraphModule` (AOT's graphs print as `class <lambda>`)."""
    return FX_CLASS_LINE.sub("class GraphModule(torch.nn.Module):", text, count=1)


def _meta(log: CaptureLog, key: FrameKey, where: str) -> AotMeta:
    texts = log.payloads("aot_metadata", key)
    if not texts:
        raise ProgramRefused(
            where,
            "AOTAutograd's metadata record (aot_forward_graph_fw_metadata) was not captured",
        )
    try:
        return parse_meta(texts[-1])
    except MetaFormatError as exc:
        raise ProgramRefused(where, str(exc)) from None


def _check_meta(meta: AotMeta, training: bool, where: str) -> None:
    """Refuse what the wrapper below does not reproduce."""
    _check_subclasses(meta, training, where)
    if meta.num_tokens or meta.num_rng_states or meta.num_opaque_saved:
        raise ProgramRefused(
            where,
            "it threads effect tokens, random-number states or opaque objects through the graph",
        )
    unknown = sorted(
        {meta.outputs[i].output_type for i in meta.aliased_outputs} - set(_ALIAS_BASES)
    )
    if unknown:
        raise ProgramRefused(
            where,
            f"outputs alias their inputs or intermediates in a way this file does not regenerate ({', '.join(unknown)})",
        )
    for index in meta.mutated_runtime_indices:
        info = meta.inputs[index]
        if info.mutates_metadata or info.mutates_storage_metadata or info.storage_resize:
            raise ProgramRefused(
                where,
                f"input {index}'s metadata or storage is mutated, which AOTAutograd applies after the graph",
            )
    if training and meta.num_symints_saved:
        raise ProgramRefused(
            where, "a training graph with dynamic shapes (sizes saved for the backward)"
        )
    if training and len(meta.tangent_layouts) != len(meta.tangent_returns()):
        raise ProgramRefused(
            where,
            "AOTAutograd's tangent metadata does not match the outputs that take gradients",
        )


def _check_subclasses(meta: AotMeta, training: bool, where: str) -> None:
    """Refuse the tensor subclasses the wrapper does not unwrap and wrap as AOTAutograd does: the
    file unwraps subclass inputs that take no gradient (a quantized weight, frozen under a LoRA
    adapter in training), nothing more. Their backward returns one None for each such input, as
    for a plain one; a subclass that takes a gradient gets it wrapped again from metadata
    AOTAutograd does not log (its `grad_input_metas`)."""
    if not (meta.subclass_inputs or meta.subclass_outputs):
        return
    reason = ""
    if training and any(meta.inputs[i].requires_grad for i in meta.subclass_inputs):
        reason = "a training graph whose tensor subclass input takes a gradient (AOTAutograd wraps the gradient again)"
    elif meta.subclass_outputs:
        reason = "an output is a tensor subclass, which AOTAutograd wraps again from the graph's plain outputs"
    elif meta.subclass_symints:
        reason = "a tensor subclass input with dynamic sizes (AOTAutograd passes its sizes to the graph too)"
    elif set(meta.subclass_inputs) & set(meta.mutated_runtime_indices):
        reason = "a tensor subclass input is mutated (AOTAutograd writes its new value back through the subclass)"
    if reason:
        raise ProgramRefused(where, reason)


#: an aliased output's kind -> where its base is: an input, an intermediate base the graph returns
#: after the user outputs, or another user output (AOTAutograd's output handlers)
_ALIAS_BASES = {
    "is_input": "args[{base}]",
    "alias_of_input": "args[{base}]",
    "alias_of_intermediate": "outs[{intermediate}]",
    "alias_of_intermediate_save_as_output": "outs[{intermediate}]",
    "alias_of_intermediate_base_is_user_output": "outs[{output}]",
}


def _aliases(meta: AotMeta, pad: str) -> list[str]:
    """Outputs that alias an input or an intermediate, made again as views of it (AOTAutograd's epilogue)."""
    lines = []
    n_mut, n_out = len(meta.mutated_runtime_indices), len(meta.outputs)
    for index in meta.aliased_outputs:
        output = meta.outputs[index]
        base = _ALIAS_BASES[output.output_type].format(
            base=output.base_idx,
            intermediate=n_mut + n_out + (output.base_idx or 0),
            output=n_mut + (output.base_idx or 0),
        )
        if output.output_type == "is_input":
            lines.append(f"{pad}ret[{index}] = {base}  # output {index} is input {output.base_idx}")
        else:
            lines.append(
                f"{pad}ret[{index}] = alias_from_base({base}, ret[{index}], {output.requires_grad!r})"
                f"  # output {index} is a view of {base.replace('outs', 'graph output')}"
            )
    return lines


def _epilogue(meta: AotMeta, pad: str) -> list[str]:
    """Lines after the graph: copy updated values into mutated inputs, make aliased outputs views again,
    mark dynamic sizes, return outputs."""
    lines = []
    mutated = meta.mutated_runtime_indices
    for position, index in enumerate(mutated):
        # AOTAutograd's epilogue: the copy is autograd's to record (an input that takes a gradient
        # only once the graph wrote one into it), except into a leaf that already takes one, whose
        # mutations can only have been hidden from autograd (under no_grad, or through `.detach()`)
        target = (
            f"(args[{index}].detach() if args[{index}].requires_grad else args[{index}])"
            if meta.inputs[index].is_leaf and meta.inputs[index].requires_grad
            else f"args[{index}]"  # it took no gradient even after the graph
        )
        lines.append(
            f"{pad}{target}.copy_(outs[{position}])  # input {index} is mutated: the graph returned its new value"
        )
    n_mut, n_out = len(mutated), len(meta.outputs)
    returned = f"outs[{n_mut}:{n_mut + n_out}]"
    if meta.aliased_outputs:
        lines.append(f"{pad}ret = {returned}")
        lines += _aliases(meta, pad)
        returned = "ret"
    for index, output in enumerate(meta.outputs):
        if output.dynamic_dims:
            place = f"ret[{index}]" if returned == "ret" else f"outs[{n_mut + index}]"
            lines.append(f"{pad}mark_dynamic_dims({place}, {set(output.dynamic_dims)!r})")
    if meta.grad_enabled_mutation is not None:
        lines.append(
            f"{pad}torch.set_grad_enabled({meta.grad_enabled_mutation!r})  # the graph changed grad mode"
        )
    lines.append(f"{pad}return {returned}")
    return lines


def _prologue(meta: AotMeta, pad: str) -> list[str]:
    seen = meta.in_graph_mutations_seen_by_autograd
    if not seen:
        return []
    listed = ", ".join(f"args[{i}]" for i in seen)
    return [
        f"{pad}torch.autograd.graph.increment_version(({listed},))  # the graph mutates these inputs in place"
    ]


def _count_check(meta: AotMeta, pad: str) -> list[str]:
    expected = meta.num_forward_returns
    return [
        f"{pad}if len(outs) != {expected}:",
        f'{pad}    raise AssertionError(f"expected {expected} outputs, got {{len(outs)}}")',
    ]


def _forward_returns(meta: AotMeta, returns: int, pad: str) -> list[str]:
    """The forward's returns as autograd.Function hands them on: AOTAutograd makes a view of an
    intermediate a tensor of its own (`_unsafe_view`) and boxes an aliased output in a `TensorAlias`
    (autograd must not track it; the wrapper makes it a view again after)."""
    hidden = [
        (i, f"torch.ops.aten._unsafe_view(returned[{i}], returned[{i}].shape)")
        for i in (len(meta.mutated_runtime_indices) + o for o in meta.unsafe_view_outputs)
    ] + [
        (i, f"TensorAlias(returned[{i}])")
        for i in (len(meta.mutated_runtime_indices) + o for o in meta.aliased_outputs)
    ]
    marked = meta.non_differentiable_returns()
    if not hidden:
        return [
            f"{pad}ctx.mark_non_differentiable(*(outs[i] for i in {marked!r} if isinstance(outs[i], torch.Tensor)))",
            f"{pad}return tuple(outs[:{returns}])",
        ]
    return [
        f"{pad}returned = outs[:{returns}]",
        *(f"{pad}returned[{i}] = {value}" for i, value in hidden),
        f"{pad}ctx.mark_non_differentiable(*(returned[i] for i in {marked!r} if isinstance(returned[i], torch.Tensor)))",
        f"{pad}return tuple(returned)",
    ]


def _inference(meta: AotMeta, label: str) -> str:
    lines = [
        f"def compiled_fn_{label}(kernels):",
        '    """AOTAutograd\'s runtime wrapper around an inference graph: run it with grad off, then apply its mutations."""',
        f"    call = kernels[{label + '_inference'!r}]",
        "",
        "    def run(*args):",
        *_prologue(meta, "        "),
        "        with torch.no_grad():  # an inference graph runs with grad off",
        (
            "            outs = list(call(flatten_subclasses(args)))  # the plain tensors inside each tensor subclass"
            if meta.subclass_inputs
            else "            outs = list(call(list(args)))  # the kernels take a list and clear it"
        ),
        *_count_check(meta, "        "),
        *_epilogue(meta, "        "),
        "",
        "    return run",
    ]
    return "\n".join(lines) + "\n"


def _training(meta: AotMeta, label: str, kernels: list[Kernel]) -> str:
    returns = meta.num_forward_returns
    backward = (
        f"kernels[{label + '_backward'!r}]"
        if any(k.key.endswith("_backward") for k in kernels)
        else "None"
    )
    tangents = list(zip(meta.tangent_returns(), meta.tangent_layouts))
    lines = [
        f"def compiled_fn_{label}(kernels):",
        '    """AOTAutograd\'s runtime wrapper around a training graph: an autograd.Function over the compiled forward and backward."""',
        f"    forward, backward = kernels[{label + '_forward'!r}], {backward}",
        "",
        "    class CompiledFunction(torch.autograd.Function):",
        "        @staticmethod",
        "        def forward(ctx, *args):",
        (
            "            outs = list(forward(flatten_subclasses(args)))  # the plain tensors inside each tensor subclass"
            if meta.subclass_inputs
            else "            outs = list(forward(list(args)))"
        ),
        f"            saved = outs[{returns}:]  # the activations the backward reads",
        "            ctx.save_for_backward(*(t.detach() if t._base is not None else t for t in saved))",
        *_forward_returns(meta, returns, "            "),
        "",
        "        @staticmethod",
        "        def backward(ctx, *grads):",
        "            if backward is None:",
        f'                raise RuntimeError("no backward was compiled for {label} during the capture")',
        f"            tangents = [coerce_tangent(grads[i], layout) for i, layout in {tangents!r}]",
        "            return tuple(backward([*ctx.saved_tensors, *tangents]))",
        "",
        "    def run(*args):",
        *_prologue(meta, "        "),
        "        with view_replay(), torch.enable_grad():  # as AOTAutograd's wrapper: the graph's outputs carry grad_fn",
        (
            "            outs = [unalias(o) for o in CompiledFunction.apply(*args)]"
            if meta.aliased_outputs
            else "            outs = list(CompiledFunction.apply(*args))"
        ),
        *_count_check(meta, "        "),
        *_epilogue(meta, "        "),
        "",
        "    return run",
    ]
    return "\n".join(lines) + "\n"
