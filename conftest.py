"""The project's own suite: `fixtures` importable from the rootdir, the docs' code blocks
collected as tests (tests/docs/examples.py says how each kind of block runs), and the slowest
test modules handed to xdist's workers first (tests/scheduling.py)."""

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


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: Any, log: Any) -> Any:
    return longest_first_scheduler(config, log)
