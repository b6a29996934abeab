"""The model's module tree as data the program file rebuilds it from (`load(state_dict=...)`, the script).

Dynamo's guards and code read more of a module than its parameters: slots
registered as None (`Linear(bias=False)`'s `_parameters['bias'] is None`), the
same parameter or submodule at two paths (tied embeddings), plain attributes
that are objects (a config, an enum member, a function, a small helper
object), and modules held as plain attributes, outside `_modules` (torchrl's
losses hold their networks so, their parameters in a `TensorDictParams`).
`module_layout` records each module once, in the order its parent holds it
(registered children first, then those held as attributes), with those: a
tensor slot as its layout, `(name, None)` or `(name, "tied", path)`; a
module seen before as `SAME_MODULE` of its first path; an attribute as the
Python source that builds it again (`attribute_source`), a tensor in it
that the tree holds by its path, left out where it has none (a guard that
reads it then fails, naming it).
"""

from __future__ import annotations

import collections
import functools
import types
from dataclasses import dataclass, field, replace

import torch

from ...._torch.dynamo import COMPILE_MARKS
from ...._torch.program.runtime_module import NO_MODULE, SAME_MODULE
from ...._torch.tensors import is_tensor_subclass, subclass_parts
from ...emit.values import constant_source, import_path
from .data import Slot, SubmoduleLayout, TensorSpec

#: what every torch.nn.Module holds in its `__dict__` (hooks, registries): `Module.__init__` makes them;
#: `training` is the module's own setting; and what torch.compile marks the module with
_MODULE_INTERNALS = frozenset(vars(torch.nn.Module())) - {"training"} | COMPILE_MARKS
#: how deep and how many values an attribute's source may nest (a config of configs, a TensorDict of
#: TensorDicts as deep as the module tree it mirrors; not a data set)
_DEPTH, _ITEMS = 16, 2000
#: the most elements a buffer's values are written for
_VALUES = 4096


def tensor_spec(name: str, t: torch.Tensor, by_value: bool = False) -> TensorSpec:
    """A tensor's layout; with `by_value`, a small one of integers or booleans with its values."""
    spec = TensorSpec(
        name,
        tuple(t.shape),
        tuple(t.stride()),
        str(t.dtype),
        str(t.device),
        bool(t.requires_grad),
    )
    if is_tensor_subclass(t):
        return _subclass_spec(spec, t)
    if by_value and not (t.is_floating_point() or t.is_complex()):
        return with_values(spec, t)
    return spec


def _subclass_spec(spec: TensorSpec, t: torch.Tensor) -> TensorSpec:
    """A subclass's spec: its class, inner tensors (each a spec, a subclass again as one) and the
    source of its metadata, where the metadata has one (else the script says it cannot make it)."""
    inner, metadata = subclass_parts(t)
    class_path = import_path(type(t))
    return replace(
        spec,
        subclass=class_path or type(t).__qualname__,  # no import path: named for the message
        inner=tuple(tensor_spec(name, value) for name, value in inner.items()),
        metadata=attribute_source(metadata) if class_path else None,
    )


def with_values(spec: TensorSpec, t: torch.Tensor) -> TensorSpec:
    """The spec with the tensor's values, flat, where it is small and dense."""
    if t.numel() > _VALUES or t.layout != torch.strided or t.is_quantized:
        return spec
    return replace(spec, values=tuple(t.detach().cpu().reshape(-1).tolist()))


@dataclass
class Written:
    """What the layout has written so far, which a later attribute refers to rather than copies:
    objects made by `new_object`, numbered (`shared_object(n)`), and the tree's tensors by path;
    and the containers the tree's attributes hold at more than one place (`shared_value`)."""

    objects: dict[int, int] = field(default_factory=dict)
    tensors: dict[int, str] = field(default_factory=dict)
    repeated: frozenset[int] = frozenset()


