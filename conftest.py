"""The project's own suite: `fixtures` importable from the rootdir, and the docs' code blocks
collected as tests (tests/docs/examples.py says how each kind of block runs)."""

from __future__ import annotations

from sybil import Sybil

from tests.docs.examples import PROJECT, parse

pytest_collect_file = Sybil(
    parsers=[parse],
    patterns=["README.md", "CONTRIBUTING.md", "docs/*.md"],
    teardown=lambda namespace: namespace.pop(PROJECT + "holder", None),
    name="docs",
).pytest()
