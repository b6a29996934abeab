"""pytest entry point (`pytest11`): loads the two wings' plugin modules.

The snapshot wing (`compile_snapshot`, `compile_model`, `--update-snapshots`)
and the perf wing (`compile_benchmark`, the perf gate) each register their
options, marker, fixture and per-run session. The one hook here is shared
by both: a fixture call that fails (a usage error, a failing case) raises
`FixtureFailure`, which becomes the test's failure with its message alone.
Neither this module nor the two it loads imports torch: `pytest --help` in
a project without compiled models stays fast.
"""

from __future__ import annotations

from collections.abc import Generator

import pytest

from .common.named_cases import FixtureFailure

pytest_plugins = ["pytest_torchcompile.snapshot.plugin", "pytest_torchcompile.perf.plugin"]


@pytest.hookimpl(wrapper=True, trylast=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, None, None]:
    """A failing fixture call fails the test with the fixture's message, no traceback."""
    try:
        return (yield)
    except FixtureFailure as exc:
        message = str(exc)
    pytest.fail(message, pytrace=False)  # outside `except`: no chained traceback in the report