def module_layout(model: torch.nn.Module) -> tuple[SubmoduleLayout, ...]:
    """Every module of the tree once (a shared one as `SAME_MODULE` of its first path), each
    slot of a module that holds None (`NO_MODULE`), and each module held as a plain attribute
    (`attribute`), so that the rebuilt tree has as many, at the same places."""
    layouts: list[SubmoduleLayout] = []
    modules: dict[int, str] = {}
    written = Written(repeated=_repeated_containers(model))

    def visit(path: str, module: torch.nn.Module, attribute: bool = False) -> None:
        if id(module) in modules:
            layouts.append(
                SubmoduleLayout(path, f"{SAME_MODULE} {modules[id(module)]}", (), (), (), attribute)
            )
            return
        modules[id(module)] = path
        slots = (
            _slots(path, module._parameters, written.tensors),
            _slots(path, module._buffers, written.tensors, module._non_persistent_buffers_set),
        )
        settings = tuple(
            (k, text)
            for k, v in vars(module).items()
            if k not in _MODULE_INTERNALS and (text := _attribute(v, written)) is not None
        )
        layouts.append(SubmoduleLayout(path, _class_path(module), *slots, settings, attribute))
        for name, child in module._modules.items():  # in order: a ModuleList iterates them so
            if child is None:  # a None slot counts in len(_modules), which Dynamo guards
                layouts.append(SubmoduleLayout(_join(path, name), NO_MODULE, (), (), ()))
            else:
                visit(_join(path, name), child)
        for name, value in vars(module).items():  # after: their tensors are often the tree's
            if isinstance(value, torch.nn.Module) and name not in _MODULE_INTERNALS:
                visit(_join(path, name), value, attribute=True)

    visit("", model)
    return tuple(layouts)


#: the containers that are the same object wherever they are held, not equal copies
_MUTABLE = (list, dict, collections.OrderedDict, set, collections.deque)
#: what the count of shared containers does not look inside: what the layout holds by path or
#: writes by name (a module attribute such as `self.np = numpy`, a class, a function)
_NOT_ENTERED = (
    torch.Tensor,
    torch.nn.Module,
    type,
    types.ModuleType,
    types.FunctionType,
    types.BuiltinFunctionType,
    types.MethodType,
)


def _repeated_containers(model: torch.nn.Module) -> frozenset[int]:
    """The ids of the lists, dicts, sets and deques that the tree's attributes hold at two or more
    places (inside each other, or in objects' `__dict__`s), which the file must make once."""
    counts: collections.Counter[int] = collections.Counter()
    seen: set[int] = set()

    def count(value: object, depth: int) -> None:
        if depth > _DEPTH or isinstance(value, _NOT_ENTERED):
            return
        if type(value) in _MUTABLE:
            counts[id(value)] += 1
        if id(value) in seen:
            return
        seen.add(id(value))
        try:
            if type(value) in (*_MUTABLE, tuple, frozenset):
                items = list(value.values()) if isinstance(value, dict) else list(value)  # type: ignore[attr-defined]
            else:
                items = list(getattr(value, "__dict__", {}).values())
        except Exception:  # an object that will not show its attributes: nothing of it is written
            return
        for item in items[:_ITEMS]:
            count(item, depth + 1)

    for module in model.modules():
        for name, value in vars(module).items():
            if name not in _MODULE_INTERNALS:
                count(value, 0)
    return frozenset(i for i, n in counts.items() if n > 1)


def _class_path(module: torch.nn.Module) -> str | None:
    """The import path of the module's class; for an FX GraphModule, of the class FX made its own
    class from (`GraphModule.__new__` gives each instance a class of its own, which does not
    import, and makes one again when the rebuilt module is made: guards read its bases)."""
    cls = type(module)
    if isinstance(module, torch.fx.GraphModule) and cls.__qualname__.endswith("GraphModuleImpl"):
        cls = cls.__mro__[1]
    return import_path(cls)


