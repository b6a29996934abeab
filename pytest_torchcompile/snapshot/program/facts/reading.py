"""Read the program's facts from live objects, right after each compiled call.

What a frame needs at run time beyond the trace lives in the process that
compiled it: the globals Dynamo installed in the frame's module (module
aliases, resume functions), the objects whose ids the guards compare, the
function that was compiled and how its module is built. `collect` reads
them for every frame compile not yet read (and the case's, once) into the
case's `ProgramFacts` (`data.py`), as plain data.
"""

from __future__ import annotations

import builtins
import functools
import inspect
import sys
import types
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from typing import Any

import torch

from ...._torch import config, dynamo
from ...._torch.formats import (
    EQUALS_MATCH,
    GUARD_GLOBAL,
    GUARD_LOCAL,
    ID_CHECK,
    INSTALLED_GLOBAL,
    RESUME_PREFIX,
    UNNAMED_SCOPE_PREFIX,
    constants_read,
    output_constants,
)
from ...._torch.guard_tree import GuardRow
from ...._torch.program import constants
from ...._torch.program.runtime import closure_cells
from ....common.capture_log import BytecodeRecord, CaptureLog, FrameKey
from ...emit.guards import frame_function, frame_locals
from ...emit.values import import_path, literal
from .data import (
    ArgSpec,
    CaseFacts,
    CompileSettings,
    FrameFacts,
    IdFinder,
    Installed,
    ProgramFacts,
    SubmoduleLayout,
)
from .homes import Home, frame_home
from .module_tree import module_layout, tensor_spec
from .structures import structure_spec

#: guard helpers a guard's source may call while it is evaluated at capture.
_GUARD_SCOPE = {
    "___dict_contains": lambda key, d: dict.__contains__(d, key),
    "___odict_getitem": lambda d, key: dict.__getitem__(d, key),
}


def compile_settings(
    fallback_random: bool, mode: str | None, options: Mapping[str, object] | None
) -> CompileSettings:
    """The settings of this compile that the file depends on, as they are now."""
    return CompileSettings(
        fallback_random=fallback_random,
        cudagraphs=config.inductor_cudagraphs(mode, options),
        kernel_build=config.kernel_build_settings(),
    )


def collect(
    program: ProgramFacts,
    log: CaptureLog,
    model: object,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    settings: CompileSettings,
    layout: tuple[SubmoduleLayout, ...] | None = None,
) -> None:
    """Read into `program` the facts of every frame compile in `log` not read yet (and the case's,
    once; `layout`: the model's module tree as it was before its first call)."""
    if not log.bytecode:
        return
    entry = log.bytecode[0].original
    try:
        function, self_arg = frame_function(model, entry)
    except ValueError:
        wrapped = dynamo.module_call_frame(model, entry)
        declined = _declined_entry(model, log) if wrapped is None else None
        if wrapped is None and declined is None:
            return  # the first compiled frame is not the model's: the writer refuses, naming it
        function, self_arg = (wrapped, ()) if wrapped is not None else declined  # type: ignore[misc]
    if program.case is None:
        program.case = case_facts(model, function, bool(self_arg), args, kwargs, settings, layout)
    resumes = program.resumes()
    local_scope = frame_locals(function, self_arg + tuple(args), kwargs)
    for record in log.bytecode:
        if record.key in program.frames:
            continue
        role = (
            "entry"
            if record.original is function.__code__
            else "resume"
            if record.original in resumes.values()
            else "nested"
        )
        scope = local_scope if role == "entry" else None
        home = frame_home(record.original) if role != "entry" else None
        own = home is not None and home.globals is not None
        routed, closure = _closures_of(
            log.guards.get(record.key, ()), _sharing_home(record, role, home, program, log)
        )
        facts = frame_facts(
            log,
            record.key,
            record.original.co_name,
            role,
            record.transformed,
            home.globals if own else function.__globals__,  # type: ignore[union-attr,arg-type]
            scope,
            closure,
        )
        if home is not None:
            facts = _placed(facts, home, function.__globals__, routed)
        program.frames[record.key] = facts
        resumes = program.resumes()


