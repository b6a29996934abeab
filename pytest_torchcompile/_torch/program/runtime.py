"""The runtime of the program file: the helpers every generated file carries, as Python source.

Its source from the marker below on is copied verbatim into each program
file, which must run with torch alone (no torch.compile, no Dynamo, no
pytest-torchcompile). The plugin shares two parts of it, so that it and
every file do them one way: the guard prelude section is its own guard
checker's (`formats.PRELUDE` reads it as text), and `frame_locals` binds a
frame's locals for its guard checker and the program's facts (imported). It
lives in the torch adapter because it reaches into torch where the public
API has no equivalent, each place with a comment saying why: the guard
prelude's dispatch keys, Dynamo's view-replay switch around a training
graph, and stand-ins for the `torch._dynamo.utils` helpers that Dynamo's
transformed code calls.
"""

from __future__ import annotations

# ---- runtime (copied into every program file from here on) ----
import builtins
import collections
import contextlib
import functools  # noqa: F401 - a module's attribute may be a functools.partial (MODULE_LAYOUT)
import hashlib  # noqa: F401 - the file's `load` (template_load.py) checks bytecode with it
import importlib
import inspect
import json
import linecache
import math
import sys
import types
import warnings
from typing import Any  # noqa: F401 - the file's `load` is annotated with it

import torch
import torch.utils._device  # DEFAULT_DEVICE guards read it; a plain `import torch` does not load it

inf, nan = math.inf, math.nan
device = torch.device
utils_device = torch.utils._device

#: the errors a guard that reads a value that is gone raises (the guard then fails, as in Dynamo).
ACCESS_ERRORS = (AttributeError, KeyError, IndexError, TypeError)


class GuardFailure(Exception):
    """No compile of a frame accepts these inputs; torch.compile would compile again, the file cannot.

    `frame` names the frame, `failed` holds (compile, the first guard that failed) per compile tried.
    """

    def __init__(self, frame: str, failed: list[tuple[str, str]]) -> None:
        self.frame, self.failed = frame, failed
        lines = [f"  {label}: {guard}" for label, guard in failed]
        super().__init__(
            f"no compile of frame {frame!r} accepts these inputs; the guard that failed, per compile:\n"
            + "\n".join(lines)
        )


class _Skipped:
    """An id the file could not find again: the guard comparing it is skipped (see `Program.skipped`)."""

    def __eq__(self, other: object) -> bool:
        return True

    __hash__ = object.__hash__

    def __repr__(self) -> str:
        return "<skipped>"


SKIPPED = _Skipped()


def first_failing(*checks):
    """The source line of the first check that is false or cannot read its value; None when all hold.

    A check that raised fails too (Dynamo fails a guard whose value is gone), and the line then says
    what it raised: a guard whose call broke is told apart from one that found other inputs.
    """
    for check in checks:
        try:
            if check():
                continue
            raised = ""
        except ACCESS_ERRORS as exc:
            raised = f"  (raised {type(exc).__name__}: {exc})"
        code = check.__code__
        line = linecache.getline(code.co_filename, code.co_firstlineno).strip()
        line = line.removeprefix("lambda: ").rstrip(",") or code.co_name
        if line.startswith("global_state_matches(") and _GLOBAL_STATE_DIFFERS and not raised:
            return "GLOBAL_STATE differs: " + "; ".join(_GLOBAL_STATE_DIFFERS)
        return line + raised
    return None


class FrameGlobals(dict):
    """A compiled frame's globals: what Dynamo installed (given by the file), then the module's own.

    A frame of another module (a library's function called from compiled code) has its own,
    which reads what the file installed through `shared` (the entry's) first.
    """

    def __init__(self, installed: dict, module_globals: dict, shared: dict | None = None) -> None:
        super().__init__(installed)
        self["__builtins__"] = builtins.__dict__
        self.module_globals, self.shared = module_globals, shared

    def __missing__(self, name: str):
        if self.shared is not None and name in self.shared:
            return self.shared[name]
        return self.module_globals[name]


