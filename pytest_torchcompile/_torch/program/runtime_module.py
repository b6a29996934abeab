"""The runtime's module rebuilding: the compiled model from itself or from a state_dict.

Copied last into every program file's runtime, from the marker below on
(`writer.RUNTIME_PARTS`): each module made as pickle makes it, its tensors
bound by name, ties and shared modules kept; and the check of the torch and
Python versions the file was written with.
"""

from __future__ import annotations

import collections
import sys
import warnings

import torch
from torch.utils._pytree import SUPPORTED_NODES

from .runtime import import_object

# --- the module, from itself or from a state_dict ---------------------------


class Skeleton(torch.nn.Module):
    """A module of a class that cannot be imported by name, rebuilt from a state_dict: what the
    compiled code and the guards read (its tensors, submodules and settings), none of its methods."""

    def __init__(self, class_path) -> None:
        super().__init__()
        self._class_path = class_path

    def __repr__(self) -> str:
        return f"<Skeleton of {self._class_path}>"


#: the class path of a module slot that holds None; of a module seen before, this and its first path
NO_MODULE, SAME_MODULE = "<None>", "<same as>"
#: the last entry of a module its parent holds as a plain attribute, outside `_modules`
ATTRIBUTE_MODULE = "attribute"


#: the objects `new_object` and `shared_value` made, by the number the file gave them (an object at
#: two places is one)
SHARED_OBJECTS: dict = {}
#: the tensors `rebuild_module` bound so far, by path (an attribute that holds them names them)
TREE_TENSORS: dict = {}


def shared_object(number: int):
    """The object `new_object` made with `shared=number`, earlier in the module's layout."""
    return SHARED_OBJECTS[number]


def shared_value(number: int, value):
    """A list, dict, set or deque that two attributes of the tree hold (peft's adapter layers share
    one list of active adapters, and Dynamo guards `a is b`), kept for `shared_object(number)`."""
    SHARED_OBJECTS[number] = value
    return value


def tree_tensor(path: str):
    """The parameter or buffer the rebuilt tree holds at `path` (bound before the attribute that
    names it), so that an attribute holding it holds that same tensor."""
    return TREE_TENSORS[path]


def new_object(
    class_path: str, attributes: dict, items: dict | None = None, shared=None, setstate=False
):
    """An object rebuilt as pickle rebuilds it: its class's `__new__`, its items (a dict subclass,
    set as the dict sets them) and its state, given to its `__setstate__` (`setstate`) or set as
    its `__dict__`; no `__init__` runs."""
    cls = import_object(class_path)
    value = cls.__new__(cls)
    if shared is not None:
        SHARED_OBJECTS[shared] = value
    for key, item in (items or {}).items():
        (
            collections.OrderedDict if isinstance(value, collections.OrderedDict) else dict
        ).__setitem__(value, key, item)
    if setstate:
        value.__setstate__(attributes)
    else:
        value.__dict__.update(attributes)
    return value


def rebuild_module(layout: list, state_dict: dict):
    """The module tree of `layout` with the tensors of `state_dict` bound by name: each module of
    its own class (a `Skeleton` where the class does not import), made as pickle makes it (no
    `__init__` of its own runs), its tensors bound, then its recorded settings set (they may hold
    its tensors); a tied tensor or a shared module bound once, at every path it had; a module
    held as a plain attribute set in its parent's `__dict__`."""
    nodes = {}
    SHARED_OBJECTS.clear()
    TREE_TENSORS.clear()
    for path, class_path, params, buffers, settings, *held in layout:
        parent, _, child = path.rpartition(".")
        shared = class_path is not None and class_path.startswith(SAME_MODULE)
        if class_path == NO_MODULE:
            node = None
        elif shared:
            node = nodes[class_path.removeprefix(SAME_MODULE).strip()]
        else:
            node = _new_module(class_path)
        if path:
            where = nodes[parent].__dict__ if ATTRIBUTE_MODULE in held else nodes[parent]._modules
            where[child] = node
        if node is None or shared:
            continue
        nodes[path] = node
        for registry, specs, make in (
            (node._parameters, params, True),
            (node._buffers, buffers, False),
        ):
            for spec in specs:
                registry[spec[0]] = _slot(state_dict, path, spec, make, TREE_TENSORS)
        for name, source in settings:
            node.__dict__[name] = eval(source)
    return nodes[""]


