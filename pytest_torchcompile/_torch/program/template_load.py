"""The last part of every program file: `load`, the callable it returns, and the script entry point.

Like the runtime (`_torch/program/runtime*.py`), this is copied into each
file verbatim from the marker on; the names above the marker stand for the
tables and helpers the file defines before it, so this module stays valid
Python that linters and tests can read. It is never imported to run.
"""

# ruff: noqa: E402
from __future__ import annotations

import builtins
import contextlib
import importlib
import sys
import types
from collections.abc import Callable
from typing import Any

import torch

# the file's own tables and runtime helpers (placeholders here; see writer.py)
TORCH_VERSION = PYTHON_VERSION = BACKEND = ""
ENTRY: dict[str, Any] = {}
MODULE_LAYOUT: list[tuple[object, ...]] = []
INPUTS: tuple[list[tuple[object, ...]], list[tuple[object, ...]]] = ([], [])
KERNEL_SOURCES: dict[str, tuple[str, str]] = {}
KERNEL_CONSTANTS: dict[str, dict[str, object]] = {}
KERNEL_BUILD: dict[str, object] = {}
INSTALLED: list[tuple[str, str, object]] = []
CONSTANTS: dict[str, object] = {}
GRAPHS: dict[str, Callable[[dict[str, object]], object]] = {}
FRAMES: list[dict[str, Any]] = []
RAN: list[str] = []
STAND_INS: dict[str, object] = {}
Frame = Compile = FrameGlobals = load_output_code = load_fx_graph = check_versions = None  # type: ignore[assignment]
bind_ids = rebind = import_object = rebuild_module = random_tensor = module_call = None  # type: ignore[assignment]
Route = original_function = resume_factory = code_digest = None  # type: ignore[assignment]
recorded_global_state = apply_global_state = as_torch_compile_leaves_the_process = None  # type: ignore[assignment]
fill_einops_registry = None  # type: ignore[assignment]

# ---- load (copied into every program file from here on) ----
_KERNELS: dict[str, object] = {}


def load_kernels() -> dict[str, object]:
    """Every kernel of the file, loaded once per process: Inductor compiles the C++ of its output code here."""
    if not _KERNELS:
        # torch._inductor.config: the settings the kernels were compiled with at capture (ISA, math flags);
        # one compile thread: a pool of compile workers costs more to start than these few kernels take
        import torch._inductor.config as inductor_config

        with inductor_config.patch({**KERNEL_BUILD, "compile_threads": 1}):
            for key, (kind, source) in KERNEL_SOURCES.items():
                constants = (
                    globals().get("KERNEL_CONSTANTS", {}).get(key, {})
                )  # a file without any has no table
                if kind == "output code":
                    module = load_output_code(key, source)
                    for name, value in constants.items():  # as Inductor's loader sets them
                        setattr(module, name, value)
                    _KERNELS[key] = module.call
                else:
                    graph = load_fx_graph(key, source, constants)
                    _KERNELS[key] = (
                        graph
                        if kind == "fx graph"
                        else (lambda g: lambda *args: g(list(args)))(graph)
                    )
    return _KERNELS


class Program:
    """The compiled model as a callable: each call runs the guards, code and kernels above, as torch.compile did.

    `ran` lists the compiles the last call ran; `skipped` the guards this
    file does not check (with why); `versions` how this process differs
    from the one that wrote the file.
    """

    def __init__(
        self,
        entry: Frame,
        self_args: tuple[torch.nn.Module, ...],
        skipped: list[str],
        versions: list[str],
        routes: list[Route] = (),  # type: ignore[assignment]
    ) -> None:
        self.entry, self.self_args, self.skipped, self.versions = (
            entry,
            self_args,
            skipped,
            versions,
        )
        self.routes = list(routes)  # library functions Dynamo compiled as frames of their own
        self.ran: list[str] = []

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        RAN.clear()
        try:
            with contextlib.ExitStack() as routed:
                for route in self.routes:
                    routed.enter_context(route)
                return self.entry(*self.self_args, *args, **kwargs)
        finally:
            self.ran = list(RAN)