def original_function(function):
    """A copy of the function as it is now (code, defaults, closure): its frame binds locals by it
    and runs its compiled code with its defaults and cells while the function itself is routed."""
    copy = types.FunctionType(
        function.__code__,
        function.__globals__,
        function.__name__,
        function.__defaults__,
        function.__closure__,
    )
    copy.__kwdefaults__, copy.__qualname__ = function.__kwdefaults__, function.__qualname__
    return copy


class Route:
    """A function called from compiled code that Dynamo compiled as a frame of its own.

    Dynamo's frame hook runs that frame's compiles whenever the function is
    called while the compiled model runs. While the file's model runs (a
    `with` around each call), the function's code is a trampoline to the
    file's frame (the same free variables, so that it fits the function's
    closure; the frame as a keyword-only default), and its own again after.
    """

    def __init__(self, function, frame) -> None:
        self.function, self.frame = function, frame
        self.own = (function.__code__, function.__defaults__, function.__kwdefaults__)
        self.code = _trampoline(function.__code__)

    def __enter__(self) -> None:
        f = self.function
        f.__code__, f.__defaults__, f.__kwdefaults__ = (
            self.code,
            None,
            {"_program_frame": self.frame},
        )
        ROUTED.append(self)

    def __exit__(self, *exc) -> None:
        f = self.function
        f.__code__, f.__defaults__, f.__kwdefaults__ = self.own
        ROUTED.remove(self)


#: the routes in place now (while the file's model runs)
ROUTED: list = []


@contextlib.contextmanager
def unrouted():
    """Every routed function its own again for a moment (a guard reads `fn.__code__`)."""
    active = list(ROUTED)
    for route in reversed(active):
        route.__exit__()
    try:
        yield
    finally:
        for route in active:
            route.__enter__()


def _trampoline(code):
    """Code that calls `_program_frame` with every argument, free variables as `code`'s."""
    free = code.co_freevars
    lines = ["def outer():", *(f"    {name} = None" for name in free)]
    lines.append("    def trampoline(*args, _program_frame, **kwargs):")
    if free:
        lines.append(f"        ({', '.join(free)},)")
    lines += ["        return _program_frame(*args, **kwargs)", "    return trampoline"]
    scope: dict = {}
    exec("\n".join(lines), scope)
    made = scope["outer"]().__code__
    if made.co_freevars != free:
        raise RuntimeError(f"cannot route {code.co_qualname}: its free variables {free} do not fit")
    return made.replace(co_name=code.co_name, co_qualname=code.co_qualname)


class Frame:
    """One Python frame Dynamo compiled: calling it runs the newest compile whose guards pass."""

    def __init__(self, name: str, signature, compiles: list, fallback=None) -> None:
        self.name, self.signature, self.compiles, self.fallback = (
            name,
            signature,
            compiles,
            fallback,
        )

    def __call__(self, *args, **kwargs):
        bound = frame_locals(self.signature, args, kwargs)
        failed = []
        for compile_ in self.compiles:  # newest first, as Dynamo's cache tries them
            with unrouted():  # guards see each routed function's own code, as Dynamo's do
                guard = compile_.guards(bound, compile_.globals, compile_.ids)
            if guard is None:
                RAN.append(compile_.label)
                return compile_.code(*args, **kwargs)
            failed.append((compile_.label, guard))
        if self.fallback is not None:
            RAN.append(f"{self.name} (no compile was captured for it: its own code ran, as Python)")
            return self.fallback(*args, **kwargs)
        raise GuardFailure(self.name, failed)


class Compile:
    """One compile of a frame: its guards, the ids they compare, and its transformed code."""

    def __init__(self, label: str, guards, ids: dict, code, globals_: dict) -> None:
        self.label, self.guards, self.ids, self.code, self.globals = (
            label,
            guards,
            ids,
            code,
            globals_,
        )


#: the compiles that ran during the last call, in order (`Program.ran`).
RAN: list[str] = []


def frame_locals(function, args, kwargs) -> dict:
    """L as Dynamo sees it: the bound arguments with defaults, then the closure's cells."""
    bound = inspect.signature(function, follow_wrapped=False).bind(
        *args, **kwargs
    )  # the frame's own parameters, not a wrapped function's
    bound.apply_defaults()
    scope = dict(bound.arguments)
    for name, cell in zip(function.__code__.co_freevars, function.__closure__ or ()):
        scope[name] = cell.cell_contents
    return scope