def _new_module(class_path):
    """An empty module of the class at `class_path`, or a Skeleton where it does not import."""
    try:
        cls = import_object(class_path) if class_path is not None else None
    except (ImportError, AttributeError):
        cls = None
    if not (isinstance(cls, type) and issubclass(cls, torch.nn.Module)):
        return Skeleton(class_path)
    node = cls.__new__(cls)
    torch.nn.Module.__init__(node)  # the registries and hooks every module has, empty
    return node


def _slot(state_dict: dict, path: str, spec, parameter: bool, made: dict):
    """A parameter's or buffer's value: None, the tensor tied to it, or the state_dict's tensor."""
    name = f"{path}.{spec[0]}" if path else spec[0]
    if spec[1] is None:
        return None
    if spec[1] == "tied":
        made[name] = made[spec[2]]
        return made[name]
    value = _tensor(state_dict, path, spec)
    made[name] = torch.nn.Parameter(value, requires_grad=spec[5]) if parameter else value
    return made[name]


def _tensor(state_dict: dict, path: str, spec) -> torch.Tensor:
    name, shape, dtype = (
        (f"{path}.{spec[0]}" if path else spec[0]),
        tuple(spec[1]),
        spec[3],
    )
    if name not in state_dict and len(spec) > 6 and spec[6] is not None:
        return random_tensor(spec)  # a non-persistent buffer: its recorded values
    if name not in state_dict:
        raise KeyError(f"state_dict has no {name!r} (a {dtype} tensor of shape {list(shape)})")
    value = state_dict[name]
    if tuple(value.shape) != shape or str(value.dtype) != dtype:
        raise ValueError(
            f"state_dict[{name!r}] is {value.dtype} {list(value.shape)}; the compiled code needs {dtype} {list(shape)}"
        )
    return value.detach().clone()


def random_tensor(spec, path: str = "") -> torch.Tensor:
    """A tensor of the recorded layout, with seeded random values (or its recorded ones); `path`:
    the module that holds it, for a message."""
    name, shape, stride, dtype, device_name, requires_grad = spec[:6]
    if len(spec) > 7:
        return _subclass_tensor(spec, path).requires_grad_(requires_grad)
    dtype = getattr(torch, dtype.removeprefix("torch."))
    base = torch.empty_strided(shape, stride, dtype=dtype, device=device_name)
    if len(spec) > 6:
        base.copy_(torch.tensor(spec[6], dtype=dtype).reshape(shape))
    elif dtype.is_floating_point or dtype.is_complex:
        base.copy_(torch.randn(shape, dtype=dtype))
    elif dtype == torch.bool:
        base.copy_(torch.rand(shape) > 0.5)
    else:
        base.copy_(torch.randint(0, 8, shape, dtype=dtype))
    return base.requires_grad_(requires_grad)


def _subclass_tensor(spec, path: str) -> torch.Tensor:
    """A tensor subclass (a quantized weight) made as AOTAutograd makes one again: its class's
    `__tensor_unflatten__` over random inner tensors of the recorded layouts and its recorded
    metadata (`(..., None, class, inner specs, metadata source)`)."""
    name, shape, stride = spec[:3]
    class_path, inner, metadata = (*spec[7:], None, None)[:3]
    if metadata is None:
        raise TypeError(
            f"{path + '.' if path else ''}{name} is a {class_path}, a tensor subclass (a quantized weight) whose class or "
            "metadata has no Python form, so the file cannot make one: call load(model) with the model, or "
            "load(state_dict=...) with its weights"
        )
    inner_tensors = {
        part[0]: random_tensor(part, f"{path}.{name}" if path else name) for part in inner
    }
    return import_object(class_path).__tensor_unflatten__(
        inner_tensors, eval(metadata), torch.Size(shape), tuple(stride)
    )


def pytree_value(type_path: str, context, children: list):
    """An input of a container type registered with torch's pytree (a tensorclass, a TensorDict),
    made from its children and recorded context as `tree_unflatten` makes it (INPUTS)."""
    return SUPPORTED_NODES[import_object(type_path)].unflatten_fn(children, context)


def check_versions(torch_version: str, python_version: str) -> list[str]:
    """The differences between the versions the file was written with and these; warned about on load."""
    found = []
    if torch.__version__ != torch_version:
        found.append(f"torch {torch.__version__} (the file was written with torch {torch_version})")
    here = ".".join(map(str, sys.version_info[:3]))
    if here != python_version:
        found.append(f"Python {here} (the file was written with Python {python_version})")
    if found:
        warnings.warn(
            "this program file runs under "
            + " and ".join(found)
            + "; its kernels and code may not run here",
            stacklevel=3,
        )
    return found
