"""Each Python frame Dynamo compiled, as the program file holds it: guards, transformed code, its graph.

`plan_frames` groups a case's frame compiles by the frame they compiled (a
recompile is one more compile of the same frame, tried newest first, as
Dynamo's cache does) and writes each compile's three parts: its guards as
a function returning the first guard that fails, its transformed code as
Python (`bytecode.py`, checked against the bytecode by `equivalence.py`),
and the graph it calls (`graphs.py`). A resume function that the capture
never saw compiled is written from its own code, to run as plain Python,
as Dynamo runs a frame it did not compile.
"""

from __future__ import annotations

import re
import sys
import types
from dataclasses import dataclass, field

from ...._torch.formats import DYNAMO_STAND_INS
from ...._torch.program.runtime import code_digest
from ....common.capture_log import BytecodeRecord, CaptureLog, FrameKey
from ...emit.guards import frame_label, guard_source
from ...emit.values import constant_source, import_path, literal
from ..facts.data import CaseFacts, FrameFacts, Installed, ProgramFacts
from ..facts.homes import nested_code_path
from ..translation.bytecode import Translation, Untranslatable
from ..translation.checked import NotEquivalent, checked, with_closure
from .graphs import GraphCode, graph_code
from .refusals import ProgramRefused, frame_name


@dataclass
class CompilePlan:
    """One compile of a frame, written out."""

    key: FrameKey
    label: str  # f0c1
    where: str  # "frame 0 compile 1 (forward)"
    guards: str  # source of `def guards_<label>_<name>(L, G, IDS)`
    guards_name: str
    not_checked: list[str]
    ids: list[tuple[str, str, str]]
    code: str  # source of the transformed code (a def, or a maker of one for a closure)
    code_name: str
    constants: dict[str, str]  # name -> source
    graph: GraphCode | None
    graph_global: str  # the name the code calls its graph by (`__compiled_fn_<N>_<uuid>`), or ""


@dataclass
class FramePlan:
    """One frame: its compiles newest first, and how the file reaches it."""

    name: str
    role: str
    original: types.CodeType
    compiles: list[CompilePlan] = field(default_factory=list)
    installed_as: list[str] = field(
        default_factory=list
    )  # resume functions: the names the code calls it by
    fallback: Translation | None = None
    fallback_name: str = ""
    #: the module whose globals its code runs in, where they are not the entry's (a library's frame)
    module: str | None = None
    #: a function called from compiled code: its module:qualname, which `load` routes to this frame
    function: str | None = None
    #: what Dynamo did when it declined to compile the frame again (`declined`): "" never
    declined: str = ""
    #: closures that share its code (a decorator's wrappers), each routed to a frame of its own
    #: over its cells: those its compiles were made for, by the names that import them
    closures: list[str] = field(default_factory=list)


def plan_frames(
    log: CaptureLog, program: ProgramFacts, backend: str
) -> tuple[list[FramePlan], list[Installed]]:
    """The frames in the order they were first compiled, and every installed global the file provides."""
    frames: dict[types.CodeType, FramePlan] = {}
    installed: dict[str, Installed] = {}
    for record in sorted(log.bytecode, key=lambda b: b.key):
        facts = program.frames.get(record.key)
        where = frame_name(record.key, record.original.co_name)
        if facts is None:
            raise ProgramRefused(
                where,
                "its facts were not read right after the compile (write_program needs the case run by compile_model)",
            )
        if facts.role == "nested" and facts.function is None and not facts.closures:
            raise ProgramRefused(
                where,
                "a function called from compiled code that Dynamo compiled as a frame of its own; the file "
                f"cannot route calls to it: {facts.home_problem}",
            )
        if facts.home_problem and facts.role != "nested":
            raise ProgramRefused(where, facts.home_problem)
        for item in facts.installed:
            if item.kind == "refused":
                raise ProgramRefused(where, f"its code reads {item.name}, {item.target}")
            installed.setdefault(item.name, item)
        plan = frames.setdefault(
            record.original,
            FramePlan(
                record.original.co_name,
                facts.role,
                record.original,
                module=facts.module,
                function=facts.function,
            ),
        )
        plan.compiles.insert(0, compile_plan(log, record, facts, backend, where))
        plan.closures += [c for c in facts.closures if c not in plan.closures]
    for plan in frames.values():
        plan.declined = declined(log, plan.original)
    _link_resumes(program, frames)
    case = program.case
    if case is not None and not any(p.role == "entry" for p in frames.values()):
        # Dynamo declined the entry on its first call: it runs as Python, the frames it calls
        # are compiled (`reading._declined_entry`)
        entry = FramePlan(case.entry_code.co_name, "entry", case.entry_code, declined="before")
        return [entry, *frames.values()], list(installed.values())
    return list(frames.values()), list(installed.values())


