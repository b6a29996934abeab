"""What the plugin carries on test reports: its own per-test data, and its own crashes.

`report.user_properties` belongs to the user: `--junitxml` writes every entry
as a `<property>`. The plugin's data (case rows, snapshot writes, unused
files, crash lines) travels instead in one attribute of the report, which
pytest serializes with the report, so an xdist controller reads its workers'
data as its own. During a test `keep` puts data on the item, `carry` moves
it onto the call report, where `attach` adds more and `attached` reads it.

The plugin's own crashes are named as such, reported, and never the end of
the run. Bad input has a message of its own everywhere else; what is left is
a bug in the plugin: an exception escaping a pytest hook would end the whole run
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

import pytest

#: the report attribute that holds the plugin's data: {key: [value, ...]}
ATTRIBUTE = "torchcompile_data"

_kept = pytest.StashKey[dict[str, list[str]]]()


def keep(item: pytest.Item, key: str, value: str) -> None:
    """Data of a running test, to travel on its call report (`carry`)."""
    item.stash.setdefault(_kept, {}).setdefault(key, []).append(value)


def carry(item: pytest.Item, report: Any) -> None:
    """Move the data kept on `item` onto `report` (the call report)."""
    for key, values in item.stash.get(_kept, {}).items():
        for value in values:
            attach(report, key, value)
    item.stash[_kept] = {}


def attach(report: Any, key: str, value: str) -> None:
    report.__dict__.setdefault(ATTRIBUTE, {}).setdefault(key, []).append(value)


def attached(report: Any, key: str) -> list[str]:
    """The values attached to `report` under `key` (none on a report of another plugin)."""
    data = getattr(report, ATTRIBUTE, None)
    return list(data.get(key, ())) if isinstance(data, dict) else []


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
def guarded_report(where: str, report: Any, key: str) -> Iterator[None]:
    """`guarded` for `pytest_runtest_makereport`: the line travels on the report under `key`
    (`report_data`), so an xdist controller sees its workers' errors (read them back in logreport)."""
    errors: list[str] = []
    with guarded(where, errors):
        yield
    for error in errors:
        attach(report, key, error)


def reported_errors(report: Any, key: str) -> list[str]:
    """The internal errors `guarded_report` attached to `report` under `key`."""
    return attached(report, key)
