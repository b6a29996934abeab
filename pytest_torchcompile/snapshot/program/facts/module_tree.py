"""The model's module tree as data the program file rebuilds it from (`load(state_dict=...)`, the script).

Dynamo's guards and code read more of a module than its parameters: slots
registered as None (`Linear(bias=False)`'s `_parameters['bias'] is None`), the
same parameter or submodule at two paths (tied embeddings), plain attributes
that are objects (a config, an enum member, a function, a small helper
object). `module_layout` records each module once, in the order its parent holds it,
with those: a tensor slot as its layout, `(name, None)` or `(name, "tied",
path)`; a module seen before as `SAME_MODULE` of its first path; an
attribute as the Python source that builds it again (`attribute_source`),
left out where it has none (a guard that reads it then fails, naming it).
"""

from __future__ import annotations

import collections
import functools
from dataclasses import replace

import torch

from ...._torch.dynamo import COMPILE_MARKS
from ...._torch.program.runtime_module import NO_MODULE, SAME_MODULE
from ...._torch.tensors import is_tensor_subclass, subclass_parts
from ...emit.values import constant_source, import_path
from .data import Slot, SubmoduleLayout, TensorSpec

#: what every torch.nn.Module holds in its `__dict__` (hooks, registries): `Module.__init__` makes them;
#: `training` is the module's own setting; and what torch.compile marks the module with
_MODULE_INTERNALS = frozenset(vars(torch.nn.Module())) - {"training"} | COMPILE_MARKS
#: how deep and how many values an attribute's source may nest (a config of configs, not a data set)
_DEPTH, _ITEMS = 8, 2000
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
        metadata=attribute_source(metadata, {}) if class_path else None,
    )


def with_values(spec: TensorSpec, t: torch.Tensor) -> TensorSpec:
    """The spec with the tensor's values, flat, where it is small and dense."""
    if t.numel() > _VALUES or t.layout != torch.strided or t.is_quantized:
        return spec
    return replace(spec, values=tuple(t.detach().cpu().reshape(-1).tolist()))


def module_layout(model: torch.nn.Module) -> tuple[SubmoduleLayout, ...]:
    """Every module of the tree once (a shared one as `SAME_MODULE` of its first path) and each
    slot of a module that holds None (`NO_MODULE`), so that the rebuilt tree has as many."""
    layouts: list[SubmoduleLayout] = []
    modules: dict[int, str] = {}
    tensors: dict[int, str] = {}
    shared: dict[int, int] = {}  # the objects written so far, numbered (`attribute_source`)

    def visit(path: str, module: torch.nn.Module) -> None:
        if id(module) in modules:
            layouts.append(
                SubmoduleLayout(path, f"{SAME_MODULE} {modules[id(module)]}", (), (), ())
            )
            return
        modules[id(module)] = path
        slots = (
            _slots(path, module._parameters, tensors),
            _slots(path, module._buffers, tensors, module._non_persistent_buffers_set),
        )
        settings = tuple(
            (k, text)
            for k, v in vars(module).items()
            if k not in _MODULE_INTERNALS and (text := _attribute(v, shared)) is not None
        )
        layouts.append(SubmoduleLayout(path, _class_path(module), *slots, settings))
        for name, child in module._modules.items():  # in order: a ModuleList iterates them so
            if child is None:  # a None slot counts in len(_modules), which Dynamo guards
                layouts.append(SubmoduleLayout(_join(path, name), NO_MODULE, (), (), ()))
            else:
                visit(_join(path, name), child)

    visit("", model)
    return tuple(layouts)


def _class_path(module: torch.nn.Module) -> str | None:
    """The import path of the module's class; for an FX GraphModule, of the class FX made its own
    class from (`GraphModule.__new__` gives each instance a class of its own, which does not
    import, and makes one again when the rebuilt module is made: guards read its bases)."""
    cls = type(module)
    if isinstance(module, torch.fx.GraphModule) and cls.__qualname__.endswith("GraphModuleImpl"):
        cls = cls.__mro__[1]
    return import_path(cls)


def _attribute(value: object, shared: dict[int, int]) -> str | None:
    """One attribute's source; where it has none, the objects it numbered on the way are forgotten
    (their source is not in the file)."""
    before = dict(shared)
    text = attribute_source(value, shared)
    if text is None:
        shared.clear()
        shared.update(before)
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


