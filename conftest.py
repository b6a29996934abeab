"""The project's own suite: `fixtures` importable from the rootdir, the docs' code blocks
collected as tests (tests/docs/examples.py says how each kind of block runs), the slowest
test modules handed to xdist's workers first (tests/scheduling.py), and a committed suite's
tests left to its stability module's cold run where that run covers them all
(tests/stability/committed.py, `run_here_instead`)."""

from __future__ import annotations

from typing import Any

import pytest
from sybil import Sybil

from tests.docs.examples import PROJECT, parse
from tests.scheduling import longest_first_scheduler

pytest_collect_file = Sybil(
    parsers=[parse],
    patterns=["README.md", "CONTRIBUTING.md", "docs/*.md"],
    teardown=lambda namespace: namespace.pop(PROJECT + "holder", None),
    name="docs",
).pytest()


@pytest.hookimpl(trylast=True)  # after `-k` and `-m` chose: a cold run they dropped covers nothing
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    from tests.stability.committed import run_here_instead

    updating = bool(
        config.getoption("update_snapshots", False)
        or config.getoption("torchcompile_update_text_only", False)
    )
    deselected = run_here_instead(items, updating)
    if deselected:
        config.hook.pytest_deselected(items=deselected)
        dropped = {id(item) for item in deselected}
        items[:] = [item for item in items if id(item) not in dropped]


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: Any, log: Any) -> Any:
    return longest_first_scheduler(config, log)
