"""torch's compiler bisector: which Inductor pass, lowering or decomposition breaks a case.

`CompilerBisector.do_bisect(check)` calls `check` repeatedly, switching
Inductor's subsystems off between calls, and returns the first one whose
application makes `check` fail. Its progress goes to stdout, swallowed here.
"""

from __future__ import annotations

import contextlib
import io
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Bisected:
    """The bisector's answer: the backend, the subsystem and which application of it."""

    backend: str
    subsystem: str | None
    bisect_number: int | None
    debug_info: str | None


def bisect(passes: Callable[[], bool]) -> Bisected | None:
    """The first subsystem application under which `passes()` is False; None when none is found."""
    from torch._inductor.compiler_bisector import CompilerBisector

    with contextlib.redirect_stdout(io.StringIO()):
        result = CompilerBisector.do_bisect(passes)
    if result is None:
        return None
    debug = None if result.debug_info is None else str(result.debug_info)
    return Bisected(result.backend, result.subsystem or None, result.bisect_number or None, debug)
