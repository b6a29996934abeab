"""The plugin's own data on test reports, kept apart from the user's.

`report.user_properties` belongs to the user: `--junitxml` writes every entry
as a `<property>`. The plugin's data (case rows, snapshot writes, unused
files, crash lines) travels instead in one attribute of the report, which
pytest serializes with the report, so an xdist controller reads its workers'
data as its own. During a test `keep` puts data on the item, `carry` moves
it onto the call report, where `attach` adds more and `attached` reads it.
"""

from __future__ import annotations

import pytest

#: the report attribute that holds the plugin's data: {key: [value, ...]}
ATTRIBUTE = "torchcompile_data"

_kept = pytest.StashKey[dict[str, list[str]]]()


def keep(item: pytest.Item, key: str, value: str) -> None:
    """Data of a running test, to travel on its call report (`carry`)."""
    item.stash.setdefault(_kept, {}).setdefault(key, []).append(value)


def carry(item: pytest.Item, report: pytest.TestReport) -> None:
    """Move the data kept on `item` onto `report` (the call report)."""
    for key, values in item.stash.get(_kept, {}).items():
        for value in values:
            attach(report, key, value)
    item.stash[_kept] = {}


def attach(report: pytest.TestReport, key: str, value: str) -> None:
    report.__dict__.setdefault(ATTRIBUTE, {}).setdefault(key, []).append(value)


def attached(report: pytest.TestReport, key: str) -> list[str]:
    """The values attached to `report` under `key` (none on a report of another plugin)."""
    data = getattr(report, ATTRIBUTE, None)
    return list(data.get(key, ())) if isinstance(data, dict) else []
