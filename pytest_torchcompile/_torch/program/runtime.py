"""The runtime of the program file: the helpers every generated file carries, as Python source.

Its source from the marker below on is copied verbatim into each program
file, which must run with torch alone (no torch.compile, no Dynamo, no
pytest-torchcompile), followed by the other parts of the runtime, each from
its own marker on (`writer.RUNTIME_PARTS`): the guard prelude
(`runtime_guards.py`), what Dynamo's transformed code calls and the kernels
(`runtime_graphs.py`), the module rebuilt from a state_dict
(`runtime_module.py`). This part holds the file's imports for all of them
and its frames: each compiled frame, its compiles tried newest first, the
ids its guards compare, and the functions routed to a frame while the
model runs. The plugin shares `frame_locals`, which binds a frame's locals
for its guard checker and the program's facts (imported). The names a part
takes from another are imported above its marker: in the file they are
defined in one namespace.
"""

# ruff: noqa: I001 - the names taken from the other parts are imported above the marker
from __future__ import annotations

from .runtime_guards import _GLOBAL_STATE_DIFFERS, ___dict_contains

# ---- runtime (copied into every program file from here on) ----
import builtins
import collections  # noqa: F401 - the guard prelude and the module parts use it
import contextlib
import functools  # noqa: F401 - a module's attribute may be a functools.partial (MODULE_LAYOUT)
import hashlib
import importlib
import inspect
import json  # noqa: F401 - the guard prelude uses it
import linecache
import math
import sys
import types
import warnings  # noqa: F401 - the module part (`check_versions`) uses it
from typing import Any  # noqa: F401 - the file's `load` is annotated with it

import torch
import torch.utils._device  # DEFAULT_DEVICE guards read it; a plain `import torch` does not load it
from torch.utils._python_dispatch import is_traceable_wrapper_subclass  # noqa: F401 - graphs' subclass inputs
from torch.utils._pytree import SUPPORTED_NODES  # noqa: F401 - the module part makes containers of inputs

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

    def __init__(
        self, name: str, signature, compiles: list, fallback=None, cells=(), declined: str = ""
    ) -> None:
        self.name, self.signature, self.compiles, self.fallback = (
            name,
            signature,
            compiles,
            fallback,
        )
        #: (name, cell) of each free variable of a frame made over a closure (`closed_over`): all of
        #: them are its locals for the guards, those its code never reads too
        self.cells = cells
        #: what Dynamo did once every compile refused the inputs: "" compiled again (the file cannot:
        #: it raises), "once" ran the code as Python that time, "from_then" ever after, "before" it
        #: had done so in an earlier call of the case, so every call runs the code as Python; shared
        #: with the frames `closed_over` makes of it per call, as Dynamo's state is its code's
        self.state = {"declined": declined}

    def __call__(self, *args, **kwargs):
        if self.state["declined"] == "before":
            return self._own("Dynamo had declined to compile it", args, kwargs)
        bound = frame_locals(self.signature, args, kwargs)
        for name, cell in self.cells:
            try:
                bound[name] = cell.cell_contents
            except ValueError:  # empty: not a local Dynamo sees
                bound.pop(name, None)
        failed = []
        for compile_ in self.compiles:  # newest first, as Dynamo's cache tries them
            with unrouted():  # guards see each routed function's own code, as Dynamo's do
                guard = compile_.guards(bound, compile_.globals, compile_.ids)
            if guard is None:
                RAN.append(compile_.label)
                return compile_.code(*args, **kwargs)
            failed.append((compile_.label, guard))
        declined = self.state["declined"]
        if declined:
            self.state["declined"] = "before" if declined == "from_then" else declined
            return self._own("Dynamo declined to compile it again", args, kwargs)
        if self.fallback is not None:
            return self._own("no compile was captured for it", args, kwargs)
        raise GuardFailure(self.name, failed)

    def _own(self, why: str, args: tuple, kwargs: dict):
        """The frame's own code, run as Python (a resume function's translated, a function's as is:
        the copy a routed function's frame binds by keeps its code while the function is routed)."""
        RAN.append(f"{self.name} ({why}: its own code ran, as Python)")
        own = self.fallback if self.fallback is not None else self.signature
        return own(*args, **kwargs)

    def closed_over(self, names: tuple, closure: tuple) -> Frame:
        """This frame over a closure's cells (`names` in the closure's order): its code, guards and
        fallback see the cells' contents as the frame's free variables."""
        cells = dict(zip(names, closure))

        def close(function):
            if function is None:
                return None
            bound = tuple(cells[n] for n in function.__code__.co_freevars)
            return types.FunctionType(
                function.__code__,
                function.__globals__,
                function.__name__,
                function.__defaults__,
                bound or None,
            )

        compiles = [
            Compile(c.label, c.guards, c.ids, close(c.code), c.globals) for c in self.compiles
        ]
        closed = Frame(
            self.name, close(self.signature), compiles, close(self.fallback), tuple(cells.items())
        )
        closed.state = self.state
        return closed


