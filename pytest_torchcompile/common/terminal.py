"""What the plugin writes on pytest's terminal: its tables, and what a long step is doing.

`align` lays out both wings' end-of-run tables as plain text.


A cold compile of a small model takes tens of seconds on a loaded machine,
and a benchmark several passes of timing; without a word the run looks
hung. `Progress.stage("compiling with inductor")` says nothing for the first
`DELAY` seconds (most steps end sooner), then names the step and its elapsed
time: on a terminal one line, rewritten in place every second; in a log (not
a terminal, as CI) one line, then one a minute, so a log is not flooded.
When such a step ends it says how long it took. `Progress()` is silent: the
fixtures' objects work without pytest.

`write(text, final)` does the writing (the plugin's, through pytest's
terminal with output capture suspended); it is called from a timer thread.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pytest

#: seconds before a step is said at all.
DELAY = 3.0
#: seconds between two lines of the same step in a log (a terminal is updated every second).
LOG_EVERY = 60.0

Writer = Callable[[str, bool], None]


@dataclass(frozen=True)
class Progress:
    """Says what a long step is doing; silent without a writer."""

    write: Writer | None = None
    tty: bool = False
    label: str = ""
    delay: float = DELAY

    def named(self, label: str) -> Progress:
        """The same progress, each line opening with `label` (a test and its case)."""
        return Progress(self.write, self.tty, label, self.delay)

    @contextlib.contextmanager
    def stage(self, what: str) -> Iterator[None]:
        """Say `what` and its elapsed time if it lasts longer than `delay` seconds."""
        if self.write is None:
            yield
            return
        done = threading.Event()
        started = time.monotonic()
        ticker = threading.Thread(target=self._tick, args=(what, started, done), daemon=True)
        ticker.start()
        try:
            yield
        finally:
            done.set()
            ticker.join()

    def _tick(self, what: str, started: float, done: threading.Event) -> None:
        assert self.write is not None
        if done.wait(self.delay):
            return
        every = 1.0 if self.tty else LOG_EVERY
        while True:
            self.write(self._line(what, f"{time.monotonic() - started:.0f} s"), False)
            if done.wait(every):
                break
        self.write(self._line(what, f"done in {time.monotonic() - started:.1f} s"), True)

    def _line(self, what: str, when: str) -> str:
        return f"{self.label}: {what}: {when}" if self.label else f"{what}: {when}"


def for_config(config: pytest.Config) -> Progress:
    """The run's progress on pytest's terminal: silent under `-q` and in xdist workers
    (whose output no terminal shows), one rewritten line on a terminal, lines in a log."""
    plugins = config.pluginmanager
    terminal: pytest.TerminalReporter | None = plugins.get_plugin("terminalreporter")
    quiet = config.get_verbosity() < 0
    if terminal is None or quiet or hasattr(config, "workerinput"):
        return Progress()
    capture = plugins.get_plugin("capturemanager")
    tty = bool(getattr(terminal, "isatty", False))
    lock = threading.Lock()
    line_start: list[object] = []  # what pytest had written on the line our first line broke

    def write(text: str, final: bool) -> None:
        with lock, _uncaptured(capture):
            if not line_start:
                line_start.append(terminal.currentfspath)
            if tty:
                terminal.ensure_newline()  # a no-op while our own line is being rewritten
                terminal.rewrite(text, erase=True)
                if final:
                    terminal.write("\n")
            else:
                terminal.write_line(text)
            if final:
                _resume_line(terminal, line_start.pop())

    return Progress(write, tty)


def _resume_line(terminal: pytest.TerminalReporter, start: object) -> None:
    """Write again what began pytest's line (`test_m.py ` or `test_m.py::test_m `), so its
    next result lands where it would have."""
    if isinstance(start, Path):
        terminal.write(f"{os.path.relpath(start, terminal.startpath)} ")
    elif isinstance(start, str):
        terminal.write(start)
    else:
        return
    terminal.currentfspath = start


def _uncaptured(capture: object) -> contextlib.AbstractContextManager[None]:
    """Output capture suspended (as pytest's live logging does), so the line reaches the terminal."""
    if capture is None:
        return contextlib.nullcontext()
    return capture.global_and_fixture_disabled()  # type: ignore[attr-defined]


def align(
    header: Sequence[str], rows: Sequence[Sequence[str]], numbers_right: bool = False
) -> list[str]:
    """Columns two spaces apart, left-aligned; with `numbers_right` every column
    after the first is right-aligned (columns of numbers). No trailing blanks."""
    widths = [max(len(line[i]) for line in [header, *rows]) for i in range(len(header))]

    def fmt(cells: Sequence[str]) -> str:
        rest = (c.rjust(w) if numbers_right else c.ljust(w) for c, w in zip(cells[1:], widths[1:]))
        return "  ".join([cells[0].ljust(widths[0]), *rest]).rstrip()

    return [fmt(header), *(fmt(cells) for cells in rows)]
