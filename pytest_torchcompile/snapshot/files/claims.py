"""Which collected test owns which snapshot folder.

Every process (each xdist worker included) collects every test, so each
knows every test's folder before any test runs. A test's folder is worked
out once, at collection (`TestFolder`), relative to the snapshot root, so it
names the same folder in every snapshot set (one per torch version and
device). `Claims` holds them all and answers, for one test about to write:
does another test share its folder, is one of its case folders another
test's, and may a subfolder of its folder belong to another test.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from .paths import base_name, module_folder, segment, test_folder


def owner_of(item: pytest.Item) -> str:
    """The test's node id; with its file's path where the node id has none.

    pytest gives a test file outside the rootdir a node id without its path
    (`::test_x`), so `a/test_m.py::test_x` and `b/test_m.py::test_x` would
    look like one test.
    """
    return f"{item.path}{item.nodeid}" if item.nodeid.startswith("::") else item.nodeid


def classes_of(item: pytest.Item) -> tuple[str, ...]:
    return tuple(node.name for node in item.listchain() if isinstance(node, pytest.Class))


@dataclass(frozen=True)
class TestFolder:
    """A test's snapshot folder relative to the snapshot root, and whose it is.

    `relative` is the test's own folder (with its parametrization),
    `function` the folder of its function name, `module` its test file's.
    """

    __test__ = False  # not a pytest test class, whatever its name

    relative: Path
    function: Path
    module: Path
    owner: str

    @classmethod
    def of(cls, item: pytest.Item, rootdir: Path) -> TestFolder:
        path, classes, here = Path(str(item.path)), classes_of(item), Path()
        name = getattr(item, "originalname", item.name)
        return cls(
            test_folder(here, rootdir, path, classes, item.name),
            test_folder(here, rootdir, path, classes, name),
            module_folder(here, rootdir, path),
            owner_of(item),
        )

    def under(self, root: Path) -> Path:
        """The folder in the snapshot set at `root`."""
        return root / self.relative


@dataclass
class Claims:
    """The folders of the tests a run collected, relative to the snapshot root.

    `owners`: folder key -> node ids of the snapshot tests (marked, using
    `compile_model`) collected for it; a key is case-folded on a file system
    that does not tell case apart. `known`: every collected test's folder.
    `modules`: folders of the test files collected in full; `partial`: of
    those named as `file.py::test` arguments (collected in part).
    """

    rootdir: Path
    folds_case: bool = False
    owners: dict[str, list[str]] = field(default_factory=dict)
    known: set[Path] = field(default_factory=set)
    modules: set[Path] = field(default_factory=set)
    partial: set[Path] = field(default_factory=set)

    def add(self, folder: TestFolder, writes_snapshots: bool) -> None:
        self.known.add(folder.relative)
        self.modules.add(folder.module)
        if writes_snapshots:
            self.owners.setdefault(self._key(folder.relative), []).append(folder.owner)

    def clash(self, folder: TestFolder, cases: list[str], shown: str) -> str | None:
        """Why the test may not write its folder (shown as `shown`), else None."""
        return self._shared(folder, shown) or self._case_clash(folder, cases, shown)

    def _shared(self, folder: TestFolder, shown: str) -> str | None:
        """Another collected test has this folder: both are refused, whichever runs first."""
        others = [o for o in self.owners.get(self._key(folder.relative), []) if o != folder.owner]
        if not others:
            return None
        first, second = sorted([others[0], folder.owner])
        where = (
            " on this file system, which does not tell upper from lower case"
            if self.folds_case
            else ""
        )
        return (
            f"snapshot folder {shown} would be shared by {first} and {second}{where}; "
            "rename one of them (two tests never share snapshot files)"
        )

    def _case_clash(self, folder: TestFolder, cases: list[str], shown: str) -> str | None:
        """One of the test's case folders is another test's folder.

        Only known once the cases ran (a case is named by the call). The other
        test is a collected one, or, in a run that did not collect its file in
        full, a test or class that file defines with the case's name.
        """
        if len(cases) < 2:  # a single case keeps its files in the test's own folder
            return None
        for name in cases:
            case_folder = folder.relative / segment(name)
            other = self._test_at(case_folder) or self._uncollected_test(folder.relative, name)
            if other is not None:
                return (
                    f"case {name!r} of {folder.owner} would write snapshot folder {shown}/{segment(name)}, "
                    f"which is the folder of {other}; rename the case (a case never shares a folder with a test)"
                )
        return None

    def _test_at(self, relative: Path) -> str | None:
        """A collected snapshot test whose folder is `relative` or lies inside it."""
        key = self._key(relative)
        for owned, tests in sorted(self.owners.items()):
            if owned == key or owned.startswith(key + "/"):
                return tests[0]
        return None

    def _uncollected_test(self, relative: Path, case: str) -> str | None:
        """`relative` doubles as the folder of a test file this run did not collect in full,
        and that file defines a test or class named as the case."""
        source = self.rootdir / Path(f"{relative}.py")
        if not source.is_file() or (relative in self.modules and relative not in self.partial):
            return None
        try:
            tree = ast.parse(source.read_bytes())
        except (OSError, SyntaxError, ValueError):
            return None
        names = {
            node.name
            for node in ast.walk(tree)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
        }
        name = base_name(case)
        return f"{source.relative_to(self.rootdir)}::{name}" if name in names else None

    def maybe_other_test(self, relative: Path, sub: Path) -> bool:
        """`sub` (inside the test folder `relative`) is a collected test's folder, or
        `relative` doubles as a test file's folder.

        `tests/test_a.py::test_x` and `tests/test_a/test_x.py::test_foo` map to
        `<root>/tests/test_a/test_x` and `<root>/tests/test_a/test_x/test_foo`.
        """
        return sub in self.known or Path(f"{self.rootdir / relative}.py").exists()

    def _key(self, relative: Path) -> str:
        text = relative.as_posix()
        return text.casefold() if self.folds_case else text
