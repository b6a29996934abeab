"""The program's facts as plain data: what the file needs beyond the trace, held by the case.

The trace holds the graphs, the kernels and the guards' code; the rest of
what a frame needs at run time lives in the process that compiled it
(`reading.py` reads it right after each compiled call). `ProgramFacts` keeps
it as names, shapes, import paths and code objects, never the live objects,
so the file can be written later, after they are gone. No torch import: the
artifact catalogue names `ProgramFacts` and loads with the plugin.
"""

from __future__ import annotations

import types
from dataclasses import dataclass, field

from ....common.capture_log import FrameKey


@dataclass(frozen=True)
class Installed:
    """A global Dynamo installed that a frame compile reads, and how the file provides it."""

    name: str
    kind: (
        str  # "compiled_fn", "resume", "module", "object" (imported by name), "builtins", "refused"
    )
    target: str  # the module's name, the object's module:qualname, or what it is for "refused"


@dataclass(frozen=True)
class IdFinder:
    """How the file finds again the object whose id a guard compares (ids differ in every process)."""

    source: str  # the guarded expression, `G['F']`, `type(L['self'])`
    #: "import" (target is module:qualname), "source" (evaluate at load), "cell" (evaluate at load
    #: over the cells of the closure target imports), "skip" (target says why)
    how: str
    target: str


@dataclass(frozen=True)
class FrameFacts:
    """One frame compile: what it is, what it reads from its globals, how its guards' ids are found."""

    key: FrameKey
    name: str
    role: str  # "entry", "resume" (a function Dynamo made to resume after a graph break), "nested"
    installed: tuple[Installed, ...]
    ids: tuple[IdFinder, ...]
    resumes: tuple[
        tuple[str, types.CodeType], ...
    ]  # resume functions its code calls: (installed name, code)
    #: the tensor constants its graphs read: (name, the expression that rebuilds the value)
    constants: tuple[tuple[str, str], ...] = ()
    #: why a constant its graphs read cannot go into the file ("" when none)
    constants_problem: str = ""
    #: the module whose globals its code runs in, where they are not the entry's (a library's frame)
    module: str | None = None
    #: a frame of a function called from compiled code: that function's module:qualname (routed)
    function: str | None = None
    #: the same, where closures share the frame's code: those this compile runs for (the one it was
    #: made for, or all where its guards read none of their cells)
    closures: tuple[str, ...] = ()
    #: why the frame cannot be placed: its globals or its function not found by name ("" when it can)
    home_problem: str = ""


@dataclass(frozen=True)
class TensorSpec:
    """A tensor's layout: enough to check a state_dict against it and to make a random one."""

    name: str
    shape: tuple[int, ...]
    stride: tuple[int, ...]
    dtype: str
    device: str
    requires_grad: bool
    #: the values, flat, where a random tensor would not do: a buffer of integers or booleans
    #: (indices, counts, masks), or one a state_dict leaves out (non-persistent); small ones only
    values: tuple[object, ...] | None = None
    #: the import path of its class where it is a tensor subclass (a quantized weight)
    subclass: str | None = None
    #: a subclass's inner tensors and the source of its metadata (`__tensor_flatten__`), which the
    #: script makes it again from (`__tensor_unflatten__`); no source: the script cannot
    inner: tuple[TensorSpec, ...] = ()
    metadata: str | None = None


@dataclass(frozen=True)
class Slot:
    """A parameter or buffer slot that holds no tensor of its own: None (`Linear(bias=False)`), or
    the tensor registered first at `tied_to` (tied weights)."""

    name: str
    tied_to: str | None


@dataclass(frozen=True)
class SubmoduleLayout:
    """One module of the model's tree: its class, parameters, buffers and plain settings."""

    path: str  # "" for the root, "fc1", "mlp.0"
    class_path: str | None  # or NO_MODULE, or SAME_MODULE + the path it was first seen at
    parameters: tuple[TensorSpec | Slot, ...]
    buffers: tuple[TensorSpec | Slot, ...]
    settings: tuple[tuple[str, str], ...]  # (attribute, Python source that builds it)
    #: held in its parent's `__dict__` as a plain attribute, not registered in its `_modules`
    #: (torchrl's losses hold their networks so)
    attribute: bool = False


@dataclass(frozen=True)
class StructureSpec:
    """An argument of a container type registered with torch's pytree (a tensorclass, a
    TensorDict): its type's import path, the source of its context, and its children, each a
    tensor's layout, another container or a literal's source; the script makes it again as
    torch's `tree_unflatten` does, over random tensors."""

    type_path: str
    context: str
    children: tuple[TensorSpec | StructureSpec | str, ...]


@dataclass(frozen=True)
class ArgSpec:
    """One argument of the first call: a tensor's layout, a literal, a container of those, or
    what it was."""

    name: str  # the position ("0") or keyword
    tensor: TensorSpec | None
    literal: str | None
    type_name: str
    structure: StructureSpec | None = None


@dataclass(frozen=True)
class CompileSettings:
    """The compile's settings the file depends on (`refusals.check_case` and the case section read them)."""

    fallback_random: bool = False
    cudagraphs: bool = False
    #: Inductor's settings the kernels were compiled with (`_torch.config.KERNEL_BUILD_KEYS`)
    kernel_build: dict[str, object] = field(default_factory=dict)


@dataclass(frozen=True)
class CaseFacts:
    """The case: what was compiled, how it is found and built again, what it was called with."""

    entry_name: str
    entry_path: str | None  # module:qualname of the function, or of the module's class
    method: bool  # a module's case (its forward, or its call when `wrapped`)
    entry_code: types.CodeType  # the function's or the forward's code (`load` checks it)
    module: tuple[SubmoduleLayout, ...]
    args: tuple[ArgSpec, ...]
    kwargs: tuple[ArgSpec, ...]
    settings: CompileSettings
    #: Dynamo compiled a call of the module (its wrap of a module whose forward it skips, such as
    #: torch.nn's own layers), not the forward: the file's entry frame calls the module
    wrapped: bool = False


@dataclass
class ProgramFacts:
    """All read for one case so far: the case's facts (once), each frame compile's, or why reading failed."""

    case: CaseFacts | None = None
    frames: dict[FrameKey, FrameFacts] = field(default_factory=dict)
    #: the first failure to read a fact (the writer refuses, naming it; the test never fails for it)
    error: str | None = None

    def frozen(self) -> ProgramFacts:
        """A copy as of now: later calls of the case add to these facts, not to the copy."""
        return ProgramFacts(self.case, dict(self.frames), self.error)

    def resumes(self) -> dict[str, types.CodeType]:
        """The resume functions the frames' code calls: installed name -> code."""
        return {name: code for facts in self.frames.values() for name, code in facts.resumes}
