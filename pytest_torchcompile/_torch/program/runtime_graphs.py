"""The runtime's stand-ins for what Dynamo's transformed code calls, and its kernels and graphs.

Copied into every program file after the guard prelude, from the marker
below on (`writer.RUNTIME_PARTS`): Inductor's output code and printed FX
graphs loaded as callables, a training graph's tangents and aliased outputs
made as AOTAutograd makes them, and Dynamo's view-replay switch (no public
switch).
"""

from __future__ import annotations

import contextlib
import linecache
import types
from math import inf, nan

import torch
from torch.utils._python_dispatch import is_traceable_wrapper_subclass

# --- what Dynamo's transformed code calls -----------------------------------


class DynamoUtils:
    """Stand-ins for the `torch._dynamo.utils` helpers transformed code calls (the same bodies, no Dynamo)."""

    @staticmethod
    def call_size(x, i):
        return x.size(i)

    @staticmethod
    def call_stride(x, i):
        return x.stride(i)

    @staticmethod
    def call_storage_offset(x):
        return x.storage_offset()

    @staticmethod
    def record_pregraph_bytecode_enter():
        return contextlib.nullcontext()  # Dynamo records a profiler range here only while profiling

    @staticmethod
    def record_pregraph_bytecode_exit(cm):
        cm.__exit__(None, None, None)

    @staticmethod
    def object_setattr_ignore_descriptor(obj, name, value):
        object.__getattribute__(obj, "__dict__")[name] = value

    @staticmethod
    def to_numpy_helper(value):
        """A graph's tensors back as the numpy arrays the function returns (numpy code under Dynamo)."""
        if isinstance(value, torch.Tensor):
            return value.numpy(force=True)
        if isinstance(value, (tuple, list)):
            return type(value)(DynamoUtils.to_numpy_helper(v) for v in value)
        return value

    @staticmethod
    def make_cell(val=None):
        """A closure's cell holding `val` (Dynamo gives a function it makes again cells of its own)."""
        return (lambda: val).__closure__[0]

    @staticmethod
    def numpy_to_tensor(value):
        """numpy arrays given to a graph as the tensors it takes."""
        import numpy

        if isinstance(value, numpy.ndarray):
            return torch.as_tensor(value)
        if isinstance(value, (tuple, list)):
            return type(value)(DynamoUtils.numpy_to_tensor(v) for v in value)
        return value


class DynamoFunctions:
    """Stand-ins for the `torch._dynamo.variables.functions` helpers transformed code calls."""

    @staticmethod
    def _create_nested_fn(code, f_globals, name, defaults, closure, kwdefaults, annotations):
        """A function made in the frame (a closure alive after a graph break), made again."""
        function = types.FunctionType(code, f_globals, name, defaults, closure)
        function.__kwdefaults__ = kwdefaults
        if isinstance(annotations, tuple):  # Dynamo passes them as (name, value, name, value, ...)
            annotations = dict(zip(annotations[::2], annotations[1::2]))
        function.__annotations__ = annotations
        return function


#: the Dynamo modules transformed code reads, by name: the file's stand-ins (no Dynamo imported)
STAND_INS = {
    "torch._dynamo.utils": DynamoUtils,
    "torch._dynamo.variables.functions": DynamoFunctions,
}


# --- kernels and graphs -----------------------------------------------------


def load_output_code(name: str, source: str) -> types.ModuleType:
    """Inductor's output code as a module: compiling its kernels is what loading costs."""
    module = types.ModuleType(name)
    module.__file__ = f"<{name}>"
    linecache.cache[module.__file__] = (
        len(source),
        None,
        source.splitlines(True),
        module.__file__,
    )
    exec(compile(source, module.__file__, "exec"), module.__dict__)
    return module


def load_fx_graph(name: str, source: str, constants=None):
    """A printed FX GraphModule (`class GraphModule(torch.nn.Module): def forward(...)`) as a boxed
    callable; `constants` are the tensors it reads from itself (`self._tensor_constant0`)."""
    scope = {"torch": torch, "device": torch.device, "inf": inf, "nan": nan}
    exec(compile(source, f"<{name}>", "exec"), scope)
    graph = scope["GraphModule"]()
    for attribute, value in (constants or {}).items():
        setattr(graph, attribute, value)

    def call(args):
        values = list(args)
        args.clear()
        return graph.forward(*values)

    return call


