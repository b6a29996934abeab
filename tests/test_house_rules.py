"""The house rules of the package, read from its imports (every import, late ones included).

`_torch/` (the torch adapter) imports nothing of the plugin; `common/` (the
shared floor) imports neither wing; the snapshot wing and the perf wing never
import each other; inside a wing, each room imports only the rooms below it,
and inside a room with layers (the program's), each layer only the layers
below it; no module imports itself back through others (no loop).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.conftest import REPO

PACKAGE = REPO / "pytest_torchcompile"


def _module(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> set[str]:
    """Modules of this package that `path` imports, anywhere in the file."""
    module = _module(path)
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([node.module] if node.module else []))
            found.add(base)
            found.update(f"{base}.{a.name}" for a in node.names)
    known = {_module(p) for p in PACKAGE.rglob("*.py")}
    return {name for name in found if name in known and name != module}


GRAPH = {_module(p): _imports(p) for p in sorted(PACKAGE.rglob("*.py"))}


def _in(room: str, module: str) -> bool:
    return module == f"pytest_torchcompile.{room}" or module.startswith(
        f"pytest_torchcompile.{room}."
    )


def _crossings(source: str, target: str) -> list[str]:
    return [
        f"{m} -> {i}"
        for m, imported in GRAPH.items()
        if _in(source, m)
        for i in imported
        if _in(target, i)
    ]


def test_the_adapter_imports_nothing_of_the_plugin() -> None:
    assert not [
        f"{m} -> {i}"
        for m, imported in GRAPH.items()
        if _in("_torch", m)
        for i in imported
        if not _in("_torch", i)
    ]


def test_the_floor_imports_neither_wing() -> None:
    assert not _crossings("common", "snapshot") + _crossings("common", "perf")


def test_the_wings_do_not_import_each_other() -> None:
    assert not _crossings("snapshot", "perf") + _crossings("perf", "snapshot")


def test_no_import_loops() -> None:
    loops: list[list[str]] = []

    def visit(module: str, path: list[str]) -> None:
        for nxt in sorted(GRAPH.get(module, ())):
            if nxt == path[0]:
                loops.append([*path, nxt])
            elif nxt not in path and nxt > path[0]:  # each loop once, from its smallest module
                visit(nxt, [*path, nxt])

    for start in GRAPH:
        visit(start, [start])
    assert not loops, "\n".join(" -> ".join(loop) for loop in loops)


def test_the_graph_is_read() -> None:
    """The rules above hold because the imports were found, not because none were."""
    assert "pytest_torchcompile.common.capture" in GRAPH["pytest_torchcompile.snapshot.fixture"]
    assert "pytest_torchcompile._torch.trace" in GRAPH["pytest_torchcompile.common.capture"]


#: each wing's rooms, and the layers of a room that has them, from the bottom up: a room
#: imports only rooms below it (or itself).
LAYERS = {
    "snapshot": (
        ("emit", "fresh_process"),
        ("program",),
        ("artifacts",),
        ("spec",),
        ("files",),
        ("compare",),
        ("numerics",),
        ("precompile",),
        ("result", "case_table"),
        ("case", "distributed"),
        ("fixture",),
        ("session",),
        ("plugin",),
    ),
    "snapshot.program": (
        ("facts",),
        ("translation",),
        ("layout",),
        ("run",),
    ),
    "perf": (
        ("stats",),
        ("contention",),
        ("facts",),
        ("record",),
        ("timing", "gate"),
        ("gpu",),
        ("spec",),
        ("result", "report", "baseline"),
        ("case",),
        ("compile_time",),
        ("fixture",),
        ("session",),
        ("plugin",),
    ),
}


def _room(part: str, module: str) -> str | None:
    """The room of `part` (a wing, or a room with layers) that `module` is in, or None."""
    prefix = f"pytest_torchcompile.{part}."
    return module[len(prefix) :].split(".")[0] if module.startswith(prefix) else None


def _upward(part: str, graph: dict[str, set[str]]) -> list[str]:
    """The imports of `graph` from a room of `part` to a room on its own layer or above."""
    rank = {room: n for n, rooms in enumerate(LAYERS[part]) for room in rooms}
    return [
        f"{m} -> {i}"
        for m, imported in graph.items()
        if (source := _room(part, m)) is not None
        for i in imported
        if (target := _room(part, i)) is not None
        and target != source
        and rank[target] >= rank[source]
    ]


@pytest.mark.parametrize("part", sorted(LAYERS))
def test_each_wing_and_layered_room_imports_only_downwards(part: str) -> None:
    rooms = {_room(part, m) for m in GRAPH} - {None, "__init__"}
    assert rooms == {room for layer in LAYERS[part] for room in layer}, "every room has a layer"
    upward = _upward(part, GRAPH)
    assert not upward, "\n".join(upward)


@pytest.mark.parametrize(
    ("source", "target"),
    [
        ("snapshot.program.layout.writer", "snapshot.artifacts.catalogue"),
        ("snapshot.emit.guards", "snapshot.program.facts.reading"),
        ("snapshot.program.facts.reading", "snapshot.program.layout.writer"),
        ("snapshot.program.translation.bytecode", "snapshot.program.run.check"),
    ],
)
def test_an_import_back_up_would_be_found(source: str, target: str) -> None:
    """The program's room, its layers and the room below it are held to the rule, not skipped."""
    source, target = f"pytest_torchcompile.{source}", f"pytest_torchcompile.{target}"
    assert {source, target} <= set(GRAPH)
    planted = {**GRAPH, source: {target}}
    assert any(_upward(part, planted) for part in LAYERS)


def test_no_folder_is_a_hall() -> None:
    """A folder holds at most about a dozen modules (a newcomer reads its list at a glance)."""
    sizes = {
        str(folder.relative_to(PACKAGE.parent)): len(list(folder.glob("*.py")))
        for folder in [PACKAGE, *(p for p in PACKAGE.rglob("*") if p.is_dir())]
        if folder.name != "__pycache__"
    }
    assert max(sizes.values()) <= 14, sizes
