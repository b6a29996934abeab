"""Where a frame other than the entry lives: its module's globals, and the function the file routes.

Dynamo compiles a function that compiled code calls (a library's
`remove_self_loops`, a submodule's `forward` called after a graph break) as a
frame of its own, with its own guards, and runs that compile whenever the
function is called while the compiled model runs. The file does the same by
routing the function (`load` puts the file's frame in place of its code for
the duration of each call, as Dynamo's frame hook does): it needs the
function by a name that imports back to it, and the globals its code (and
its resume functions') run in, by their module's name. Read from the live
objects right after the compile; code is matched to its functions by its
qualified name in the modules of its file (the code object knows no function).
"""

from __future__ import annotations

import gc
import sys
import types
from dataclasses import dataclass

from ...._torch import dynamo
from ...emit.values import import_path


@dataclass(frozen=True)
class Home:
    """A frame's function (None for a resume function, which the code calls by its installed name)."""

    globals: dict[str, object] | None  # the globals its code runs in; None when none was found
    module: str | None  # the name of the module whose globals those are, None when none imports
    function: str | None  # module:qualname of the function, where one imports back to it
    why: str  # why no function can be routed ("" when one can)
    #: the functions that share the code, where it is a closure made at run time (a decorator's
    #: wrapper, one code for every method it wraps), each with the name that imports it: the
    #: compile a guard ties to one of them routes it
    closures: tuple[tuple[types.FunctionType, str], ...] = ()


def frame_home(code: types.CodeType) -> Home:
    """The globals and the routable function of the functions whose code is `code`."""
    functions = _functions(code)
    if not functions:
        scope = _factory_globals(code)
        if scope is not None:  # a resume function with free variables: made per call
            return Home(scope, _module_name(scope), None, "")
        qualname = getattr(code, "co_qualname", code.co_name)
        closures = _sharing(code) if "<locals>" in qualname else []
        if closures:  # a decorator's wrappers: each compile is routed to the one it was made for
            scope = closures[0][0].__globals__
            return Home(scope, _module_name(scope), None, "", tuple(closures))
        why = (
            f"{qualname} is made at run time (a closure made per call, such as a lambda), so no "
            "name imports it"
            if "<locals>" in qualname
            else "no function of that code is found in its module by name"
        )
        return Home(None, None, None, why)
    scope = functions[0].__globals__
    name = scope.get("__name__")
    module_name = _module_name(scope)
    for function in functions:
        path = _path(function)
        if path is not None:
            return Home(scope, module_name, path, "")
    closures = _sharing(code) if "<locals>" in getattr(code, "co_qualname", "") else []
    if closures:  # closures a module holds under names their own do not give (tensorly's)
        return Home(scope, module_name, None, "", tuple(closures))
    what = functions[0].__qualname__
    why = (
        f"{what} is made at run time (a closure), so no name imports it"
        if "<locals>" in what
        else f"{what} is not reachable by a name that imports it (its module's is {name!r})"
    )
    return Home(scope, module_name, None, why)


def _module_name(scope: dict[str, object]) -> str | None:
    """The name of the module whose globals `scope` is, where one imports."""
    name = scope.get("__name__")
    module = sys.modules.get(name) if isinstance(name, str) else None
    return name if module is not None and vars(module) is scope else None  # type: ignore[return-value]


def _factory_globals(code: types.CodeType) -> dict[str, object] | None:
    """The globals of a module of `code`'s file that hold a resume factory of `code` (Dynamo
    installs the factory of a resume function with free variables where the function would be)."""
    for module in _modules_of(code.co_filename):
        if any(dynamo.resume_code(v) is code for v in list(vars(module).values())):
            return vars(module)
    return None


def _functions(code: types.CodeType) -> list[types.FunctionType]:
    """The functions of `code` in the modules of its file: by its qualified name, or among the
    module's globals (where Dynamo installs resume functions). A search of the whole heap would
    find closures too, but costs most of a second on a large process, per frame."""
    found: list[types.FunctionType] = []
    qualname = getattr(code, "co_qualname", code.co_name)
    for module in _modules_of(code.co_filename):
        value: object = module
        for part in qualname.split("."):
            value = getattr(value, part, None)
        candidates = [*_unwrapped(value), *vars(module).values()]
        found += [
            f
            for f in candidates
            if isinstance(f, types.FunctionType) and f.__code__ is code and f not in found
        ]
    return found or _elsewhere(code, qualname)


def _elsewhere(code: types.CodeType, qualname: str) -> list[types.FunctionType]:
    """The function of `code` where its qualified name holds it in a module of another file: a
    library that copies an inherited method into each subclass under the subclass's name (kornia's
    augmentations each get a `forward` of their own, so that Dynamo caches them apart) makes code
    of one file whose functions live in the subclasses' modules. Read from each module's own
    globals, so that no module's lazy `__getattr__` imports anything."""
    first, *rest = qualname.split(".")
    if "<" in qualname:
        return []
    found: list[types.FunctionType] = []
    for module in list(sys.modules.values()):
        try:
            value = getattr(module, "__dict__", {}).get(first)
            for part in rest:
                value = getattr(value, part, None)
        except Exception:  # an object of that name that raises when read: not the function
            continue
        if isinstance(value, types.FunctionType) and value.__code__ is code and value not in found:
            found.append(value)
    return found