def resume_factory(frame: Frame, names: tuple):
    """What Dynamo installs for a resume function with free variables (a closure, or a frame with
    cells): a factory its transformed code calls with the frame's cells, then calls what it made."""

    def make(closure: tuple) -> Frame:
        return frame.closed_over(names, closure)

    return make


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


def code_digest(code: Any) -> str:
    """16 hex digits of what a function does: its bytecode, its constants (nested code by its own
    digest) and the names it reads; `x * 2 + 1` and `x * 3 + 5` share the bytecode, not this."""
    parts = [code.co_code, repr(code.co_names).encode()]
    parts += [_constant_text(c).encode() for c in code.co_consts]
    return hashlib.sha256(b"\0".join(parts)).hexdigest()[:16]


def _constant_text(value: Any) -> str:
    """A constant as text that is the same in every process (a frozenset's order is not)."""
    if hasattr(value, "co_code"):
        return "code:" + code_digest(value)
    if isinstance(value, (tuple, frozenset)):
        items = [_constant_text(v) for v in value]
        return f"{type(value).__name__}({', '.join(sorted(items) if isinstance(value, frozenset) else items)})"
    return repr(value)


def nested_code(path: str, qualname: str, line: int, digest: str) -> Any:
    """The code of a function made inside another (the function at `path`, or one it calls and Dynamo
    inlined), by its qualified name and first line: what a transformed frame makes again after a
    graph break. Another version of the library is refused, not run."""
    found = _code_within(import_object(path).__code__, qualname, line)
    if found is None:
        raise LookupError(f"{path} holds no code {qualname} at line {line}: write the file again")
    if code_digest(found) != digest:
        raise RuntimeError(
            f"{qualname} in {path} is not the code Dynamo compiled when this file was written (another "
            "version of its library?): write the file again"
        )
    return found


def _code_within(code: Any, qualname: str, line: int) -> Any:
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            if const.co_qualname == qualname and const.co_firstlineno == line:
                return const
            found = _code_within(const, qualname, line)
            if found is not None:
                return found
    return None


def frame_locals(function, args, kwargs) -> dict:
    """L as Dynamo sees it: the bound arguments with defaults, then the closure's cells."""
    bound = inspect.signature(function, follow_wrapped=False).bind(
        *args, **kwargs
    )  # the frame's own parameters, not a wrapped function's
    bound.apply_defaults()
    scope = dict(bound.arguments)
    for name, cell in zip(function.__code__.co_freevars, function.__closure__ or ()):
        try:
            scope[name] = cell.cell_contents
        except ValueError:  # an empty cell (a variable not set yet): not a local Dynamo sees
            continue
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


def closure_cells(function) -> dict:
    """A closure's free variables by name (an empty cell left out)."""
    cells = {}
    for name, cell in zip(function.__code__.co_freevars, function.__closure__ or ()):
        try:
            cells[name] = cell.cell_contents
        except ValueError:
            continue
    return cells


def _id_in(source: str, L: dict, G: dict):
    try:
        return id(eval(source, {"L": L, "G": G, "___dict_contains": ___dict_contains}))
    except ACCESS_ERRORS:
        return None  # the object is gone here: the guard fails, as it would in Dynamo


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
        elif how == "cell":  # a free variable of the closure the compile was made for
            ids[source] = _id_in(source, closure_cells(import_object(target)), G)
        else:
            ids[source] = _id_in(source, L, G)
    return ids