def module_call(fn):
    """The frame Dynamo compiles for a module whose forward it skips (torch.nn's own layers): a call
    of the module (`torch._dynamo.external_utils.wrap_inline`, the same code), `fn` the module."""

    def inner(*args, **kwargs):
        return fn(*args, **kwargs)

    return inner


def rebind(template, globals_: dict, original=None):
    """The template function's code, run in `globals_`, with the original's defaults and closure cells."""
    defaults = original.__defaults__ if original is not None else None
    cells = (
        dict(zip(original.__code__.co_freevars, original.__closure__ or ()))
        if original is not None
        else {}
    )
    missing = [n for n in template.__code__.co_freevars if n not in cells]
    if missing:
        raise RuntimeError(
            f"{template.__name__}: no closure cell for {', '.join(missing)} in the function given"
        )
    closure = tuple(cells[n] for n in template.__code__.co_freevars) or None
    function = types.FunctionType(template.__code__, globals_, template.__name__, defaults, closure)
    function.__kwdefaults__ = original.__kwdefaults__ if original is not None else None
    return function


#: the folders the modules the case was defined in were imported from, by top-level name, where a
#: fresh interpreter might not find them (a test module, a project's own package): the file sets it
IMPORT_ROOTS: dict = {}


def import_object(path: str):
    """`module:qualname` -> the object (`module:` is the module itself); a module that does not
    import is looked for again in the folder it was imported from when the file was written."""
    module, _, qualname = path.partition(":")
    try:
        found = importlib.import_module(module)
    except ModuleNotFoundError as exc:
        root = IMPORT_ROOTS.get(module.partition(".")[0])
        if root is None or root in sys.path or not module.startswith(exc.name or "\0"):
            raise
        sys.path.append(root)  # after what is installed: an installed module of that name wins
        found = importlib.import_module(module)
    for part in filter(None, qualname.split(".")):
        found = getattr(found, part)
    return found


def bind_ids(finders: list, L: dict, G: dict, skip_self: bool, skipped: list) -> dict:
    """The ids the guards compare, found again in this process by name or by their source."""
    ids = {}
    for source, how, target in finders:
        if how == "skip" or (skip_self and source.removeprefix("type(").startswith("L['self']")):
            ids[source] = SKIPPED
            skipped.append(
                f"id of {source}: {target if how == 'skip' else 'the module was rebuilt from a state_dict'}"
            )
        elif how == "import":
            ids[source] = id(import_object(target))
        else:
            try:
                ids[source] = id(
                    eval(source, {"L": L, "G": G, "___dict_contains": ___dict_contains})
                )
            except ACCESS_ERRORS:
                ids[source] = (
                    None  # the object is gone here: the guard fails, as it would in Dynamo
                )
    return ids


# --- the guard prelude: what Dynamo's guard code calls ----------------------

#: c10::ScalarType numbers of the dtypes that can be the default dtype.
_DEFAULT_DTYPES = {
    torch.float16: 5,
    torch.float32: 6,
    torch.float64: 7,
    torch.bfloat16: 15,
}


#: the switches of the last GLOBAL_STATE check that failed, for its guard's line (`first_failing`)
_GLOBAL_STATE_DIFFERS: list[str] = []


def global_state_matches(recorded: str) -> bool:
    """GLOBAL_STATE: the process-wide settings the graph was traced under (those a test changes)."""
    _GLOBAL_STATE_DIFFERS[:] = global_state_differences(json.loads(recorded))
    return not _GLOBAL_STATE_DIFFERS


