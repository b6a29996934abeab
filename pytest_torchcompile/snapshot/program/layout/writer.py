"""Lay out the program file: one Python file that runs what torch.compile ran, without torch.compile.

In the order it runs: the runtime helpers (`_torch/program/runtime*.py`);
the case (what was compiled, how its module is built, the recorded inputs,
the versions the file was written with); per frame, per compile newest
first, its guards, its transformed code and the graph it calls with the
wrapper AOTAutograd put around it; the kernels (Inductor's output code, or
FX graphs); then `load`, which binds it all to a module or a state_dict.
`program_text` raises `ProgramRefused` rather than write a file that could
run differently from the compiled model.
"""

from __future__ import annotations

import ast
import inspect
import sys
from pathlib import Path

import torch

from ...._torch.formats import DYNAMO_UTILS_ALIAS, DYNAMO_UTILS_MODULE
from ...._torch.program import runtime as program_runtime
from ...._torch.program import runtime_graphs, runtime_guards, runtime_module, template_load
from ...._torch.program.runtime_module import ATTRIBUTE_MODULE, SAME_MODULE
from ....common.capture_log import CaptureLog
from ....common.files import atomic_write_text
from ...emit.values import constant_source, text_literal
from ..facts.data import (
    ArgSpec,
    CaseFacts,
    CompileSettings,
    Installed,
    ProgramFacts,
    Slot,
    StructureSpec,
    TensorSpec,
)
from ..translation.checked import with_closure
from .frames import FramePlan, case_facts, object_source, plan_frames
from .graphs import Kernel
from .imports import with_import_roots
from .refusals import ProgramRefused, check_case

RUNTIME_MARKER = "# ---- runtime (copied into every program file from here on) ----"
#: the runtime's parts in the order the file holds them, each copied from its marker line on
RUNTIME_PARTS = (
    (program_runtime, RUNTIME_MARKER),
    (runtime_guards, "# --- the guard prelude: what Dynamo's guard code calls"),
    (runtime_graphs, "# --- what Dynamo's transformed code calls"),
    (runtime_module, "# --- the module, from itself or from a state_dict"),
)
LOAD_MARKER = "# ---- load (copied into every program file from here on) ----"
RULE = "# " + "=" * 78

HEADER = """\
# What torch.compile ran for this case, as one Python file that runs it without torch.compile.
# Written by pytest-torchcompile (`CompileResult.write_program`); backend: {backend}.
# Written with torch {torch} and Python {python}; loading it elsewhere warns (`Program.versions`).
#
#     program = runpy.run_path("this_file.py")
#     model = program["load"]({load_arg})   # or load(state_dict=...) for a module
#     out = model(*args, **kwargs)          # guards, Dynamo's code, AOTAutograd's wrapper, kernels
#     program["GuardFailure"]               # raised when no compile accepts the inputs (names the guard)
#
# Run as a script, it calls the compiled model on random inputs of the recorded shapes and says what ran.
#
# In the order it runs, for each frame Dynamo compiled (a graph break adds a resume frame, a recompile
# another compile of the same frame, tried newest first as Dynamo's cache does):
#   1. guards: None lets the compile's code run, else the guard that failed;
#   2. the transformed code Dynamo ran instead of the function's bytecode, as Python;
#   3. the graph it calls: AOTAutograd's wrapper (an autograd.Function for training) and the kernels.

from __future__ import annotations
"""


def program_text(log: CaptureLog, program: ProgramFacts, backend: str) -> str:
    """The whole file for a case's capture and facts, or ProgramRefused naming the frame and the reason."""
    case = case_facts(log, program)
    settings = case.settings
    check_case(log, backend, settings)
    frames, installed = plan_frames(log, program, backend)
    load_arg = "model" if case.method else ""
    sections = [
        HEADER.format(
            backend=backend,
            torch=torch.__version__,
            python=_python(),
            load_arg=load_arg,
        ),
        _runtime(),
        _case_section(case, backend, settings),
    ]
    sections += [_frame_section(frame) for frame in frames]
    sections.append(_kernel_section(frames))
    sections.append(_wiring(frames, installed))
    sections.append(_copied(inspect.getsource(template_load), LOAD_MARKER))
    sections.append('if __name__ == "__main__":\n    main()\n')
    return with_import_roots("\n\n".join(s.strip("\n") + "\n" for s in sections))