def declined(log: CaptureLog, code: types.CodeType) -> str:
    """How the file runs a frame once every compile refuses its inputs, as Dynamo ran it in the
    call the file is written after (the log's last): "" raise (Dynamo compiled again, or never
    declined), "once" its own code this time, "from_then" its own code from then on, "before" its own
    code on every call (Dynamo declined in an earlier call of the case)."""
    seen = [d for d in log.declined if d.code is code]
    for_good = [d for d in seen if d.for_good]
    if for_good:
        return "before" if for_good[0].call < log.calls else "from_then"
    return "once" if seen else ""


def _link_resumes(program: ProgramFacts, frames: dict[types.CodeType, FramePlan]) -> None:
    """Attach every resume function the code calls to its frame; one never compiled runs its own code."""
    for facts in program.frames.values():
        for name, code in facts.resumes:
            plan = frames.get(code)
            if plan is None:
                plan = frames[code] = FramePlan(code.co_name, "resume", code, module=facts.module)
            if name not in plan.installed_as:
                plan.installed_as.append(name)
    for index, plan in enumerate(frames.values()):
        if plan.role == "resume" and (not plan.compiles or plan.declined):
            plan.fallback_name = (
                # the name last, where the snapshot masks its line; a def's name (kornia names the
                # code it copies into each subclass `Class.forward`, and its resume functions so)
                f"uncompiled{index}_{python_name(plan.name)}"
            )
            plan.fallback = _translated(  # Python's own code, run as Python: it may make functions
                plan.original,
                plan.fallback_name,
                f"resume function {plan.name}",
                f"__const_{plan.fallback_name}_",
                functions=True,
            )


def compile_plan(
    log: CaptureLog, record: BytecodeRecord, facts: FrameFacts, backend: str, where: str
) -> CompilePlan:
    label = frame_label(record.key)
    name = f"{label}_{python_name(record.original.co_name)}"
    translation = _translated(
        record.transformed,
        name,
        where,
        f"__const_{label}_",
    )
    _check_helpers(translation, where)
    constants = {}
    for constant, value in translation.constants.items():
        source = constant_source(value) or object_source(value)
        if source is None:
            raise ProgramRefused(
                where,
                f"its code holds a constant of type {type(value).__name__} the file cannot write as Python",
            )
        constants[constant] = source
    graphs = [n for n in translation.globals_read if n.startswith("__compiled_fn")]
    if len(graphs) > 1:
        raise ProgramRefused(
            where,
            f"its code calls {len(graphs)} compiled graphs; the file pairs one graph with each compile",
        )
    graph = (
        graph_code(
            log, record.key, label, backend, where, dict(facts.constants), facts.constants_problem
        )
        if graphs
        else None
    )
    guards, guards_name, not_checked = guard_source(
        record.key, python_name(record.original.co_name), log.guards.get(record.key, ())
    )
    ids = [(f.source, f.how, f.target) for f in facts.ids]
    code = with_closure(translation.source, record.transformed, name)
    return CompilePlan(
        record.key,
        label,
        where,
        guards,
        guards_name,
        not_checked,
        ids,
        code,
        name,
        constants,
        graph,
        graphs[0] if graphs else "",
    )


def python_name(name: str) -> str:
    """A code object's name as a `def` can take it: a lambda's `<lambda>` becomes `_lambda_`."""
    return re.sub(r"\W", "_", name)