def _declined_entry(
    model: object, log: CaptureLog
) -> tuple[types.FunctionType, tuple[object, ...]] | None:
    """The model's forward (or the compiled function) where Dynamo compiled none of it but compiled
    frames it called: it declined the entry on its first call (a graph break inside a context
    manager it cannot run in pieces, an error it suppressed), so that code runs as Python on
    every call, and the functions it calls are frames of their own."""
    forward = getattr(type(model), "forward", None) if isinstance(model, torch.nn.Module) else None
    function = forward if isinstance(forward, types.FunctionType) else inspect.unwrap(model)  # type: ignore[arg-type]
    if not isinstance(function, types.FunctionType):
        return None
    if any(b.original is function.__code__ for b in log.bytecode):
        return None
    return function, ((model,) if function is forward else ())


def _placed(
    facts: FrameFacts, home: Home, entry_globals: dict[str, object], closures: tuple[str, ...]
) -> FrameFacts:
    """A non-entry frame's home: its module where its globals are not the entry's, and for a frame
    of a function called from compiled code, the function the file routes (or why none)."""
    module = home.module if home.globals is not entry_globals else None
    if home.globals is not None and home.globals is not entry_globals and module is None:
        return replace(facts, home_problem="its globals are not a module's the file can import")
    if facts.role != "nested":
        return replace(facts, module=module)
    if home.closures:
        why = "" if closures else _unnamed(home)
        return replace(facts, module=module, closures=closures, home_problem=why)
    return replace(facts, module=module, function=home.function, home_problem=home.why)


#: a closure a compile was made for: the name that imports it, and its cells by free variable
Closure = tuple[str, dict[str, object]]


#: the most closures sharing a code the file routes for a compile whose guards read none of their
#: cells (it runs for any of them): each is imported when the file loads
MAX_SHARED = 64


def _closures_of(
    rows: Iterable[GuardRow], home: Home | None
) -> tuple[tuple[str, ...], Closure | None]:
    """For a frame whose code closures share: the names of those the compile runs for, and the one
    it was made for, which the compile's guards on free variables alone pick out: an identity
    guard (`L['method']`, Dynamo's guard that the wrapped method is the one it inlined) or an
    equality guard (`L['name'] == 'einsum'`, tensorly's dispatcher of one backend function). A
    compile whose guards read no cell runs for every one of them, as in Dynamo; () where the guards
    name none of them or several, or too many share it."""
    if home is None or not home.closures:
        return (), None
    freevars = home.closures[0][0].__code__.co_freevars
    checks = [c for row in rows for c in _cell_checks(row, freevars)]
    if not checks:
        every = tuple(sorted(path for _, path in home.closures))
        return (every if len(every) <= MAX_SHARED else ()), None
    found = [(f, p) for f, p in home.closures if all(check(f) for check in checks)]
    if len(found) != 1:
        return (), None
    function, path = found[0]
    return (path,), (path, closure_cells(function))


def _cell_checks(
    row: GuardRow, freevars: tuple[str, ...]
) -> list[Callable[[types.FunctionType], bool]]:
    """What a guard row says of a closure's cells: its identity checks on free variables, or the
    row itself where it is an equality that reads free variables alone."""
    ids = [
        (source, int(value))
        for what, source, value in ID_CHECK.findall(row.code)
        if what == "obj" and _free_root(source, freevars)
    ]
    if ids:
        return [functools.partial(_holds_id, source=s, value=v) for s, v in ids]
    roots = set(GUARD_LOCAL.findall(row.code))
    if row.kind == EQUALS_MATCH and roots and roots <= set(freevars):
        return [functools.partial(_holds_equal, code=row.code)]
    return []