def _entry(
    module: Any, state_dict: dict[str, torch.Tensor] | None
) -> tuple[tuple[torch.nn.Module, ...], types.FunctionType, bool]:
    """(self argument, the compiled function, whether the module was rebuilt from a state_dict)."""
    if not ENTRY["method"]:
        function = module if callable(module) else _import_entry()
        _check_code(function)
        return (), function, False
    if module is not None and state_dict is not None:
        raise TypeError("load(module) or load(state_dict=...), not both")
    if ENTRY.get("wrapped"):  # Dynamo compiled its wrap of the module's call, not its forward
        rebuilt = module is None
        if rebuilt:
            if state_dict is None:
                raise TypeError(
                    f"load(module) or load(state_dict=...): this file runs a call of a {ENTRY['path']}"
                )
            module = rebuild_module(MODULE_LAYOUT, state_dict)
        _check_code(type(module).forward)
        return (), module_call(module), rebuilt
    if module is None:
        if state_dict is None:
            raise TypeError(
                f"load(module) or load(state_dict=...): this file runs {ENTRY['name']} of a {ENTRY['path']}"
            )
        function, module, rebuilt = (
            _import_entry().forward,
            rebuild_module(MODULE_LAYOUT, state_dict),
            True,
        )
    else:
        function, rebuilt = type(module).forward, False
    _check_code(function)
    return (module,), function, rebuilt


def _import_entry() -> types.FunctionType:
    if ENTRY["path"] is None:
        raise TypeError(f"{ENTRY['name']} cannot be imported by name; pass it to load()")
    return import_object(ENTRY["path"])


def _check_code(function: object) -> None:
    """The function given must be the one compiled: same code (its source may have moved)."""
    code = getattr(function, "__code__", None)
    if code is None or code_digest(code) != ENTRY["code"]:
        raise RuntimeError(
            f"{function!r} is not the {ENTRY['name']} this file was written from (its bytecode, "
            "constants or the names it reads differ: write the file again from this code)"
        )


def load(module: Any = None, *, state_dict: dict[str, torch.Tensor] | None = None) -> Program:
    """The compiled model, ready to call with the case's inputs, without torch.compile.

    `module`: the model (every guard checked); `state_dict`: parameters
    and buffers by name, the module rebuilt around them (guards on the
    module's identity skipped, see `Program.skipped`). For a function, no
    argument (the function is imported) or the function itself.
    """
    versions = check_versions(TORCH_VERSION, PYTHON_VERSION)
    as_torch_compile_leaves_the_process()
    self_args, function, rebuilt = _entry(module, state_dict)
    kernels = load_kernels()
    G = FrameGlobals(
        {}, function.__globals__
    )  # what Dynamo installed in the module, then the module's own
    for name, kind, target in INSTALLED:
        if kind == "module":
            G[name] = STAND_INS.get(target) or importlib.import_module(target)
        elif kind == "object":
            G[name] = import_object(target)
        elif kind == "builtins":
            G[name] = builtins.__dict__
        elif kind == "dict":  # the globals of code made at run time (a namedtuple's __new__)
            G[name] = {
                key: import_object(text) if how == "import" else eval(text)
                for key, how, text in target
            }
    G.update(CONSTANTS)
    G.update({name: factory(kernels) for name, factory in GRAPHS.items()})
    skipped: list[str] = []
    entry, routes, homes = None, [], {}
    for spec in FRAMES:
        home = _home(spec, G, homes)
        if "closures" in spec:
            routes += _closure_routes(spec, home, self_args, rebuilt, skipped)
            continue
        target = _routed(spec)
        frame = _frame(spec, home, target or function, self_args, rebuilt, skipped)
        made = resume_factory(frame, spec["freevars"]) if "freevars" in spec else frame
        G.update({name: made for name in spec["installed_as"]})
        entry = frame if spec["role"] == "entry" else entry
        if target is not None:
            routes.append(Route(import_object(spec["function"]), frame))
    return Program(entry, self_args, skipped, versions, routes)


def _home(spec: dict[str, Any], G: FrameGlobals, homes: dict[str, FrameGlobals]) -> FrameGlobals:
    """The globals a frame runs in: the entry's, or those of the library module it belongs to."""
    name = spec.get("module")
    if name is None:
        return G
    if name not in homes:
        homes[name] = FrameGlobals({}, vars(importlib.import_module(name)), shared=G)
    return homes[name]


def _routed(spec: dict[str, Any]) -> types.FunctionType | None:
    """A copy of the library function the frame is of (None for other frames), checked to be the
    code that was compiled: another version of the library is refused, not run."""
    if "function" not in spec:
        return None
    return original_function(_compiled_function(spec["function"], spec["code"]))


def _compiled_function(path: str, digest: str) -> types.FunctionType:
    function = import_object(path)
    if code_digest(function.__code__) != digest:
        raise RuntimeError(
            f"{path} is not the code Dynamo compiled when this file was written (another "
            "version of its library?): write the file again"
        )
    return function