def object_source(value: object) -> str | None:
    """A constant of Dynamo's code that is an object, not a value: imported by name where it can be, a
    namedtuple class made at run time built again alike (its instances compare as tuples), else None."""
    path = import_path(value)
    if path is not None:
        return f"import_object({path!r})"
    if isinstance(value, types.CodeType):
        return _nested_code_source(value)
    if isinstance(value, dict) and _module_of_globals(value) is not None:
        return f"vars(import_object({_module_of_globals(value) + ':'!r}))"
    if isinstance(value, types.MethodType) and isinstance(value.__self__, type):
        return _class_method_source(value)
    if isinstance(value, type) and issubclass(value, tuple) and value.__bases__ == (tuple,):
        fields = getattr(value, "_fields", None)
        defaults = getattr(value, "_field_defaults", {})
        if isinstance(fields, tuple) and all(literal(d) is not None for d in defaults.values()):
            given = [defaults[f] for f in fields if f in defaults]
            extra = f", defaults={given!r}" if given else ""
            return (
                f"collections.namedtuple({value.__name__!r}, {list(fields)!r}{extra}, "
                f"module={value.__module__!r})"
            )
    return None


def _nested_code_source(code: types.CodeType) -> str | None:
    """The code of a function made inside another, found again in the code of the function that
    makes it (a library's, by name), checked by digest when the file runs."""
    found = nested_code_path(code)
    if found is None:
        return None
    path, qualname, line = found
    return f"nested_code({path!r}, {qualname!r}, {line}, {code_digest(code)!r})"


def _module_of_globals(value: dict[str, object]) -> str | None:
    """The name of the module whose globals `value` is (a function made again runs in them)."""
    name = value.get("__name__")
    module = sys.modules.get(name) if isinstance(name, str) else None
    return name if module is not None and vars(module) is value else None  # type: ignore[return-value]


def _class_method_source(method: types.MethodType) -> str | None:
    """A classmethod bound to a class the file can write (Dynamo rebuilds a namedtuple made in the
    function with its `_make`): looked up on that class again, where it is the same method."""
    owner = method.__self__
    name = method.__name__
    if getattr(owner, name, None) != method:
        return None
    source = object_source(owner)
    return f"getattr({source}, {name!r})" if source is not None else None


def _translated(
    code: types.CodeType, name: str, where: str, prefix: str, functions: bool = False
) -> Translation:
    """The code as Python, proved to do what the bytecode does; refused otherwise."""
    try:
        return checked(code, name, prefix, functions)
    except NotEquivalent as exc:
        raise ProgramRefused(
            where, f"its code written as Python does not do what the bytecode does ({exc})"
        ) from None
    except Untranslatable as exc:
        raise ProgramRefused(where, f"its code cannot be written as Python: {exc}") from None


def _check_helpers(translation: Translation, where: str) -> None:
    """Dynamo's own helpers the code calls must have a stand-in in the file."""
    for alias, (module, helpers) in DYNAMO_STAND_INS.items():
        used = set(re.findall(rf"{alias}\.(\w+)", translation.source))
        unknown = sorted(used - helpers)
        if unknown:
            called = ", ".join(f"{module}.{name}" for name in unknown)
            raise ProgramRefused(
                where, f"its code calls {called}, which the file has no stand-in for"
            )


def case_facts(log: CaptureLog, program: ProgramFacts) -> CaseFacts:
    """The case's facts; refused when reading them failed or the case's first frame was not the model's."""
    if program.error is not None:
        raise ProgramRefused(
            "the case",
            f"reading what the file needs failed right after the compile: {program.error}",
        )
    facts = program.case
    if facts is None and not log.bytecode:
        raise ProgramRefused(
            "the case",
            "nothing was compiled: Dynamo compiled no frame of it (it ran eagerly, e.g. after a graph break "
            "in a loop, or every call went to code Dynamo skips); there is nothing torch.compile ran to write",
        )
    if facts is None:
        first = log.bytecode[0].original
        raise ProgramRefused(
            "the case",
            f"its first compiled frame ({first.co_name}, {first.co_filename}:{first.co_firstlineno}) is neither "
            "the model's forward nor the compiled function, so the file cannot call it with the case's "
            "arguments; compile the function or module that frame belongs to instead (a builtin such as "
            "torch.sin has no Python code, so torch.compile compiles a wrapper of its own: compile a Python "
            "function that calls it instead, e.g. `def f(x): return torch.sin(x)` at module level)",
        )
    return facts