def _sharing_home(
    record: BytecodeRecord, role: str, home: Home | None, program: ProgramFacts, log: CaptureLog
) -> Home | None:
    """The home whose closures share the code of the frame `record` compiled, or of the frame its
    resume function came from (a decorator wrapper's resume function reads the wrapper's cells)."""
    if role == "nested" or role == "entry":
        return home
    code, seen = record.original, set()
    while code not in seen:  # up from a resume function to the frame it resumes
        seen.add(code)
        parents = [
            b.original
            for b in log.bytecode
            if b.key in program.frames and code in dict(program.frames[b.key].resumes).values()
        ]
        if not parents:
            break
        code = parents[0]
    if code is record.original:
        return None
    parent = frame_home(code)
    return parent if parent.closures else None


def _free_root(source: str, freevars: tuple[str, ...]) -> bool:
    return any(source.startswith(f"L[{name!r}]") for name in freevars)


def _holds_equal(function: types.FunctionType, code: str) -> bool:
    try:
        return eval(_compiled(code), {**_GUARD_SCOPE, "L": closure_cells(function)}) is True  # noqa: S307 - Dynamo's own guard source
    except Exception:  # the source does not read from this closure's cells
        return False


def _holds_id(function: types.FunctionType, source: str, value: int) -> bool:
    try:
        return id(eval(_compiled(source), {**_GUARD_SCOPE, "L": closure_cells(function)})) == value  # noqa: S307 - Dynamo's own guard source
    except Exception:  # the source does not read from this closure's cells
        return False


def _unnamed(home: Home) -> str:
    code = home.closures[0][0].__code__
    return (
        f"{getattr(code, 'co_qualname', code.co_name)} is a closure {len(home.closures)} functions "
        "share (a decorator's wrapper), and the compile's guards do not say which of them it was "
        f"made for (or, where they read none of their cells, more than {MAX_SHARED} share it)"
    )


def frame_facts(
    log: CaptureLog,
    key: FrameKey,
    name: str,
    role: str,
    transformed: types.CodeType,
    scope: dict[str, object],
    local_scope: dict[str, object] | None,
    closure: Closure | None = None,
) -> FrameFacts:
    """The facts of one frame compile, read from the module globals its code runs in (`closure`:
    the closure it was made for, where closures share its code: guards on its cells read them)."""
    rows = log.guards.get(key, ())
    names = set(_global_reads(transformed)) | {
        n for row in rows for n in GUARD_GLOBAL.findall(row.source + " " + row.code)
    }
    found = [
        installed_global(n, scope.get(n, _MISSING)) for n in names if INSTALLED_GLOBAL.match(n)
    ]
    # by what they are: a name may hold an object id or a compile counter, which move between processes
    installed = tuple(sorted(found, key=lambda i: (i.kind, i.target, i.name)))
    resumes = tuple(
        (i.name, dynamo.resume_code(scope[i.name])) for i in installed if i.kind == "resume"
    )
    ids = tuple(id_finders(rows, scope, local_scope, closure))
    graphs = [scope.get(i.name) for i in installed if i.kind == "compiled_fn"]
    values, problem = graph_constants(log, key, graphs)
    return FrameFacts(key, name, role, installed, ids, resumes, values, problem)


