"""The plugin's own per-test data, carried on test reports out of the user's way.

`report.user_properties` belongs to the user: `--junitxml` writes every entry
as a `<property>`. The plugin's data (case rows, snapshot writes, unused
files, its own crashes) travels instead in one attribute of the report,
which pytest serializes with the report, so an xdist controller reads its
workers' data as its own. Values are JSON-able (strings here).

During a test, `keep` puts data on the item; `carry` moves it onto the
test's call report, where `attach` adds more and `attached` reads it back.
"""

from __future__ import annotations

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