def write_program(log: CaptureLog, program: ProgramFacts, backend: str, path: Path) -> Path:
    """Write the file to `path` (its folder made if needed); ProgramRefused when it cannot be written.

    Written as the snapshots are (a temp file, then a rename): a full disk
    leaves the user's earlier file at `path` whole, not truncated.
    """
    text = program_text(log, program, backend)
    path = Path(path)
    atomic_write_text(path, text)
    return path


def program_artifact(log: CaptureLog, program: ProgramFacts, backend: str) -> str:
    """The `program` snapshot: the file, or a file that says why it was refused (raising on load)."""
    try:
        return program_text(log, program, backend)
    except ProgramRefused as exc:
        return REFUSED.format(backend=backend, where=exc.where, reason=exc.reason)


REFUSED = '''\
# What torch.compile ran for this case could not be written as a Python file that runs it
# (pytest-torchcompile `program`; backend: {backend}).
# {where}: {reason}


class ProgramRefused(Exception):
    """write_program refused this case; the message says where and why."""


def load(module=None, *, state_dict=None):
    raise ProgramRefused({where!r} + ": " + {reason!r})
'''


def _python() -> str:
    return ".".join(map(str, sys.version_info[:3]))


def _runtime() -> str:
    """The runtime's parts, one after the other (two blank lines apart, as in a module)."""
    parts = (_copied(inspect.getsource(m), marker).strip("\n") for m, marker in RUNTIME_PARTS)
    return "\n\n\n".join(parts)


def _copied(source: str, marker: str) -> str:
    """A module's source from its marker line on."""
    index = source.index(marker)
    return source[index:]


def _title(text: str) -> str:
    return f"{RULE}\n# {text}\n{RULE}"


def _case_section(case: CaseFacts, backend: str, settings: CompileSettings) -> str:
    entry = {
        "name": case.entry_name,
        "path": case.entry_path,
        "method": case.method,
        "code": program_runtime.code_digest(case.entry_code),
    }
    if case.wrapped:
        entry["wrapped"] = True
    layout = [
        (
            m.path,
            m.class_path,
            [_spec(p) for p in m.parameters],
            [_spec(b) for b in m.buffers],
            list(m.settings),
            *((ATTRIBUTE_MODULE,) if m.attribute else ()),
        )
        for m in case.module
    ]
    inputs = ([_arg(a) for a in case.args], [_arg(a) for a in case.kwargs])
    lines = [
        _title("the case: what was compiled, how its module is built, what it was called with"),
        f"TORCH_VERSION = {torch.__version__!r}",
        f"PYTHON_VERSION = {_python()!r}",
        f"BACKEND = {backend!r}",
        f"ENTRY = {entry!r}",
        "#: the module tree: (path, class, parameters, buffers, settings); a tensor is (name, shape, stride, dtype, device, requires_grad)",
        *_layout_notes(case),
        f"MODULE_LAYOUT = {layout!r}",
        "#: the first call's arguments: (name, tensor layout or None, Python literal or None, type)",
        *_input_notes(case),
        f"INPUTS = {inputs!r}",
        "#: Inductor's settings the kernels were compiled with (they pick the vector ISA and math flags)",
        f"KERNEL_BUILD = {dict(settings.kernel_build)!r}",
    ]
    return "\n".join(lines) + "\n"


def _input_notes(case: CaseFacts) -> list[str]:
    """What INPUTS holds beyond layouts and literals, said where it holds it."""
    args = (*case.args, *case.kwargs)
    notes = []
    if any(a.tensor is not None and a.tensor.values is not None for a in args):
        notes.append(
            "#: a small tensor of integers or booleans carries its values last (ids, labels, masks)"
        )
    if any(a.structure is not None for a in args):
        notes.append(
            "#: an input of a registered pytree container is the source that makes it (`pytree_value`) in the literal's place"
        )
    return notes