def graph_constants(
    log: CaptureLog, key: FrameKey, graphs: list[object]
) -> tuple[tuple[tuple[str, str], ...], str]:
    """The tensor constants the graphs of frame compile `key` read, as the file's expressions, and why
    any of them cannot be written ("" when all can). A name no constant is found for is only a problem
    where a kernel the file runs reads it (Inductor folds some into its kernels): the layout decides."""
    texts = [t for kind in _GRAPH_RECORDS for t in log.payloads(kind, key)]
    names = {n for t in texts for n in constants_read(t)}
    names |= {n for t in log.payloads("output_code", key) for n in output_constants(t)}
    if not names:
        return (), ""
    if len(graphs) != 1:
        return (
            (),
            "its graph reads tensor constants and its frame holds more than one compiled graph",
        )
    sources, problems = [], []
    try:
        found = constants.find(graphs[0], names)
    except constants.ConstantProblem as exc:
        return (), str(exc)
    for name in sorted(found):
        try:
            sources.append((name, constants.tensor_source(name, found[name])))
        except constants.ConstantProblem as exc:
            problems.append(str(exc))
    missing = sorted(names - set(found))
    if missing:
        problems.append(
            f"its graph reads tensor constant(s) {', '.join(missing)} that were not found behind the "
            "compiled function"
        )
    return tuple(sources), "; ".join(problems)


#: AOTAutograd's captured FX graphs (the kernels of `aot_eager`, and of a backward Inductor did not compile).
_GRAPH_RECORDS = ("aot_forward", "aot_backward", "aot_inference")


_MISSING = object()


def _global_reads(code: types.CodeType) -> list[str]:
    """The globals Dynamo installed that its transformed `code` reads.

    Dynamo's code reads what it installs by name (LOAD_GLOBAL), never as an
    attribute, and nothing else is named like it: the code's names, filtered,
    are those reads without disassembling the code (a third of reading a
    frame's facts on a small model).
    """
    return [name for name in code.co_names if INSTALLED_GLOBAL.match(name)]


def installed_global(name: str, value: object) -> Installed:
    """How the file provides one installed global: its own graph or resume function, or an import."""
    if name.startswith("__compiled_fn"):
        return Installed(name, "compiled_fn", "")
    if name.startswith(RESUME_PREFIX) and isinstance(value, types.FunctionType):
        if dynamo.resume_code(value) is None:
            return Installed(
                name,
                "refused",
                "a resume function with free variables made in a way the file does not know",
            )
        return Installed(name, "resume", "")
    if isinstance(value, types.ModuleType) and sys.modules.get(value.__name__) is value:
        return Installed(name, "module", value.__name__)
    if value is builtins.__dict__:
        return Installed(name, "builtins", "")
    if type(value) is dict:
        entries = _dict_entries(value)
        if entries is not None:
            return Installed(name, "dict", repr(entries))
    if name.startswith(UNNAMED_SCOPE_PREFIX):
        return Installed(
            name,
            "refused",
            "the globals of a function no module holds (an FX GraphModule's generated forward, code a "
            "library ran with exec), which the file cannot find again: only globals that are literals or "
            "import by name (a namedtuple's `__new__`) are written",
        )
    path = import_path(value) if value is not _MISSING else None
    if path is not None:
        return Installed(name, "object", path)
    what = (
        "nothing (it was gone when the file was written)"
        if value is _MISSING
        else f"a {type(value).__name__}"
    )
    return Installed(name, "refused", what)


def _dict_entries(value: dict[object, object]) -> list[tuple[str, str, str]] | None:
    """A dict Dynamo installed (the globals of code made at run time, e.g. a namedtuple's `__new__`)
    as (key, "import" or "literal", text) per entry, when every value imports by name or is a literal."""
    entries = []
    for key, item in value.items():
        if not isinstance(key, str):
            return None
        text = literal(item) if item != {} else "{}"
        text = text if text is not None else _namespace_value(item)
        path = None if text is not None else import_path(item)
        if text is None and path is None:
            return None
        entries.append((key, "literal", text) if text is not None else (key, "import", path))
    return entries


def _namespace_value(item: object) -> str | None:
    """The file's expression for a value FX puts in the namespace of the code it generates (a
    GraphModule's `forward`, e3nn's tensor products), which is neither a literal nor importable by
    name: `inf`, `nan`, `NoneType`, and the builtins `exec` adds; None for anything else."""
    if isinstance(item, float) and item != item:
        return "float('nan')"
    if isinstance(item, float) and item in (float("inf"), float("-inf")):
        return f"float({str(item)!r})"
    if item is type(None):
        return "type(None)"
    if item is builtins.__dict__:
        return "vars(__import__('builtins'))"
    if item is builtins:
        return "__import__('builtins')"
    return None


