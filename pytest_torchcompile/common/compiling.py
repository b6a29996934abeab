"""What both fixtures say about `torch.compile` itself: the backend check and the compile failures.

`compile_snapshot` and `compile_benchmark` compile the same way, so they
check a backend name, its mode and options the same way, and name what
failed the same way: `torch.compile(...)` refusing the marker's settings (a
usage error, only when torch's own argument checks raised), a compile stage
failing, or the compiled code raising at run time. `marker` names the
marker to blame.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from typing import Any

import pytest

from .._torch import config, dynamo
from .diagnose import RUNTIME, compile_stage, describe, first_line, importing, rejected_arguments, user_frame
from .options import CompileOptions


def check_backend(spec: CompileOptions, marker: str) -> None:
    """A backend name must be registered, and take the mode and options given; Inductor options must exist."""
    if not isinstance(spec.backend, str):
        return
    known = dynamo.registered_backends()
    if spec.backend not in known:
        pytest.fail(f"usage error: {marker}(backend={spec.backend!r}) is not a registered backend; known: {', '.join(known)}", pytrace=False)
    if spec.backend == "inductor":
        if spec.options:
            _check_inductor_options(spec.options, marker)
        return
    for keyword, given in (("options", bool(spec.options)), ("mode", spec.mode not in (None, "default"))):
        if given and keyword not in dynamo.backend_parameters(spec.backend):
            pytest.fail(
                f"usage error: {marker}({keyword}=...) does nothing with backend {spec.backend!r}: torch.compile hands "
                f"{keyword} to the backend, and {spec.backend!r} ignores it ({keyword} is Inductor's); "
                f"use backend='inductor' or drop {keyword}=",
                pytrace=False,
            )


def _check_inductor_options(options: Any, marker: str) -> None:
    """torch's own message lists all ~600 options; name the wrong one and its near misses."""
    known = config.inductor_options()
    for name in options:
        if name not in known:
            close = difflib.get_close_matches(name, known, n=3)
            hint = f"; did you mean {', '.join(map(repr, close))}?" if close else ""
            pytest.fail(
                f"usage error: {marker}(options=...) has unknown Inductor option {name!r}{hint} "
                f"(all options: {config.OPTIONS_LISTING})",
                pytrace=False,
            )


def compile_call_failure(exc: BaseException, marker: str) -> str:
    """What `torch.compile(model, ...)` raised, before any compile: only its own argument checks blame the marker."""
    if rejected_arguments(exc):
        return f"usage error: torch.compile rejected the {marker} marker's settings: {first_line(exc)}"
    module = importing(exc)
    where = f"while importing {module}" if module else "before compiling anything"
    return f"torch.compile(...) raised {where}:\n{describe(exc)}"


def compiled_run_failure(exc: BaseException, backend_name: str, clean: Callable[[str], str] = str) -> str:
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
