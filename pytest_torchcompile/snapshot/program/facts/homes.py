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

import sys
import types
from dataclasses import dataclass

from ...emit.values import import_path


@dataclass(frozen=True)
class Home:
    """A frame's function (None for a resume function, which the code calls by its installed name)."""

    globals: dict[str, object] | None  # the globals its code runs in; None when none was found
    module: str | None  # the name of the module whose globals those are, None when none imports
    function: str | None  # module:qualname of the function, where one imports back to it
    why: str  # why no function can be routed ("" when one can)


def frame_home(code: types.CodeType) -> Home:
    """The globals and the routable function of the functions whose code is `code`."""
    functions = _functions(code)
    if not functions:
        return Home(None, None, None, "no function of that code is found in its module by name")
    scope = functions[0].__globals__
    name = scope.get("__name__")
    module = sys.modules.get(name) if isinstance(name, str) else None
    module_name = name if module is not None and vars(module) is scope else None
    for function in functions:
        path = import_path(function)
        if path is not None:
            return Home(scope, module_name, path, "")
    what = functions[0].__qualname__
    why = (
        f"{what} is made at run time (a closure), so no name imports it"
        if "<locals>" in what
        else f"{what} is not reachable by a name that imports it (its module's is {name!r})"
    )
    return Home(scope, module_name, None, why)


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
        candidates = [value, *vars(module).values()]
        found += [
            f
            for f in candidates
            if isinstance(f, types.FunctionType) and f.__code__ is code and f not in found
        ]
    return found


def _modules_of(filename: str) -> list[types.ModuleType]:
    return [
        m
        for m in list(sys.modules.values())
        if isinstance(getattr(m, "__file__", None), str) and m.__file__ == filename
    ]