def global_state_differences(state: dict) -> list[str]:
    """Each recorded switch that differs here, as `name: recorded X, here Y`."""
    autocast = state.get("autocast_state", {})
    now = {
        "grad_mode": torch.is_grad_enabled(),
        # torch_function state has no public getter
        "torch_function": torch._C._is_torch_function_enabled(),
        "torch_function_all_disabled": torch._C._is_torch_function_all_disabled(),
        "deterministic_algorithms": torch.are_deterministic_algorithms_enabled(),
        "deterministic_algorithms_warn_only": torch.is_deterministic_algorithms_warn_only_enabled(),
        "default_dtype": _DEFAULT_DTYPES.get(torch.get_default_dtype()),
        "num_threads": torch.get_num_threads(),
        "allow_tf32": torch.backends.cuda.matmul.allow_tf32,
    }
    autocast_on = any(torch.is_autocast_enabled(d) for d in ("cpu", "cuda", "xpu", "mps", "hpu"))
    now["autocast"], state = autocast_on, {**state, "autocast": any(autocast.get("enabled", []))}
    return [
        f"{name}: recorded {_switch(name, state[name])}, here {_switch(name, value)}"
        for name, value in now.items()
        if name in state and state[name] != value
    ]


def _switch(name: str, value):
    if name == "default_dtype":
        return next((str(d) for d, n in _DEFAULT_DTYPES.items() if n == value), value)
    return json.dumps(value)


def recorded_global_state(frames: list):
    """The settings the first compile was traced under, read from its GLOBAL_STATE guard."""
    for frame in frames:
        for compiled in frame["compiles"]:
            for text in _strings(compiled[1].__code__):
                if text.startswith("{") and '"grad_mode"' in text:
                    return json.loads(text)
    return None


def _strings(code):
    for const in code.co_consts:
        if isinstance(const, str):
            yield const
        elif hasattr(const, "co_consts"):
            yield from _strings(const)


def apply_global_state(state: dict) -> None:
    """Set the recorded grad mode, deterministic algorithms and default dtype in this process."""
    torch.set_grad_enabled(bool(state.get("grad_mode", torch.is_grad_enabled())))
    if "deterministic_algorithms" in state:
        torch.use_deterministic_algorithms(
            bool(state["deterministic_algorithms"]),
            warn_only=bool(state.get("deterministic_algorithms_warn_only", False)),
        )
    dtype = next((d for d, n in _DEFAULT_DTYPES.items() if n == state.get("default_dtype")), None)
    if dtype is not None:
        torch.set_default_dtype(dtype)


def as_torch_compile_leaves_the_process() -> None:
    """What torch.compile sets for the whole process the first time it runs, and Dynamo's guards and code
    were made under: Dynamo's patcher (`TorchPatcher.patch`, on 2.11 to 2.15) switches
    torch.distributions' argument validation off, so a compiled `Normal(...)` guards on
    `Distribution._validate_args == False`. The file, never running torch.compile, does the same."""
    torch.distributions.Distribution.set_default_validate_args(False)


def fill_einops_registry(tensors: list) -> None:
    """einops fills its backend registry (`_type2backend`) on first use, and Dynamo guards the
    registry's first key: where the model uses einops, fill it as the compiling process had it
    (torch's backend first), so that the guards see the same registry, not an empty one."""
    backends = sys.modules.get("einops._backends")
    tensor = next((t for t in tensors if isinstance(t, torch.Tensor)), None)
    if backends is not None and tensor is not None and not backends._type2backend:
        backends.get_backend(tensor)


def dispatch_keys(t: torch.Tensor) -> str:
    """The tensor's dispatch keys as Dynamo's TENSOR_MATCH sees them (no public API reads them)."""
    keys = torch._C._dispatch_keys(t) | torch._C._dispatch_tls_local_include_set()
    return repr(keys - torch._C._dispatch_tls_local_exclude_set())


def saved_tensors_hooks_ids():
    """ids of the innermost saved-tensors hooks when AOTAutograd inlines them, else None (AOT's own check)."""
    utils = torch._functorch._aot_autograd.utils
    hooks = utils.top_saved_tensors_hooks()
    return tuple(map(id, hooks)) if utils.saved_tensors_hooks_are_inlineable(hooks) else None


def check_no_aliasing(*tensors) -> bool:
    return len({id(t) for t in tensors}) == len(tensors)


def ___dict_contains(key, d) -> bool:
    return dict.__contains__(d, key)


def ___set_contains(s, item) -> bool:
    """SET_CONTAINS: Dynamo checks with C's `PySet_Contains`, which takes a set or a frozenset; the
    `set.__contains__` its guard code prints refuses a frozenset (einops' `keyword.iskeyword.__self__`)."""
    return (frozenset.__contains__ if isinstance(s, frozenset) else set.__contains__)(s, item)