def _closure_routes(
    spec: dict[str, Any],
    G: FrameGlobals,
    self_args: tuple[torch.nn.Module, ...],
    rebuilt: bool,
    skipped: list[str],
) -> list[Route]:
    """A decorator's wrappers that share the frame's code, each routed to a frame over its own cells;
    one state for all, as Dynamo's cache and its decision to stop compiling are the code's."""
    routes = []
    for path in spec["closures"]:
        function = _compiled_function(path, spec["code"])
        frame = _frame(spec, G, original_function(function), self_args, rebuilt, skipped)
        frame.state = routes[0].frame.state if routes else frame.state
        routes.append(Route(function, frame))
    return routes


def _frame(
    spec: dict[str, Any],
    G: FrameGlobals,
    function: types.FunctionType,
    self_args: tuple[torch.nn.Module, ...],
    rebuilt: bool,
    skipped: list[str],
) -> Frame:
    is_entry, routed = spec["role"] == "entry", "function" in spec or "closures" in spec
    cells = zip(function.__code__.co_freevars, function.__closure__ or ())
    L = (
        ({"self": self_args[0]} if self_args else {k: c.cell_contents for k, c in cells})
        if is_entry
        else {}
    )
    compiles = []
    for label, guards, ids, code, not_checked in spec["compiles"]:
        skipped.extend(f"{label}: {guard} (no Python form)" for guard in not_checked)
        found: list[str] = []
        bound = bind_ids(ids, L, G, rebuilt, found)
        skipped.extend(f"{label}: {why}" for why in found)
        own = function if is_entry or routed else _cells_later(spec, code)
        compiles.append(Compile(label, guards, bound, rebind(code, G, own), G))
    fallback = spec["fallback"]
    fallback = rebind(fallback, G, _cells_later(spec, fallback)) if fallback is not None else None
    signature = function if is_entry or routed else (compiles[0].code if compiles else fallback)
    return Frame(spec["name"], signature, compiles, fallback, declined=spec.get("declined", ""))


def _cells_later(spec: dict[str, Any], template: Any) -> Any:
    """A resume function with free variables gets its cells per call (`resume_factory`): until
    then its code keeps the placeholder cells it was written with."""
    return template if "freevars" in spec else None


def _argument(spec: tuple[str, tuple[object, ...] | None, str | None, str]) -> object:
    name, tensor, literal, type_name = spec
    if tensor is not None:
        return random_tensor(tensor)
    if literal is not None:
        return eval(literal)
    raise SystemExit(
        f"cannot make up argument {name} (a {type_name}): call load() from Python with real inputs"
    )


def _tensors(value: object) -> list[torch.Tensor]:
    """The tensors in an output: nested tuples, lists, dicts and objects with attributes."""
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, dict):
        return [t for v in value.values() for t in _tensors(v)]
    if isinstance(value, (tuple, list)):
        return [t for v in value for t in _tensors(v)]
    if hasattr(value, "__dict__") and not isinstance(value, type):
        return [t for v in vars(value).values() for t in _tensors(v)]
    return []


def main() -> None:
    """Run the file on random inputs of the recorded shapes and say what ran."""
    torch.manual_seed(0)
    if ENTRY["method"]:
        state = {
            (f"{path}." if path else "") + spec[0]: random_tensor(spec, path)
            for path, _, params, buffers, *_ in MODULE_LAYOUT
            for spec in (*params, *buffers)
            if spec[1] not in (None, "tied")  # a slot that holds None, or a tensor tied to another
        }
        program = load(state_dict=state)
    else:
        program = load()
    args, kwargs = (
        [_argument(a) for a in INPUTS[0]],
        {a[0]: _argument(a) for a in INPUTS[1]},
    )
    fill_einops_registry(
        _tensors((args, kwargs))
    )  # as the compiling process had it, if einops is used
    recorded = recorded_global_state(FRAMES)  # e.g. grad mode off: a case recorded under no_grad
    if recorded is not None:
        apply_global_state(recorded)
    output = program(*args, **kwargs)
    print(f"ran {ENTRY['name']} ({BACKEND}) on random inputs of the recorded shapes:")
    for line in program.ran:
        print(f"  {line}")
    leaves = _tensors(output)
    for t in leaves:
        print(f"  output: {str(t.dtype).removeprefix('torch.')} {list(t.shape)}")
    grads = [t for t in leaves if t.requires_grad]
    if grads:
        torch.autograd.backward(grads, [torch.randn_like(t) for t in grads])
        print(f"  backward ran through {len(grads)} output(s)")
    if program.skipped:
        print(f"  {len(program.skipped)} guard(s) not checked (Program.skipped says why)")
    if program.versions:
        print("  note: " + "; ".join(program.versions))
    sys.stdout.flush()