def _layout_notes(case: CaseFacts) -> list[str]:
    """What MODULE_LAYOUT holds beyond tensors and literals, said where it holds it."""
    entries = [s for m in case.module for s in (*m.parameters, *m.buffers)]
    tensors = [s for s in entries if isinstance(s, TensorSpec)]
    notes = []
    if len(tensors) < len(entries):
        notes.append(
            "#: a slot without a tensor of its own is (name, None), or (name, 'tied', the path it is tied to)"
        )
    if any(s.values is not None for s in tensors):
        notes.append(
            "#: a buffer of integers, booleans, or that a state_dict leaves out, carries its values last"
        )
    if any(s.subclass is not None for s in tensors):
        notes.append(
            "#: a tensor subclass (a quantized weight) carries None, its class, its inner tensors and its metadata's source last"
        )
    if any(m.class_path and m.class_path.startswith(SAME_MODULE) for m in case.module):
        notes.append(
            f"#: a module met before is {SAME_MODULE!r} and its first path (shared, bound once)"
        )
    if any(m.attribute for m in case.module):
        notes.append(
            f"#: a module its parent holds as a plain attribute (not a registered submodule) ends with {ATTRIBUTE_MODULE!r}"
        )
    if any("tree_tensor(" in text for m in case.module for _, text in m.settings):
        notes.append(
            "#: an attribute that holds the tree's own tensors names them by path (`tree_tensor`)"
        )
    return notes


def _spec(spec: TensorSpec | Slot) -> tuple[object, ...]:
    if isinstance(spec, Slot):
        return (spec.name, None) if spec.tied_to is None else (spec.name, "tied", spec.tied_to)
    layout = (
        spec.name,
        list(spec.shape),
        list(spec.stride),
        spec.dtype,
        spec.device,
        spec.requires_grad,
    )
    if spec.subclass is not None:
        return (*layout, None, spec.subclass, [_spec(s) for s in spec.inner], spec.metadata)
    return layout if spec.values is None else (*layout, list(spec.values))


def _arg(arg: ArgSpec) -> tuple[object, ...]:
    tensor = _spec(arg.tensor) if arg.tensor is not None else None
    source = _structure_source(arg.structure) if arg.structure is not None else arg.literal
    return (arg.name, tensor, source, arg.type_name)


def _structure_source(structure: StructureSpec) -> str:
    """`pytree_value(type, context, [children])`, each tensor a `random_tensor` of its layout."""
    children = [
        c
        if isinstance(c, str)
        else _structure_source(c)
        if isinstance(c, StructureSpec)
        else f"random_tensor({_spec(c)!r})"
        for c in structure.children
    ]
    return f"pytree_value({structure.type_path!r}, {structure.context}, [{', '.join(children)}])"


def _frame_section(frame: FramePlan) -> str:
    parts = [
        _title(f"frame {frame.name} ({frame.role}): {len(frame.compiles)} compile(s), newest first")
    ]
    for plan in frame.compiles:
        parts.append(f"# ----- {plan.where}: 1. guards")
        parts.append(plan.guards)
        parts.append(f"IDS_{plan.label} = {plan.ids!r}  # (source, how it is found again, where)")
        parts.append(f"NOT_CHECKED_{plan.label} = {plan.not_checked!r}")
        parts.append(f"# ----- {plan.where}: 2. transformed code")
        parts.extend(f"{name} = {source}" for name, source in plan.constants.items())
        parts.append(plan.code)
        if plan.graph is not None:
            parts.append(
                f"# ----- {plan.where}: 3. the graph it calls: AOTAutograd's wrapper around the kernels"
            )
            parts.append(plan.graph.source)
    if frame.fallback is not None:
        when = (
            "what runs once Dynamo declined to compile it again"
            if frame.compiles
            else "never compiled during the capture"
        )
        parts.append(f"# ----- {frame.name}: {when}; its own code, run as plain Python")
        for name, value in frame.fallback.constants.items():
            source = constant_source(value) or object_source(value)
            if source is None:
                raise ProgramRefused(
                    frame.name,
                    f"its code holds a constant of type {type(value).__name__} the file cannot write",
                )
            parts.append(f"{name} = {source}")
        parts.append(with_closure(frame.fallback.source, frame.original, frame.fallback_name))
    return "\n\n".join(p.strip("\n") for p in parts) + "\n"