def ___dict_key(d, held):
    """The key of `d` that is `held`: a key of a process-wide registry by what it holds, where
    Dynamo's guard reads it by position (which says what the process did before)."""
    for key in d:
        if key is held:
            return key
    raise KeyError(held)


def ___dict_key_with_id(d, key_id):
    """The key of `d` whose id is `key_id` (the object an identity guard compares, found again)."""
    for key in d:
        if key_id == id(key):
            return key
    raise KeyError(key_id)


def ___dict_key_equal(d, value):
    """The key of `d` equal to `value` (a constant key: a registry's class name)."""
    for key in d:
        if key == value:
            return key
    raise KeyError(value)


def ___odict_getitem(d, key):
    return collections.OrderedDict.__getitem__(d, key)


def ___namedtuple_fields(x):
    return x._fields


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
    def numpy_to_tensor(value):
        """numpy arrays given to a graph as the tensors it takes."""
        import numpy

        if isinstance(value, numpy.ndarray):
            return torch.as_tensor(value)
        if isinstance(value, (tuple, list)):
            return type(value)(DynamoUtils.numpy_to_tensor(v) for v in value)
        return value


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


#: the objects `new_object` made, by the number the file gave them (an object at two places is one)
SHARED_OBJECTS: dict = {}


def shared_object(number: int):
    """The object `new_object` made with `shared=number`, earlier in the module's layout."""
    return SHARED_OBJECTS[number]


def new_object(class_path: str, attributes: dict, items: dict | None = None, shared=None):
    """An object rebuilt as pickle rebuilds it: its class's `__new__`, its items (a dict subclass,
    set as the dict sets them) and its `__dict__`; no `__init__` runs."""
    cls = import_object(class_path)
    value = cls.__new__(cls)
    if shared is not None:
        SHARED_OBJECTS[shared] = value
    for key, item in (items or {}).items():
        (
            collections.OrderedDict if isinstance(value, collections.OrderedDict) else dict
        ).__setitem__(value, key, item)
    value.__dict__.update(attributes)
    return value


def rebuild_module(layout: list, state_dict: dict):
    """The module tree of `layout` with the tensors of `state_dict` bound by name: each module of
    its own class (a `Skeleton` where the class does not import), made as pickle makes it (no
    `__init__` of its own runs), its recorded settings set; a tied tensor or a shared module bound
    once, at every path it had."""
    nodes, tensors = {}, {}
    SHARED_OBJECTS.clear()
    for path, class_path, params, buffers, settings in layout:
        parent, _, child = path.rpartition(".")
        shared = class_path is not None and class_path.startswith(SAME_MODULE)
        if class_path == NO_MODULE:
            node = None
        elif shared:
            node = nodes[class_path.removeprefix(SAME_MODULE).strip()]
        else:
            node = _new_module(class_path)
        if path:
            nodes[parent]._modules[child] = node
        if node is None or shared:
            continue
        nodes[path] = node
        for name, source in settings:
            node.__dict__[name] = eval(source)
        for registry, specs, make in (
            (node._parameters, params, True),
            (node._buffers, buffers, False),
        ):
            for spec in specs:
                registry[spec[0]] = _slot(state_dict, path, spec, make, tensors)
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
    if name not in state_dict and len(spec) > 6:  # a non-persistent buffer: its recorded values
        return random_tensor(spec)
    if name not in state_dict:
        raise KeyError(f"state_dict has no {name!r} (a {dtype} tensor of shape {list(shape)})")
    value = state_dict[name]
    if tuple(value.shape) != shape or str(value.dtype) != dtype:
        raise ValueError(
            f"state_dict[{name!r}] is {value.dtype} {list(value.shape)}; the compiled code needs {dtype} {list(shape)}"
        )
    return value.detach().clone()


def random_tensor(spec) -> torch.Tensor:
    """A tensor of the recorded layout, with seeded random values (or its recorded ones)."""
    name, shape, stride, dtype, device_name, requires_grad = spec[:6]
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
