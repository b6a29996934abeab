"""Marker mistakes found before a test runs, for both markers.

A marker's keywords are parsed when its fixture is first called, so a
marker on a test that never calls the fixture would never be checked, and
two markers on one test would let one silently win. `marker_problem` looks
at a collected test before its body runs and names what is wrong; each
wing's plugin fails the test with it (a usage error, not a traceback).
Nothing here imports torch.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

import pytest


def marker_problem(
    item: pytest.Item, marker: str, fixture: str, parse: Callable[[pytest.Mark], str | None]
) -> str | None:
    """A usage error about `item`'s `marker` (None when there is none).

    `parse` checks the marker's keywords and returns the reworded error or
    None. A marker on a class or module may reach tests that do not use the
    fixture (it does nothing there, by design); one on the test itself that
    the test cannot use is a mistake.
    """
    if not isinstance(item, pytest.Function):
        return None
    marks = list(item.iter_markers_with_node(marker))
    if not marks:
        return None
    per_node = Counter(node.nodeid for node, _ in marks)
    node_id, count = per_node.most_common(1)[0]
    if count > 1:
        where = "this test" if node_id == item.nodeid else f"{node_id or 'the rootdir conftest'}"
        return (
            f"usage error: @pytest.mark.{marker} is applied {count} times to {where}; keep one "
            "(only the closest would be used, and keywords are not merged)"
        )
    error = parse(marks[0][1])
    if error is not None:
        return f"usage error: {error}"
    on_test = any(node is item for node, _ in marks)
    if on_test and fixture not in item.fixturenames:
        return (
            f"usage error: @pytest.mark.{marker} does nothing here: the test does not use the `{fixture}` fixture; "
            f"add `{fixture}` to its arguments or remove the marker"
        )
    return None
