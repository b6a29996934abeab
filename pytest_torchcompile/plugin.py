"""pytest entry point (`pytest11`): loads the two wings' plugin modules.

The snapshot wing (`compile_snapshot`, `compile_model`, `--update-snapshots`)
and the perf wing (`compile_benchmark`, the perf gate) each register their
options, marker, fixture and per-run session. The one hook here is shared
by both: a fixture call that fails (a usage error, a failing case) raises
`FixtureFailure`, which becomes the test's failure with its message alone.
Neither this module nor the two it loads imports torch: `pytest --help` in
a project without compiled models stays fast. With `TORCH_TRACE=dir` set
(torch's trace for tlparse), each test's compiles go to a folder of its own
under `dir` (see `trace_folder`); torch is imported then, as the trace needs it.
"""

from __future__ import annotations

import hashlib
import os
import re
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


def pytest_configure(config: pytest.Config) -> None:
    """`TORCH_TRACE` naming a file (not a folder) would fail every compile at run time: said once, here."""
    trace = os.environ.get("TORCH_TRACE")
    if trace and os.path.exists(trace) and not os.path.isdir(trace):
        raise pytest.UsageError(
            f"TORCH_TRACE={trace} is a file, not a folder: torch writes its trace files into "
            "the folder TORCH_TRACE names (created when missing); point it at a folder, or unset it"
        )


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Generator[None, object, object]:
    """Under `TORCH_TRACE`, the test's trace file lands in a folder of its own (setup to teardown)."""
    if not os.environ.get("TORCH_TRACE"):
        return (yield)
    from ._torch.trace import trace_files_in

    with trace_files_in(trace_folder(item.nodeid), item.nodeid):
        return (yield)


def trace_folder(nodeid: str) -> str:
    """A folder name for a test: its node id with `/` and `::` as `-`, other unsafe characters as `_`.

    A short hash of the node id follows where characters were replaced, or
    where a `-` could have been another character (a `-` in the file's path,
    a `/` or `::` in a parameter id), so two tests never share a folder
    (`test_a[x/y]`, `test_a[x-y]`, `test_a[x::y]` and `test_a[x_y]`).
    """
    readable = nodeid.replace("::", "-").replace("/", "-")
    safe = re.sub(r"[^A-Za-z0-9._\-\[\]]", "_", readable)[:150]
    path, _, rest = nodeid.partition("::")
    parameters = rest.partition("[")[2]
    if safe == readable and "-" not in path and "/" not in parameters and "::" not in parameters:
        return safe
    return f"{safe}-{hashlib.sha256(nodeid.encode()).hexdigest()[:8]}"
