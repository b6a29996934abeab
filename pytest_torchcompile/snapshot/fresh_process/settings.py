"""The fresh processes' settings: the time limit and the fork server (environment), the working folder.

`PTC_FRESH_PROCESS_TIMEOUT` (seconds, a positive finite number) overrides
each call's own limit; `PTC_FORK_SERVER=0` starts a new interpreter per call.
A value that is not one is a usage error at the session's start
(`settings_problem`), and fails the call that reads it if it was set later.
"""

from __future__ import annotations

import math
import os
import sys
from pathlib import Path

#: set to 0 to start every fresh process as a new interpreter (the slow isolation, no fork)
FORK_VARIABLE = "PTC_FORK_SERVER"
#: seconds a fresh process may run before it is killed (overrides the caller's limit)
TIMEOUT_VARIABLE = "PTC_FRESH_PROCESS_TIMEOUT"


class BadSetting(Exception):
    """An environment variable of the fresh processes holds a value they cannot use."""


def time_limit(default_s: float) -> float:
    """The caller's limit, or `PTC_FRESH_PROCESS_TIMEOUT`'s; BadSetting for a value that is not one."""
    given = os.environ.get(TIMEOUT_VARIABLE)
    if given is None:
        return default_s
    try:
        seconds = float(given)
    except ValueError:
        seconds = math.nan
    if not (math.isfinite(seconds) and seconds > 0):
        raise BadSetting(
            f"{TIMEOUT_VARIABLE}={given!r} is not a time limit: give a positive, finite number of "
            "seconds (e.g. 600 or 0.5), or unset it for each fresh process's default (600 to 900 s)"
        )
    return seconds


def settings_problem() -> str | None:
    """What is wrong with the fresh processes' environment variables, or None."""
    try:
        time_limit(1.0)
    except BadSetting as exc:
        return str(exc)
    given = os.environ.get(FORK_VARIABLE)
    if given not in (None, "0", "1"):
        return f"{FORK_VARIABLE}={given!r}: give 0 (a new interpreter per fresh process) or 1 (forked, the default)"
    return None


def forking() -> bool:
    """Whether fresh processes are forked from a server here (Linux, not turned off)."""
    return sys.platform == "linux" and os.environ.get(FORK_VARIABLE, "1") != "0"


def working_folder(fallback: Path) -> str:
    """This process's working folder, or `fallback` where it was deleted (a process must start somewhere)."""
    try:
        return os.getcwd()
    except OSError:
        return str(fallback)


def timed_out(limit: float, stderr_tail: str) -> str:
    """How a call killed at its time limit fails."""
    return f"(killed after {limit:g} s, the time limit; {TIMEOUT_VARIABLE} sets another):\n{stderr_tail}"