def _kernels(frames: list[FramePlan]) -> list[Kernel]:
    return [k for f in frames for p in f.compiles if p.graph is not None for k in p.graph.kernels]


def _kernel_section(frames: list[FramePlan]) -> str:
    parts = [_title("the kernels: what each graph runs")]
    table = []
    for kernel in _kernels(frames):
        name = f"KERNEL_{kernel.key}"
        parts.append(
            f"# {kernel.key}: {kernel.note}\n{name} = {text_literal(kernel.source.strip(chr(10)) + chr(10))}"
        )
        table.append(f"    {kernel.key!r}: ({kernel.kind!r}, {name}),")
    parts.append("KERNEL_SOURCES = {\n" + "\n".join(table) + "\n}")
    constants = [
        f"    {kernel.key!r}: {{"
        + ", ".join(f"{name!r}: {source}" for name, source in kernel.constants)
        + "},"
        for kernel in _kernels(frames)
        if kernel.constants
    ]
    if constants:  # none: the template's empty table stands
        parts.append(
            "#: the tensor constants a kernel reads (built in the function, folded into the graph), by value\n"
            + "KERNEL_CONSTANTS = {\n"
            + "\n".join(constants)
            + "\n}"
        )
    return "\n\n".join(parts) + "\n"


def _wiring(frames: list[FramePlan], installed: list[Installed]) -> str:
    """The tables `load` reads: installed globals, constants, graphs, and each frame's compiles."""
    modules = [
        (
            i.name,
            i.kind,
            DYNAMO_UTILS_MODULE
            if i.name == DYNAMO_UTILS_ALIAS
            else ast.literal_eval(i.target)
            if i.kind == "dict"
            else i.target,
        )
        for i in installed
        if i.kind in ("module", "object", "builtins", "dict")
    ]
    constants = [name for f in frames for p in f.compiles for name in p.constants]
    graphs = [
        (p.graph_global, p.graph.factory) for f in frames for p in f.compiles if p.graph is not None
    ]
    lines = [
        _title("wiring: what `load` binds together"),
        "#: globals Dynamo installed in the frame's module: (name, kind, module)",
        f"INSTALLED = {modules!r}",
        "CONSTANTS = {"
        + ", ".join(f"{n!r}: {n}" for n in constants + _fallback_constants(frames))
        + "}",
        "GRAPHS = {" + ", ".join(f"{n!r}: {factory}" for n, factory in graphs) + "}",
        "FRAMES = [",
    ]
    for frame in frames:
        compiles = ", ".join(
            f"({p.where!r}, {p.guards_name}, IDS_{p.label}, {p.code_name}, NOT_CHECKED_{p.label})"
            for p in frame.compiles
        )
        fallback = frame.fallback_name or "None"
        lines.append(
            f"    {{'name': {frame.name!r}, 'role': {frame.role!r}, 'compiles': [{compiles}], 'fallback': {fallback}, 'installed_as': {frame.installed_as!r}{_home(frame)}}},"
        )
    lines.append("]")
    return "\n".join(lines) + "\n"


def _home(frame: FramePlan) -> str:
    """A library's frame: the module its code runs in and the function `load` routes to it, with
    its code's digest (`load` refuses another version of the library)."""
    text = f", 'module': {frame.module!r}" if frame.module else ""
    if frame.role == "resume" and frame.original.co_freevars:  # made per call by a factory
        text += f", 'freevars': {frame.original.co_freevars!r}"
    if frame.function:
        digest = program_runtime.code_digest(frame.original)
        text += f", 'function': {frame.function!r}, 'code': {digest!r}"
    if frame.closures:  # a decorator's wrappers sharing the code: each routed over its own cells
        digest = program_runtime.code_digest(frame.original)
        text += f", 'closures': {frame.closures!r}, 'code': {digest!r}"
    if frame.declined:  # how Dynamo ran it once every compile refused (`Frame.state`)
        text += f", 'declined': {frame.declined!r}"
    return text


def _fallback_constants(frames: list[FramePlan]) -> list[str]:
    return [name for f in frames if f.fallback is not None for name in f.fallback.constants]
