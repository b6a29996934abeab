"""The step both fixtures share: compile with the marker's options, run under the capture, say what failed.

`compile_with` hands the model to `torch.compile` (which checks its
arguments before compiling anything); `compiling` runs the calls that
compile under the capture and turns any error into a `CaseFailure` that
names the pipeline stage, with Dynamo's own compile time (not the call's
run time) in the object it yields. `check_backend` refuses an unknown
backend name or Inductor option before anything runs, naming the wrong one.
"""

from __future__ import annotations

import contextlib
import difflib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import torch

from .._torch import config, dynamo, errors, metrics
from .capture import capturing
from .cases import CaseFailure, FixtureFailure
from .diagnose import compile_stage, first_line, innermost, user_frame
from .options import CompileOptions
from .records import CaptureLog


def check_backend(options: CompileOptions) -> None:
    """A backend name must be registered, and Inductor options must exist; say which do."""
    if not isinstance(options.backend, str):
        return
    known = dynamo.registered_backends()
    if options.backend not in known:
        raise FixtureFailure(f"usage error: {options.marker}(backend={options.backend!r}) is not a registered backend; known: {', '.join(known)}")
    if options.backend == "inductor" and options.options:
        _check_inductor_options(options)


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
    """`torch.compile(model, ...)`; a rejection of the settings is a usage error of the marker."""
    try:
        return torch.compile(model, **options.compile_kwargs())
    except Exception as exc:  # torch.compile checks its arguments before compiling anything
        raise CaseFailure(f"usage error: torch.compile rejected the marker's settings: {first_line(exc)[:300]}") from exc


def eager_failed(exc: BaseException) -> CaseFailure:
    """The model itself raised: say so, with its line, before anyone blames the compiler."""
    return CaseFailure(f"eager run failed (the model itself raised, before any compile):\n{user_frame(exc)}{first_line(exc)}")


def compile_failed(exc: BaseException, options: CompileOptions, normalize: Callable[[str], str] = str) -> CaseFailure:
    """A graph break under fullgraph with its reason, else the stage that raised and the original error."""
    if options.fullgraph and errors.is_graph_break(exc):
        return CaseFailure(f"fullgraph=True but Dynamo had to break the graph:\n{normalize(str(exc)).strip()}")
    stage = compile_stage(exc, options.backend_name, not isinstance(options.backend, str))
    return CaseFailure(f"compile failed in stage: {stage} (backend {options.backend_name})\n{normalize(first_line(innermost(exc)))}")


@dataclass
class CompileTime:
    """Seconds Dynamo spent compiling frames during a `compiling` block (its own metrics)."""

    seconds: float = 0.0


@contextlib.contextmanager
def compiling(
    log: CaptureLog,
    options: CompileOptions,
    *settings: Mapping[str, Any] | None,
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