def flatten_subclasses(args) -> list:
    """A graph's inputs as AOTAutograd hands them over: each tensor subclass (a quantized weight) replaced
    by the plain tensors its `__tensor_flatten__` names, depth first, as its runtime unwrapping does."""
    flat: list = []
    for arg in args:
        _flatten_into(arg, flat)
    return flat


def _flatten_into(value, out: list) -> None:
    if not is_traceable_wrapper_subclass(value):
        out.append(value)
        return
    names, _ = value.__tensor_flatten__()
    for name in names:
        _flatten_into(getattr(value, name), out)


def constant_tensor(values: list, dtype: str, shape: list, stride: list, device_name: str):
    """A tensor constant of a graph, rebuilt from its values (every element as its Python number)."""
    dense = torch.tensor(values, dtype=getattr(torch, dtype.removeprefix("torch."))).reshape(shape)
    out = torch.empty_strided(shape, stride, dtype=dense.dtype, device=device_name)
    return out.copy_(dense)


def coerce_tangent(t, layout):
    """A gradient laid out as AOTAutograd traced it: (size, stride), a memory format, or as given."""
    if not isinstance(t, torch.Tensor) or layout is None:
        return t
    if isinstance(layout, str):
        memory_format = getattr(torch, layout.removeprefix("torch."))
        return (
            t
            if t.is_contiguous(memory_format=memory_format)
            else t.contiguous(memory_format=memory_format)
        )
    size, stride = layout
    if tuple(t.shape) == tuple(size) and tuple(t.stride()) == tuple(stride):
        return t
    out = torch.empty_strided(
        size,
        stride,
        dtype=t.dtype,
        device=t.device,
        layout=t.layout,
        requires_grad=t.requires_grad,
    )
    out.copy_(t)
    return out


@contextlib.contextmanager
def view_replay():
    """Autograd replays views of a training graph's outputs, as AOTAutograd's wrapper asks (no public switch)."""
    before = torch._C._is_view_replay_enabled()
    torch._C._set_view_replay_enabled(True)
    try:
        yield
    finally:
        torch._C._set_view_replay_enabled(before)


class TensorAlias:
    """An aliased output autograd.Function must not track (AOTAutograd's own box of that name)."""

    def __init__(self, alias) -> None:
        self.alias = alias


def unalias(value):
    return value.alias if isinstance(value, TensorAlias) else value


def alias_from_base(base, target, requires_grad: bool):
    """The graph's output `target`, made again as a view of `base` (AOTAutograd's gen_alias_from_base):
    by autograd's record of the view where it kept one, else by size, stride and offset."""
    out = None
    if target._base is not None:
        b = target._base
        same = base is b or (
            base.size() == b.size()
            and base.stride() == b.stride()
            and base.storage_offset() == b.storage_offset()
        )
        reshaped = base if same else base.as_strided(b.size(), b.stride(), b.storage_offset())
        out = target._view_func(reshaped)  # no public API replays a view on another base
        if out is not None and out.shape != target.shape:
            out = None
    if out is None:
        size, stride, offset = target.size(), target.stride(), target.storage_offset()
        if base.is_complex() and not target.is_complex():
            out = torch.view_as_real(base).as_strided(size, stride, offset)
        elif not base.is_complex() and target.is_complex():
            out = torch.view_as_complex(base).as_strided(size, stride, offset)
        else:
            out = base.as_strided(size, stride, offset)
    if base.requires_grad and not requires_grad:
        out = out.detach()
    elif not base.requires_grad and requires_grad:
        out.requires_grad_(True)
    return out.view(target.dtype) if out.dtype != target.dtype else out


def mark_dynamic_dims(t, dims) -> None:
    """What AOTAutograd marks on outputs with dynamic sizes (Dynamo reads it when the tensor comes back)."""
    if isinstance(t, torch.Tensor) and dims:
        t._dynamo_dynamic_indices = getattr(t, "_dynamo_dynamic_indices", set()) | set(dims)
