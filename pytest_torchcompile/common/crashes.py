"""The plugin's own crashes: named as such, reported, and never the end of the run.

Bad input has a message of its own everywhere else. What is left is a bug
in the plugin; an exception escaping a pytest hook would end the whole run
with INTERNALERROR, so hooks run their code under `guarded` instead, which
turns the exception into one line that says it is the plugin's fault, where
in the plugin it happened, and asks for a report. The session prints the
lines in the terminal summary and fails the run (a line from a test's report
travels with the report, so it reaches the xdist controller). Nothing here
imports torch.
"""

from __future__ import annotations

import contextlib
import traceback
from collections.abc import Iterator
from pathlib import Path
from typing import Any

PACKAGE_DIR = Path(__file__).resolve().parent.parent

REPORT = (
    "this is a bug in pytest-torchcompile, not in your test: please report it to the pytest-torchcompile "
    "maintainers with this message and your torch and pytest versions"
)


def internal_error(exc: BaseException, where: str) -> str:
    """`pytest-torchcompile internal error in <where>: <type>: <message> (at <file>:<line> in <function>); please report ...`."""
    text = str(exc).strip().splitlines()
    return f"pytest-torchcompile internal error in {where}: {type(exc).__name__}: {text[0] if text else ''}{_place(exc)}; {REPORT}"


def _place(exc: BaseException) -> str:
    """The innermost frame inside the plugin's package, relative to it."""
    for frame in reversed(traceback.extract_tb(exc.__traceback__)):
        path = Path(frame.filename)
        if path.is_relative_to(PACKAGE_DIR):
            return f" (at pytest_torchcompile/{path.relative_to(PACKAGE_DIR)}:{frame.lineno} in {frame.name})"
    return ""


@contextlib.contextmanager
def guarded(where: str, errors: list[str]) -> Iterator[None]:
    """Run a hook's code; an exception becomes a line in `errors` instead of an INTERNALERROR."""
    try:
        yield
    except Exception as exc:  # the plugin's own bug: say so, keep the run going
        errors.append(internal_error(exc, where))


@contextlib.contextmanager
def guarded_report(where: str, report: Any, key: str) -> Iterator[None]:
    """`guarded` for `pytest_runtest_makereport`: the line travels in `report.user_properties`
    under `key`, so an xdist controller sees its workers' errors (read them back in logreport)."""
    errors: list[str] = []
    with guarded(where, errors):
        yield
    report.user_properties.extend((key, error) for error in errors)


def reported_errors(report: Any, key: str) -> list[str]:
    """The internal errors `guarded_report` attached to `report` under `key`."""
    return [str(value) for name, value in report.user_properties if name == key]
