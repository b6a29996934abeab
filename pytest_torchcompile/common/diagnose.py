"""Say what an exception out of torch.compile is, for the failure text.

Four different things raise out of a compiled call, and a reader must
know which: the marker's settings were refused by `torch.compile` itself (a
usage error); compiling failed (Dynamo tracing, AOTAutograd, Inductor
lowering, the C++/Triton compile of generated kernels, or the backend
compiling the captured graph); the compile finished and the code it
produced raised when called; or a warning was turned into an error (`-W
error`, `filterwarnings`) somewhere on the way, torch's own imports included.

What torch's errors look like (their types, what wraps what, the torch files
on their tracebacks) is `_torch/errors.py`'s knowledge; this module turns its
answers into the stage names and texts a reader sees.
"""

from __future__ import annotations

import sys
import sysconfig
import traceback
from pathlib import Path

from .._torch import errors
from .._torch.errors import chain, innermost

__all__ = [
    "RUNTIME",
    "chain",
    "compile_stage",
    "describe",
    "first_line",
    "importing",
    "innermost",
    "is_warning",
    "rejected_arguments",
    "user_frame",
    "user_traceback",
]

DYNAMO = "Dynamo tracing"
AOT = "AOTAutograd"
LOWERING = "Inductor lowering"
KERNEL_COMPILE = "C++/Triton compile"
RUNTIME = "run time"

#: the longest exception text quoted in a failure (torch lists ~600 options in one line).
MAX_MESSAGE = 600

_STAGES = {
    errors.KERNEL_COMPILE: KERNEL_COMPILE,
    errors.LOWERING: LOWERING,
    errors.AOT_AUTOGRAD: AOT,
}


def is_warning(exc: BaseException) -> bool:
    return isinstance(innermost(exc), Warning)


def compile_stage(exc: BaseException, backend_name: str) -> str:
    """The stage that raised `exc` while compiling with `backend_name`; `RUNTIME` when the compile had finished."""
    where = errors.raised_in(exc)
    if where is not None:
        return _STAGES[where]
    if not errors.is_compile_error(exc):
        return RUNTIME
    if errors.is_backend_failure(exc) and backend_name != "inductor":
        return f"backend {backend_name}"
    return DYNAMO


def rejected_arguments(exc: BaseException) -> bool:
    """Whether `torch.compile(...)` refused its own arguments.

    Anything else raised by the call (a warning turned into an error while
    torch imports Inductor, an import error) is not the marker's fault.
    """
    if isinstance(exc, Warning) or importing(exc):
        return False
    return errors.raised_by_argument_check(exc)


def importing(exc: BaseException) -> str | None:
    """The module torch was importing when `exc` was raised, as a path under site-packages, or None."""
    modules = [f.filename for f in traceback.extract_tb(exc.__traceback__) if f.name == "<module>"]
    return _short_path(modules[0]) if modules else None


def _short_path(filename: str) -> str:
    parts = Path(filename).parts
    return (
        "/".join(parts[parts.index("site-packages") + 1 :])
        if "site-packages" in parts
        else filename
    )


def describe(exc: BaseException) -> str:
    """The original error, shortened, with what a reader needs to tell where it came from.

    A C++ compiler failure shows the compiler's error lines, not its command
    line; a warning turned into an error says so and how to let it through.
    """
    for error in chain(exc):
        output = compiler_output(error)
        if output:
            return f"{type(error).__name__}: the C++ compiler failed:\n{output}"
    inner = innermost(exc)
    text = first_line(inner)
    if isinstance(inner, Warning):
        raised_at = _raised_at(inner)
        text += (
            f"\n(a {type(inner).__name__} turned into an error by -W error or a filterwarnings setting"
            f"{', raised at ' + raised_at if raised_at else ''}; if it is torch's own warning, let it through with "
            f"a filterwarnings entry such as `ignore::{type(inner).__name__}:torch.*`)"
        )
    return text


def compiler_output(exc: BaseException, lines: int = 8) -> str:
    """The error lines of a kernel compiler's failure (the compiler's output, not its command line), or ''."""
    output = errors.compiler_output(exc)
    if output is None:
        return ""
    found = [
        line.strip() for line in output.splitlines() if "error" in line.lower()
    ] or output.strip().splitlines()
    return "\n".join(f"  {line[:300]}" for line in found[:lines])


def _raised_at(exc: BaseException) -> str:
    frames = traceback.extract_tb(exc.__traceback__)
    return f"{_short_path(frames[-1].filename)}:{frames[-1].lineno}" if frames else ""


def first_line(exc: BaseException) -> str:
    """`Type: message`, the message's first paragraph on one line, at most `MAX_MESSAGE` characters.

    A message may hold a multi-line repr (a module's) mid-sentence, so the
    paragraph is joined rather than cut at its first newline; a long one
    keeps its start and its end, where the reason usually is.
    """
    paragraph = str(exc).strip().split("\n\n")[0]
    text = " ".join(line.strip() for line in paragraph.splitlines() if line.strip())
    if len(text) > MAX_MESSAGE:
        head, tail = MAX_MESSAGE * 2 // 3, MAX_MESSAGE // 3
        text = f"{text[:head]} [... {len(text) - head - tail} characters ...] {text[-tail:]}"
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def user_frame(exc: BaseException) -> str:
    """`  File "model.py", line 12, in forward` for the innermost frame of the user's code, or ''.

    Frames in torch, in the plugin and in the standard library are skipped,
    so the line shown is the model's own call that failed.
    """
    frames = traceback.extract_tb(exc.__traceback__)
    ours = [f for f in frames if not _library_file(f.filename)]
    if not ours:
        return ""
    frame = ours[-1]
    code = f"\n    {frame.line}" if frame.line else ""
    return f'  File "{frame.filename}", line {frame.lineno}, in {frame.name}{code}\n'


def user_traceback(exc: BaseException) -> str:
    """The traceback through the user's code alone (the innermost frames when none is), then the error."""
    frames = traceback.extract_tb(exc.__traceback__)
    ours = [f for f in frames if not _library_file(f.filename)] or frames[-3:]
    listing = "".join(traceback.format_list(ours))
    return f"Traceback (most recent call last):\n{listing}{''.join(traceback.format_exception_only(exc))}"


def _library_file(filename: str) -> bool:
    """In torch, the plugin or the standard library (not site-packages: a model may live there)."""
    if not filename or filename.startswith("<"):
        return True
    path = Path(filename).resolve()
    roots = [Path(__file__).resolve().parent.parent]
    torch = sys.modules.get("torch")
    if torch is not None and torch.__file__:
        roots.append(Path(torch.__file__).resolve().parent)
    stdlib = Path(sysconfig.get_paths()["stdlib"]).resolve()
    in_stdlib = path.is_relative_to(stdlib) and "site-packages" not in path.parts
    return in_stdlib or any(path.is_relative_to(root) for root in roots)
