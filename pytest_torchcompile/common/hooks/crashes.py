"""The plugin's own crashes: named as such, reported, never the end of the run.

Bad input has a message of its own everywhere else; what is left is a bug in
the plugin: an exception escaping a pytest hook would end the whole run with
INTERNALERROR, so hooks run their code under `guarded` instead, which turns
the exception into one line that says it is the plugin's fault, where in the
plugin it happened, and asks for a report. The session prints the lines in
the terminal summary and fails the run (a line from a test's report travels
with the report, `report_data.py`, so it reaches the xdist controller).
Nothing here imports torch.
"""

from __future__ import annotations

import contextlib
import traceback
from collections.abc import Iterator
from pathlib import Path

import pytest

from .report_data import attach, attached

PACKAGE_DIR = Path(__file__).resolve().parents[2]

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
def guarded_report(where: str, report: pytest.TestReport, key: str) -> Iterator[None]:
    """`guarded` for `pytest_runtest_makereport`: the line travels on the report under `key`
    (`report_data.py`), so an xdist controller sees its workers' errors (read them back in logreport)."""
    errors: list[str] = []
    with guarded(where, errors):
        yield
    for error in errors:
        attach(report, key, error)


def reported_errors(report: pytest.TestReport, key: str) -> list[str]:
    """The internal errors `guarded_report` attached to `report` under `key`."""
    return attached(report, key)