def _attribute(value: object, written: Written) -> str | None:
    """One attribute's source; where it has none, the objects it numbered on the way are forgotten
    (their source is not in the file)."""
    before = dict(written.objects)
    text = attribute_source(value, written)
    if text is None:
        written.objects.clear()
        written.objects.update(before)
    return text


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _slots(
    path: str,
    slots: dict[str, torch.Tensor | None],
    seen: dict[int, str],
    by_value: set[str] | None = None,
) -> tuple[TensorSpec | Slot, ...]:
    """The tensors of one registry, each once; a None slot and a tie as a `Slot`. `by_value`: a
    buffer registry's non-persistent names; its small buffers of those, or of integers or booleans,
    carry their values."""
    specs = []
    for name, value in slots.items():
        full = _join(path, name)
        if value is None:
            specs.append(Slot(name, None))
        elif id(value) in seen:
            specs.append(Slot(name, seen[id(value)]))
        else:
            seen[id(value)] = full
            spec = tensor_spec(name, value, by_value=by_value is not None)
            if by_value is not None and name in by_value:
                spec = with_values(spec, value)
            specs.append(spec)
    return tuple(specs)


def attribute_source(value: object, written: Written | None = None, depth: int = 0) -> str | None:
    """Python source that builds a module's plain attribute again in the program file, or None.

    Literals, enum members, dtypes and devices as constants; functions and
    classes imported by name; lists, tuples, dicts, sets, deques and partials of those;
    a tensor the module tree holds as `tree_tensor(path)` (the same tensor, as
    `TensorDictParams` holds its parameters twice); any other object of a class
    that imports by name, rebuilt as pickle would (`new_object`: its `__dict__`,
    or its `__getstate__` given to its `__setstate__`; no `__init__` runs), once:
    an object met again is that same object (`shared_object`; einops' layers
    share their cached recipes, and Dynamo guards `a is b`). `written` holds what
    was written before. Modules are not attributes here (the layout holds them),
    nor are tensors outside the tree, nor is what has no source.
    """
    written = Written() if written is None else written
    if depth > _DEPTH:
        return None
    text = constant_source(value)
    if text is not None:
        return text
    if isinstance(value, torch.Tensor):
        path = written.tensors.get(id(value))
        return _by_value(value) if path is None else f"tree_tensor({path!r})"
    if isinstance(value, torch.nn.Module):
        return None
    path = import_path(value)
    if path is not None:
        return f"import_object({path!r})"
    return _container(value, written, depth)


def _by_value(t: torch.Tensor) -> str | None:
    """A small tensor outside the tree (the bounds of a `torch.distributions.Uniform` that kornia's
    augmentations sample from) with its values and layout, or None: a large one, a subclass, one
    whose elements share memory (an expanded tensor), one without data (`meta`), or a float one
    that is not finite."""
    if (
        is_tensor_subclass(t)
        or t.is_meta
        or t.numel() > _VALUES
        or t.layout != torch.strided
        or t.is_quantized
        or any(stride == 0 and size > 1 for size, stride in zip(t.shape, t.stride()))
        or ((t.is_floating_point() or t.is_complex()) and not bool(torch.isfinite(t).all()))
    ):
        return None
    values = t.detach().cpu().reshape(-1).tolist()
    layout = ["", list(t.shape), list(t.stride()), str(t.dtype), str(t.device), t.requires_grad]
    return f"random_tensor({[*layout, values]!r})"  # random_tensor makes it with these values


def _container(value: object, written: Written, depth: int) -> str | None:
    """A container's source (its items each with one), or an object's (`_object`); one held at two
    places is made once (`shared_value`) and named where it is met again (`shared_object`)."""
    if id(value) not in written.repeated or type(value) not in _MUTABLE:
        return _unshared(value, written, depth)
    if id(value) in written.objects:
        return f"shared_object({written.objects[id(value)]})"
    number = written.objects[id(value)] = len(written.objects)
    text = _unshared(value, written, depth)
    if text is None or f"shared_object({number})" in text:  # a container inside itself: no source
        return None
    return f"shared_value({number}, {text})"


