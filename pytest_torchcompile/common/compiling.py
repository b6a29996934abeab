"""The step both fixtures share: compile with the marker's options, run under the capture, say what failed.

`compile_with` hands the model to `torch.compile` (which checks its
arguments before compiling anything: only a rejection there is the marker's
usage error); `compiling` runs the calls that compile under the capture and
turns any error into a `CaseFailure` that names the pipeline stage, or says
that the compiled code itself failed at run time, with Dynamo's own compile
time (not the call's run time) in the object it yields. `check_backend`
refuses an unknown backend name, an Inductor option that does not exist, or
`mode=`/`options=` that a backend other than Inductor would ignore, before
anything runs, naming the wrong one. Each message names the marker.
"""

from __future__ import annotations

import contextlib
import difflib
import inspect
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import torch

from .._torch import config, dynamo, errors, metrics
from .capture import capturing
from .capture_log import CaptureLog
from .diagnose import (
    RUNTIME,
    compile_stage,
    describe,
    first_line,
    importing,
    rejected_arguments,
    user_frame,
)
from .named_cases import CaseFailure, FixtureFailure
from .options import CompileOptions


def check_backend(options: CompileOptions) -> None:
    """A backend name must be registered, and take the mode and options given; Inductor options must exist."""
    if not isinstance(options.backend, str):
        return
    marker, backend = options.marker, options.backend
    known = dynamo.registered_backends()
    if backend not in known:
        raise FixtureFailure(
            f"usage error: {marker}(backend={backend!r}) is not a registered backend; known: {', '.join(known)}"
        )
    if backend == "inductor":
        if options.options:
            _check_inductor_options(options)
        return
    for keyword, given in (
        ("options", bool(options.options)),
        ("mode", options.mode not in (None, "default")),
    ):
        if given and keyword not in dynamo.backend_parameters(backend):
            raise FixtureFailure(
                f"usage error: {marker}({keyword}=...) does nothing with backend {backend!r}: torch.compile hands "
                f"{keyword} to the backend, and {backend!r} ignores it ({keyword} is Inductor's); "
                f"use backend='inductor' or drop {keyword}="
            )


def _check_inductor_options(options: CompileOptions) -> None:
    """torch's own message lists all ~600 options; name the wrong one and its near misses."""
    known = config.inductor_options()
    for name in options.options or {}:
        if name not in known:
            close = difflib.get_close_matches(name, known, n=3)
            hint = f"; did you mean {', '.join(map(repr, close))}?" if close else ""
            raise FixtureFailure(
                f"usage error: {options.marker}(options=...) has unknown Inductor option {name!r}{hint} "
                f"(all options: {config.OPTIONS_LISTING})"
            )


def compile_with(model: Any, options: CompileOptions) -> Any:
    """`torch.compile(model, ...)`; only torch.compile's own argument checks make it the marker's usage error."""
    try:
        return torch.compile(model, **options.compile_kwargs())
    except Exception as exc:  # torch.compile checks its arguments before compiling anything
        raise CaseFailure(compile_call_failure(exc, options.marker)) from exc


def compile_call_failure(exc: BaseException, marker: str) -> str:
    """What `torch.compile(model, ...)` raised, before any compile: only its own argument checks blame the marker."""
    if rejected_arguments(exc):
        return (
            f"usage error: torch.compile rejected the {marker} marker's settings: {first_line(exc)}"
        )
    module = importing(exc)
    where = f"while importing {module}" if module else "before compiling anything"
    return f"torch.compile(...) raised {where}:\n{describe(exc)}"


#: what a model may raise that is its own failure, not the plugin's: `sys.exit()` included
MODEL_ERRORS = (Exception, SystemExit)


def unusable_output(output: object) -> CaseFailure | None:
    """A model output that holds no values yet (a generator or a coroutine): the model's
    mistake, said as such before any comparison blames the compiler; None otherwise."""
    if not (
        inspect.isgenerator(output) or inspect.isasyncgen(output) or inspect.iscoroutine(output)
    ):
        return None
    kind = type(output).__name__
    name = getattr(output, "__qualname__", kind)
    if inspect.iscoroutine(output):
        output.close()  # never awaited: no "coroutine was never awaited" warning
    return CaseFailure(
        f"usage error: the model returned a {kind} ({name}), whose values do not exist until it is "
        "consumed, so eager and compiled cannot be compared or timed: return the values "
        "(a tensor, or a tuple or list of them, e.g. tuple(...) of the generator)"
    )


def eager_failed(exc: BaseException) -> CaseFailure:
    """The model itself raised: say so, with its line, before anyone blames the compiler."""
    return CaseFailure(
        f"eager run failed (the model itself raised, before any compile):\n{user_frame(exc)}{first_line(exc)}"
    )


def compile_failed(
    exc: BaseException, options: CompileOptions, normalize: Callable[[str], str] = str
) -> CaseFailure:
    """A graph break under fullgraph with its reason, else the stage that raised (or run time) and the original error."""
    if options.fullgraph and errors.is_graph_break(exc):
        return CaseFailure(
            f"fullgraph=True but Dynamo had to break the graph:\n{normalize(str(exc)).strip()}"
        )
    return CaseFailure(compiled_run_failure(exc, options.backend_name, normalize))


def compiled_run_failure(
    exc: BaseException, backend_name: str, clean: Callable[[str], str] = str
) -> str:
    """A compiled call that raised: the compile stage that failed, or the compiled code failing at run time.

    `clean` normalizes the error's text (torch's paths); the user's frame is shown as it is.
    """
    stage = compile_stage(exc, backend_name)
    if stage == RUNTIME:
        return (
            f"compiled code failed at run time (backend {backend_name}): the compile finished, and the code it "
            f"produced raised when called (eager ran the same inputs without error):\n{user_frame(exc)}{clean(describe(exc))}"
        )
    return f"compile failed in stage: {stage} (backend {backend_name})\n{clean(describe(exc))}"


@dataclass
class CompileTime:
    """Seconds Dynamo spent compiling frames during a `compiling` block (its own metrics)."""

    seconds: float = 0.0


@contextlib.contextmanager
def compiling(
    log: CaptureLog,
    options: CompileOptions,
    *settings: Mapping[str, object] | None,
    pin_host: bool = True,
    normalize: Callable[[str], str] = str,
) -> Iterator[CompileTime]:
    """Run compiled calls under the capture, with Inductor `settings` patched in.

    Any error inside becomes a `CaseFailure` naming the stage (see
    `compile_failed`); the yielded `CompileTime` holds Dynamo's compile
    seconds once the block ends.
    """
    spent = CompileTime()
    metrics.clear()
    try:
        with capturing(log, pin_host), config.patched(*settings):
            yield spent
    except Exception as exc:
        raise compile_failed(exc, options, normalize) from exc
    finally:
        spent.seconds = metrics.frame_compile_seconds()