def id_finders(
    rows: Iterable[GuardRow],
    scope: dict[str, object],
    local_scope: dict[str, object] | None,
    closure: Closure | None = None,
) -> list[IdFinder]:
    """For every id a guard compares: import the object by name, evaluate its source at load, or skip
    it; one read from a free variable of `closure` is read from that closure's cells at load."""
    finders: dict[str, IdFinder] = {}
    for row in rows:
        for match in ID_CHECK.finditer(row.code):
            source = match.group(2) if match.group(1) == "obj" else f"type({match.group(2)})"
            if source in finders:
                continue
            if closure is not None and _free_root(source.removeprefix("type("), tuple(closure[1])):
                finders[source] = IdFinder(source, "cell", closure[0])
            else:
                finders[source] = id_finder(source, scope, local_scope)
    return list(finders.values())


def id_finder(
    source: str, scope: dict[str, object], local_scope: dict[str, object] | None
) -> IdFinder:
    """Import the object where it has a name that imports back to it; else re-read its source at load."""
    root = source.removeprefix("type(")
    if local_scope is None and not root.startswith("G["):
        return IdFinder(
            source,
            "skip",
            "it reads a local of a frame the file cannot see before it runs",
        )
    try:
        value = eval(_compiled(source), {**_GUARD_SCOPE, "L": local_scope or {}, "G": scope})  # noqa: S307 - Dynamo's own guard source
    except Exception as exc:  # the source no longer evaluates: say so instead of guessing
        return IdFinder(
            source,
            "skip",
            f"it no longer evaluated when the file was written ({type(exc).__name__})",
        )
    path = import_path(value)
    if path is not None:
        return IdFinder(source, "import", path)
    if root.startswith(("G[", "L['self']")):
        return IdFinder(source, "source", source)
    return IdFinder(source, "skip", f"a {type(value).__name__} the file cannot find by name")


@functools.lru_cache(maxsize=4096)
def _compiled(source: str) -> types.CodeType:
    """A guard's source compiled once per process: models share most of them (`G['torch']`,
    `L['self'].fc1`), and compiling is most of evaluating one."""
    return compile(source, "<guard source>", "eval")


def case_facts(
    model: Any,
    function: types.FunctionType,
    method: bool,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    settings: CompileSettings,
    layout: tuple[SubmoduleLayout, ...] | None = None,
) -> CaseFacts:
    wrapped = not method and isinstance(
        model, torch.nn.Module
    )  # Dynamo's wrap of the module's call
    module = method or wrapped
    path = import_path(type(model)) if module else import_path(function)
    if not module:
        layout = ()
    elif layout is None:  # not read before the call: as it is now
        layout = module_layout(model)
    specs = tuple(arg_spec(str(i), a) for i, a in enumerate(args))
    keywords = tuple(arg_spec(k, v) for k, v in kwargs.items())
    return CaseFacts(
        type(model).forward.__name__ if wrapped else function.__name__,
        path,
        module,
        type(model).forward.__code__ if wrapped else function.__code__,
        layout,
        specs,
        keywords,
        settings,
        wrapped,
    )


def arg_spec(name: str, value: object) -> ArgSpec:
    """One argument; a small tensor of integers or booleans (token ids, labels, a mask) with its
    values, which the script uses where random ones could index out of range; a registered pytree
    container (a tensorclass) as its parts (`structures.py`)."""
    if isinstance(value, torch.Tensor):
        return ArgSpec(name, tensor_spec(name, value, by_value=True), None, type(value).__name__)
    text = literal(value)
    structure = structure_spec(value) if text is None else None
    return ArgSpec(name, None, text, type(value).__name__, structure)