def _sharing(code: types.CodeType) -> list[tuple[types.FunctionType, str]]:
    """The functions whose code is `code` that a name imports, with that name (a decorator's
    wrapper of each method it decorates, named after the method by `functools.wraps`; a
    dataclass's `__init__`, made by `exec` inside `__create_fn__` and named `Class.__init__`; a
    dispatcher made per backend function and stored as a module's global under another module's
    names, tensorly's `tensorly.einsum`), found by what refers to the code: a search of the heap,
    run only for code made inside a function that no other lookup finds."""
    found = [
        f
        for f in gc.get_referrers(code)
        if isinstance(f, types.FunctionType) and f.__code__ is code
    ]
    paths = {id(f): _path(f) for f in found}
    unnamed = [f for f in found if paths[id(f)] is None]
    if unnamed:
        paths.update(_globals_holding(unnamed))
    return [(f, path) for f in found if (path := paths[id(f)]) is not None]


def _globals_holding(functions: list[types.FunctionType]) -> dict[int, str]:
    """`module:name` (or `module:Class.name`) of a module global, or an attribute of a class a
    module defines, holding each function, by the function's id; read in one pass over the loaded
    modules' own globals and their classes' own dicts (no lazy `__getattr__` runs). For a function
    whose `__module__` and `__qualname__` were copied from another (tensorly's dispatchers carry
    numpy's names), or a closure a library registers as a method (tensorly's `cached_einsum`, set
    on the backend's class), the one place left that says where it lives."""
    wanted = {id(f): f for f in functions}
    held: dict[int, str] = {}
    for name, module in list(sys.modules.items()):
        scope = getattr(module, "__dict__", None)
        if not isinstance(scope, dict) or not isinstance(name, str):
            continue
        for key, value in list(scope.items()):
            _note(held, wanted, value, f"{name}:{key}")
            if issubclass(type(value), type) and value.__dict__.get("__module__") == name:
                for attribute, member in list(vars(value).items()):
                    inner = getattr(member, "__func__", member)  # a staticmethod's function
                    _note(held, wanted, inner, f"{name}:{key}.{attribute}")
    return held


def _note(held: dict[int, str], wanted: dict[int, object], value: object, path: str) -> None:
    if id(value) in wanted and value is wanted[id(value)] and id(value) not in held:
        held[id(value)] = path


def _unwrapped(value: object) -> list[object]:
    """A function and those it wraps (`functools.wraps`' `__wrapped__`: a decorated method such as
    vector-quantize's `@autocast(...) def forward`, whose name imports the wrapper)."""
    chain = [value]
    while hasattr(chain[-1], "__wrapped__") and len(chain) < 8:
        chain.append(chain[-1].__wrapped__)  # type: ignore[attr-defined]
    return chain


def _path(function: types.FunctionType) -> str | None:
    """A path that imports back to `function`: its own name, its wrapper's then `__wrapped__`, or
    a global of its module that holds it (a closure made at import: `scaled = make_scaled(3.0)`)."""
    path = import_path(function)
    if path is not None:
        return path
    if "<" in function.__qualname__:
        return _global_holding(function)
    wrapper = import_path(_imported(function))
    if wrapper is None:
        return None
    chain = _unwrapped(_imported(function))
    if function not in chain:
        return None
    return wrapper + ".__wrapped__" * chain.index(function)


def _global_holding(function: types.FunctionType) -> str | None:
    """`module:name` of the one global of the function's module that holds it, or None."""
    module = sys.modules.get(function.__module__)
    names = [n for n, v in list(vars(module).items()) if v is function] if module else []
    return f"{function.__module__}:{names[0]}" if len(names) == 1 else None


def _imported(function: types.FunctionType) -> object:
    """What the function's module and qualified name import (its wrapper, where it is decorated)."""
    value: object = sys.modules.get(function.__module__)
    for part in function.__qualname__.split("."):
        value = getattr(value, part, None)
    return value


def _modules_of(filename: str) -> list[types.ModuleType]:
    return [
        m
        for m in list(sys.modules.values())
        if isinstance(getattr(m, "__file__", None), str) and m.__file__ == filename
    ]


def nested_code_path(code: types.CodeType) -> tuple[str, str, int] | None:
    """(path of an importable function whose code holds `code`, its qualified name, its first line):
    a function made inside another, which Dynamo's code makes again after a graph break; None where
    no function of its file holds it by a name that imports."""
    qualname = getattr(code, "co_qualname", None)  # 3.11+
    if not isinstance(qualname, str) or ".<locals>." not in qualname:
        return None
    outer = qualname.split(".<locals>.")[0]
    for module in _modules_of(code.co_filename):
        value: object = module
        for part in outer.split("."):
            value = getattr(value, part, None)
        for function in _unwrapped(value):
            if isinstance(function, types.FunctionType) and _holds(function.__code__, code):
                path = _path(function)
                if path is not None:
                    return path, qualname, code.co_firstlineno
    return None


def _holds(outer: types.CodeType, code: types.CodeType) -> bool:
    return any(
        c is code or (isinstance(c, types.CodeType) and _holds(c, code)) for c in outer.co_consts
    )