def _unshared(value: object, written: Written, depth: int) -> str | None:
    if type(value) in (list, tuple):
        return _sequence(value, written, depth)  # type: ignore[arg-type]
    if type(value) in (set, frozenset):
        return _set(value)  # type: ignore[arg-type]
    if type(value) is collections.deque:
        items = _sequence(list(value), written, depth)
        return None if items is None else f"collections.deque({items}, {value.maxlen!r})"
    if type(value) is functools.partial:
        return _partial(value, written, depth)
    if type(value) in (dict, collections.OrderedDict):
        items = _items(value, written, depth)  # type: ignore[arg-type]
        if items is None:
            return None
        return items if type(value) is dict else f"collections.OrderedDict({items})"
    return _object(value, written, depth)


def _sequence(value: list[object] | tuple[object, ...], written: Written, depth: int) -> str | None:
    if len(value) > _ITEMS:
        return None
    parts = [attribute_source(v, written, depth + 1) for v in value]
    if None in parts:
        return None
    if type(value) is list:
        return "[" + ", ".join(parts) + "]"  # type: ignore[arg-type]
    return "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"  # type: ignore[arg-type]


def _set(value: set[object] | frozenset[object]) -> str | None:
    """A set of constants, in the order of their source (a set's own order differs per process)."""
    parts = sorted(constant_source(v) or "" for v in value)
    if "" in parts or len(parts) > _ITEMS:
        return None
    text = "{" + ", ".join(parts) + "}" if parts else "set()"
    return text if type(value) is set else f"frozenset({text})"


def _partial(value: functools.partial[object], written: Written, depth: int) -> str | None:
    """`functools.partial(function, *args, **keywords)` where each part has a source."""
    parts = [attribute_source(v, written, depth + 1) for v in (value.func, *value.args)]
    keywords = _items(value.keywords, written, depth)
    if None in parts or keywords is None:
        return None
    return f"functools.partial({', '.join(parts)}, **{keywords})"  # type: ignore[arg-type]


def _items(value: dict[object, object], written: Written, depth: int) -> str | None:
    """A dict's items as a dict display (keys that are literals), or None."""
    if len(value) > _ITEMS:
        return None
    parts = []
    for key, item in value.items():
        key_text = constant_source(key)
        item_text = attribute_source(item, written, depth + 1)
        if key_text is None or item_text is None:
            return None
        parts.append(f"{key_text}: {item_text}")
    return "{" + ", ".join(parts) + "}"


def _object(value: object, written: Written, depth: int) -> str | None:
    """`new_object('module:Class', {state}, {items}, shared=n[, setstate=True])` for an instance
    pickle would rebuild from its class and a state dict (and a dict subclass's items), or None."""
    if id(value) in written.objects:
        return f"shared_object({written.objects[id(value)]})"
    cls = type(value)
    class_path = import_path(cls)
    state = _pickled_state(value) if class_path is not None else None
    if state is None:
        return None
    attributes = _items(state, written, depth)
    items = _items(dict(value), written, depth) if isinstance(value, dict) else "None"
    if attributes is None or items is None:
        return None
    number = written.objects[id(value)] = len(written.objects)
    setstate = ", setstate=True" if hasattr(cls, "__setstate__") else ""
    return f"new_object({class_path!r}, {attributes}, {items}, shared={number}{setstate})"


def _pickled_state(value: object) -> dict[str, object] | None:
    """The state pickle would rebuild the object from, where that is a dict given to the class's
    `__new__` and then its `__setstate__` (or its `__dict__`): no slots, and no reduce of its
    own (a dict subclass's reduce is the dict's); else None."""
    cls = type(value)
    if getattr(cls, "__slots__", ()):
        return None
    base = next((b for b in (collections.OrderedDict, dict) if issubclass(cls, b)), object)
    if any(
        getattr(cls, name, None) is not getattr(base, name, None)
        for name in ("__reduce_ex__", "__reduce__")
    ):
        return None
    own_getstate = getattr(cls, "__getstate__", None) is not getattr(base, "__getstate__", None)
    if not own_getstate and hasattr(cls, "__setstate__"):
        return None  # a setstate that expects what it alone knows
    try:
        state = value.__getstate__() if own_getstate else getattr(value, "__dict__", None)  # type: ignore[attr-defined]
    except Exception:  # an object that refuses to be pickled (its getstate raises) has no source
        return None
    return state if isinstance(state, dict) and all(type(k) is str for k in state) else None
