"""The per-run session both wings build on: the hooks they would otherwise each repeat.

Each wing keeps its per-run state in a session object, as pytest's
`junitxml.py` does: made in `pytest_configure`, kept under a `StashKey`,
registered as a plugin (`open_session`) and unregistered in
`pytest_unconfigure` (`close_session`). `WingSession` does what both do the
same way: a wrong marker fails its test before the body runs; data kept on a
test travels on its call report; every hook's body runs `guarded`, so the
plugin's own crash becomes a line (`crashes.py`) that is printed at the end
and fails the run, wherever it happened (an xdist worker included). A wing
fills in `attach` (its data onto a call report), `collect` (read back from
every report), `finish` and `summary`.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import ClassVar, TypeVar

import pytest

from .crashes import guarded, guarded_report, reported_errors
from .markers import marker_problem
from .report_data import carry

SessionT = TypeVar("SessionT", bound="WingSession")


def open_session(
    config: pytest.Config, key: pytest.StashKey[SessionT], session: SessionT, name: str
) -> SessionT:
    """Keep `session` under `key` and register it as a plugin named `name`."""
    config.stash[key] = session
    config.pluginmanager.register(session, name)
    return session


def close_session(config: pytest.Config, key: pytest.StashKey[SessionT]) -> None:
    session = config.stash.get(key, None)
    if session is not None:
        config.pluginmanager.unregister(session)
        del config.stash[key]


class WingSession:
    """Per-run state of one wing; a pytest plugin object.

    `marker` and `fixture` name the wing's marker and fixture (for marker
    mistakes), `internal_property` the report data its crash lines travel
    under. `worker` is true in an xdist worker, which prints nothing.
    """

    marker: ClassVar[str]
    fixture: ClassVar[str]
    internal_property: ClassVar[str]

    def __init__(self, worker: bool) -> None:
        self.worker = worker
        self.internal_errors: list[str] = []

    # --- what a wing fills in ------------------------------------------------

    def marker_error(self, marker: pytest.Mark) -> str | None:
        """What is wrong with the marker's arguments, or None."""
        raise NotImplementedError

    def attach(self, report: pytest.TestReport, item: pytest.Item) -> None:
        """Put the test's data on its call report."""

    def collect(self, report: pytest.TestReport) -> None:
        """Read a report's data (here the xdist controller sees its workers' too)."""

    def finish(self, session: pytest.Session) -> None:
        """The end of the run, before the exit status is final."""

    def summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        """The wing's lines at the end of the run (never in an xdist worker)."""

    # --- the hooks -----------------------------------------------------------

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_call(self, item: pytest.Item) -> None:
        """A wrong marker fails its test before the body runs, used or not (see markers.py)."""
        problem = marker_problem(item, self.marker, self.fixture, self.marker_error)
        if problem is not None:
            pytest.fail(problem, pytrace=False)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        report = yield
        if call.when == "call":
            carry(item, report)
            with guarded_report("pytest_runtest_makereport", report, self.internal_property):
                self.attach(report, item)
        return report

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.internal_errors.extend(reported_errors(report, self.internal_property))
        with guarded("pytest_runtest_logreport", self.internal_errors):
            self.collect(report)

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        """The wing's end of run; the plugin's own crashes fail the run (they were reported, not raised)."""
        with guarded("pytest_sessionfinish", self.internal_errors):
            self.finish(session)
        if self.internal_errors and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        if not self.worker:
            with guarded("pytest_terminal_summary", self.internal_errors):
                self.summary(terminalreporter)
        for line in self.internal_errors:
            terminalreporter.write_line(line, red=True)
