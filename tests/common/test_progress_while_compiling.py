"""A long compile or benchmark says what it is doing: on a terminal, in a CI log, never under -q."""

from __future__ import annotations

import threading
import time

import pytest

from pytest_torchcompile.common.terminal import Progress


def recorded(tty: bool, seconds: float) -> list[tuple[str, bool]]:
    lines: list[tuple[str, bool]] = []
    progress = Progress(lambda text, final: lines.append((text, final)), tty, delay=0.2)
    with progress.named("test_m.py::test_m case_0").stage("compiling with inductor"):
        time.sleep(seconds)
    return lines


def test_a_short_step_says_nothing() -> None:
    assert recorded(tty=True, seconds=0.05) == []


def test_a_long_step_on_a_terminal_is_one_line_rewritten_every_second() -> None:
    lines = recorded(tty=True, seconds=1.5)
    assert [text for text, final in lines if not final] == [
        "test_m.py::test_m case_0: compiling with inductor: 0 s",
        "test_m.py::test_m case_0: compiling with inductor: 1 s",
    ]
    text, final = lines[-1]
    assert final and text.startswith(
        "test_m.py::test_m case_0: compiling with inductor: done in 1."
    )


def test_a_long_step_in_a_log_is_two_lines() -> None:
    lines = recorded(tty=False, seconds=0.5)
    assert [final for _, final in lines] == [False, True]  # a line a minute: not one a second


def test_without_a_writer_nothing_is_said(capsys: pytest.CaptureFixture[str]) -> None:
    """`Progress()` (a fixture's object outside pytest) starts no timer and prints nothing,
    even for a step longer than its delay, where a progress with a writer speaks."""
    threads = set(threading.enumerate())
    with Progress(delay=0.0).stage("compiling"):
        time.sleep(0.05)
        assert set(threading.enumerate()) == threads
    assert capsys.readouterr() == ("", "")
    lines: list[tuple[str, bool]] = []
    with Progress(lambda text, final: lines.append((text, final)), delay=0.0).stage("compiling"):
        time.sleep(0.05)
    assert lines and lines[-1][1]


SLOW = """
import time
import pytest, torch

def slow_backend(gm, example_inputs):
    time.sleep(4)  # a slow compile
    return gm.forward

@pytest.mark.compile_snapshot(backend=slow_backend, artifacts=("summary",))
def test_m(compile_model):
    compile_model(torch.sin, torch.ones(3))
"""


def test_the_plugin_says_a_slow_compile_and_is_quiet_under_q(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_m=SLOW)
    result = pytester.runpytest("--update-snapshots")  # not a terminal: a log's lines
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            "test_m.py::test_m case_0: compiling with slow_backend: 3 s",
            "test_m.py::test_m case_0: compiling with slow_backend: done in 4.* s",
        ]
    )
    quiet = pytester.runpytest("-q")
    quiet.assert_outcomes(passed=1)
    assert "compiling with" not in quiet.stdout.str()
