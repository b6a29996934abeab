"""Stale snapshot folders: those left by renamed or deleted tests.

A folder holding snapshot files is stale when no test can own it: no test
file it could belong to exists any more, or every one that exists was
collected in full by this run and none has a test of that name (any
parametrization: a parameter collected only on some machines, like a CUDA
device, keeps its folder). A test file this run did not collect, or
collected only in part (`file.py::test_x`), proves nothing: folders it could
own are never stale.

Nor is a folder named as a placeholder resolves (`2.11`, `py3.12`,
`cuda-sm90`, `meta`: `placeholders.names_a_set`) walked, unless a collected
test file lies in it (`tests/cpu/test_ops.py`): it is a snapshot set of
another setting, left inside this one's folder when the setting changed
(`snapshots/{torch}/{device}/py{python}` -> `snapshots/{torch}/{device}`
leaves each Python's set there), and its folders would read as the folders of
deleted test files.

The `Inventory` of what a run collected is built where collection happens
(the process itself, or each xdist worker, which sends it to the controller);
the controller judges once, after every worker is done.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .paths import base_name, is_artifact_file, reads_as_written
from .placeholders import names_a_set


@dataclass
class Inventory:
    """Folders of the tests a run collected, selected or not."""

    tests: set[Path] = field(default_factory=set)  # each test's folder (with its parametrization)
    functions: set[Path] = field(
        default_factory=set
    )  # <module folder>/[<Class>/...]<function name>
    modules: set[Path] = field(default_factory=set)  # folders of test files collected in full
    deselected: bool = False  # -k, -m, --deselect, stepwise or a plugin dropped a collected test
    snapshots: bool = (
        False  # a collected test uses compile_model: only then is the snapshot folder ours to judge
    )

    def add(self, test_dir: Path, function_dir: Path, module_dir: Path) -> None:
        self.tests.add(test_dir)
        self.functions.add(function_dir)
        self.modules.add(module_dir)

    def holds(self, folder: Path) -> bool:
        """A collected test file's folder lies in `folder`, or `folder` in a collected test's folder."""
        mine = self.tests | self.functions | self.modules
        return any(p == folder or p.is_relative_to(folder) for p in mine) or any(
            parent in mine for parent in folder.parents
        )

    def merge(self, other: Inventory) -> None:
        self.tests |= other.tests
        self.functions |= other.functions
        self.modules |= other.modules
        self.deselected = self.deselected or other.deselected
        self.snapshots = self.snapshots or other.snapshots

    def rebased(self, old: Path, new: Path) -> Inventory:
        """The same tests as seen in the snapshot set at `new` (another device's) instead of `old`."""
        if old == new:
            return self

        def move(paths: set[Path]) -> set[Path]:
            return {new / p.relative_to(old) for p in paths}

        return Inventory(
            move(self.tests),
            move(self.functions),
            move(self.modules),
            self.deselected,
            self.snapshots,
        )

    def to_json(self) -> dict[str, Any]:
        """Plain lists and a flag: what an xdist worker can send to its controller."""
        return {
            "tests": sorted(map(str, self.tests)),
            "functions": sorted(map(str, self.functions)),
            "modules": sorted(map(str, self.modules)),
            "deselected": self.deselected,
            "snapshots": self.snapshots,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Inventory:
        tests, functions, modules = (
            {Path(p) for p in data.get(key, ())} for key in ("tests", "functions", "modules")
        )
        return cls(
            tests, functions, modules, bool(data.get("deselected")), bool(data.get("snapshots"))
        )


@dataclass(frozen=True)
class StaleFolder:
    path: Path
    reason: str


def find_stale(root: Path, rootdir: Path, inventory: Inventory) -> list[StaleFolder]:
    """Every folder under `root` with snapshot files that no test can own, with why."""
    if (
        not inventory.snapshots
        or not root.is_dir()
        or rootdir.resolve().is_relative_to(root.resolve())
    ):
        return []  # a suite without compile_model tests, or a snapshot root holding the sources: not ours to judge
    found = []
    for folder in _snapshot_folders(root, inventory):
        reason = _why_stale(folder, root, rootdir, inventory)
        if reason is not None:
            found.append(StaleFolder(folder, reason))
    return found


def _snapshot_folders(root: Path, inventory: Inventory) -> Iterable[Path]:
    """Folders whose artifact-named files all read as the plugin's (`reads_as_written`);
    another setting's set (`<root>/py3.12/...`, `<root>/2.11/...`) is not walked."""
    for dirpath, dirnames, filenames in os.walk(root):  # does not follow symlinks
        dirnames[:] = sorted(
            d
            for d in dirnames
            if not d.startswith(".") and not _another_set(Path(dirpath, d), inventory)
        )
        own = [
            Path(dirpath, name)
            for name in filenames
            if is_artifact_file(name) and not os.path.islink(os.path.join(dirpath, name))
        ]
        if own and all(reads_as_written(path) for path in own):
            yield Path(dirpath)


def _another_set(folder: Path, inventory: Inventory) -> bool:
    """A folder named as a placeholder resolves that holds no collected test and lies in none:
    a set of its own, not a test's folder."""
    return names_a_set(folder.name) and not inventory.holds(folder)


def _why_stale(folder: Path, root: Path, rootdir: Path, inventory: Inventory) -> str | None:
    if folder in inventory.tests or folder.parent in inventory.tests:
        return None  # a test's folder or one of its case folders: unused files are that test's business
    modules = [
        a
        for a in folder.parents
        if a != root
        and a.is_relative_to(root)
        and (a in inventory.modules or _source(a, root, rootdir).is_file())
    ]
    if not modules:
        return "its test file is gone"
    if any(module not in inventory.modules for module in modules):
        return None  # a test file this run did not collect in full may own it
    if any(_names_a_test(folder, module, inventory) for module in modules):
        return None
    return f"no test in {_source(modules[0], root, rootdir).relative_to(rootdir)} has this name"


def _names_a_test(folder: Path, module: Path, inventory: Inventory) -> bool:
    """`folder` read as a test's folder or a case folder of one, relative to a test file's folder."""
    parts = folder.relative_to(module).parts
    readings = [parts[:-1] + (base_name(parts[-1]),)]
    if len(parts) >= 2:
        readings.append(parts[:-2] + (base_name(parts[-2]),))
    return any(module.joinpath(*reading) in inventory.functions for reading in readings)


def _source(module_dir: Path, root: Path, rootdir: Path) -> Path:
    return Path(f"{rootdir / module_dir.relative_to(root)}.py")