def attribute_source(value: object, shared: dict[int, int], depth: int = 0) -> str | None:
    """Python source that builds a module's plain attribute again in the program file, or None.

    Literals, enum members, dtypes and devices as constants; functions and
    classes imported by name; lists, tuples, dicts, sets and partials of those; any other
    object of a class that imports by name, rebuilt from its attributes as
    pickle would (`new_object`: no `__init__` runs), once: an object met
    again is that same object (`shared_object`; einops' layers share their
    cached recipes, and Dynamo guards `a is b`). `shared` numbers them. Tensors
    and modules are not attributes here (they are the tree's), nor is what
    has no source.
    """
    if depth > _DEPTH:
        return None
    text = constant_source(value)
    if text is not None:
        return text
    if isinstance(value, (torch.Tensor, torch.nn.Module)):
        return None
    path = import_path(value)
    if path is not None:
        return f"import_object({path!r})"
    if type(value) in (list, tuple):
        return _sequence(value, shared, depth)  # type: ignore[arg-type]
    if type(value) in (set, frozenset):
        return _set(value, shared, depth)  # type: ignore[arg-type]
    if type(value) is functools.partial:
        return _partial(value, shared, depth)
    if type(value) in (dict, collections.OrderedDict):
        items = _items(value, shared, depth)  # type: ignore[arg-type]
        if items is None:
            return None
        return items if type(value) is dict else f"collections.OrderedDict({items})"
    return _object(value, shared, depth)


def _sequence(
    value: list[object] | tuple[object, ...], shared: dict[int, int], depth: int
) -> str | None:
    if len(value) > _ITEMS:
        return None
    parts = [attribute_source(v, shared, depth + 1) for v in value]
    if None in parts:
        return None
    if type(value) is list:
        return "[" + ", ".join(parts) + "]"  # type: ignore[arg-type]
    return "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"  # type: ignore[arg-type]


def _set(value: set[object] | frozenset[object], shared: dict[int, int], depth: int) -> str | None:
    """A set of constants, in the order of their source (a set's own order differs per process)."""
    parts = sorted(constant_source(v) or "" for v in value)
    if "" in parts or len(parts) > _ITEMS:
        return None
    text = "{" + ", ".join(parts) + "}" if parts else "set()"
    return text if type(value) is set else f"frozenset({text})"


def _partial(value: functools.partial[object], shared: dict[int, int], depth: int) -> str | None:
    """`functools.partial(function, *args, **keywords)` where each part has a source."""
    parts = [attribute_source(v, shared, depth + 1) for v in (value.func, *value.args)]
    keywords = _items(value.keywords, shared, depth)
    if None in parts or keywords is None:
        return None
    return f"functools.partial({', '.join(parts)}, **{keywords})"  # type: ignore[arg-type]


def _items(value: dict[object, object], shared: dict[int, int], depth: int) -> str | None:
    """A dict's items as a dict display (keys that are literals), or None."""
    if len(value) > _ITEMS:
        return None
    parts = []
    for key, item in value.items():
        key_text = constant_source(key)
        item_text = attribute_source(item, shared, depth + 1)
        if key_text is None or item_text is None:
            return None
        parts.append(f"{key_text}: {item_text}")
    return "{" + ", ".join(parts) + "}"


def _object(value: object, shared: dict[int, int], depth: int) -> str | None:
    """`new_object('module:Class', {attributes}[, {items}])` for an instance pickle would rebuild
    from its class and `__dict__` (and a dict subclass's items), or None."""
    if id(value) in shared:
        return f"shared_object({shared[id(value)]})"
    cls = type(value)
    class_path = import_path(cls)
    state = getattr(value, "__dict__", None)
    if class_path is None or not isinstance(state, dict) or not _pickled_as_its_dict(cls):
        return None
    attributes = _items(state, shared, depth)
    items = _items(dict(value), shared, depth) if isinstance(value, dict) else "None"
    if attributes is None or items is None:
        return None
    shared[id(value)] = len(shared)
    return f"new_object({class_path!r}, {attributes}, {items}, shared={shared[id(value)]})"


def _pickled_as_its_dict(cls: type) -> bool:
    """Whether pickle would rebuild an instance as its class's `__new__` plus its `__dict__` (plus a
    dict's items): no slots, no reduce, state or setstate of its own (a dict subclass's reduce is
    the dict's)."""
    if getattr(cls, "__slots__", ()) or hasattr(cls, "__setstate__"):
        return False
    base = next((b for b in (collections.OrderedDict, dict) if issubclass(cls, b)), object)
    own = [
        getattr(cls, name, None) is not getattr(base, name, None)
        for name in ("__reduce_ex__", "__reduce__", "__getstate__")
    ]
    return not any(own)
