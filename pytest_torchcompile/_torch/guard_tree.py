"""Dynamo's guards as data, read from its cache entries right after a compile.

`_debug_get_cache_entry_list(code)` lists a code object's cache entries
(most recent first), one per frame compile; each entry's guard manager is a
tree: leaf guards (`get_leaf_guards`, each with `verbose_code_parts`), child
managers per guarded source (`get_child_managers`, `get_source`) and, at the
root, epilogue lambda guards (shape guards of dynamic dimensions). The tree
is walked in Dynamo's check order into plain `GuardRow`s. Nothing is
recompiled; the tree already exists. The import of torch happens on the
first read, so `GuardRow` is usable without torch.
"""

from __future__ import annotations

import types
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from .formats import split_comment

#: the kind of the rows of the root's epilogue lambda guards.
EPILOGUE = "EPILOGUE"
#: the source of the manager of the frame's globals, whose children are sorted by name.
GLOBALS = "G"


@dataclass(frozen=True)
class GuardRow:
    """One guard as Dynamo installed it: kind, what it guards, its code and why."""

    kind: str  # leaf guard class (TENSOR_MATCH, ID_MATCH, ...) or EPILOGUE
    source: str  # the guarded value, `L['x']`; `L` for guards on the whole frame
    code: str  # Dynamo's code part without its comment
    comment: str  # the user line that installed the guard
    type_id: int  # id() of the guarded value's class, for tensor subclasses compared by identity


def cached_guards(code: types.CodeType) -> Iterator[tuple[int, int, tuple[GuardRow, ...]]]:
    """(frame id, compile id, rows) of every cache entry of `code` that has a compile id."""
    from torch._dynamo.eval_frame import _debug_get_cache_entry_list

    for entry in _debug_get_cache_entry_list(code):
        if entry.compile_id is None:
            continue
        yield (
            entry.compile_id.frame_id,
            entry.compile_id.frame_compile_id or 0,
            guard_rows(entry.guard_manager.root),
        )


def guard_rows(root: Any) -> tuple[GuardRow, ...]:
    """The tree in Dynamo's check order, then the epilogue; a relational guard
    (listed under each value it relates) once."""
    rows = list(_walk(root))
    for guard in root.get_epilogue_lambda_guards():
        rows.extend(_leaf_rows(EPILOGUE, guard, "L", 0))
    first: dict[tuple[str, str], GuardRow] = {}
    for row in rows:
        first.setdefault((row.kind, row.code), row)
    return tuple(first.values())


def _walk(manager: Any) -> Iterator[GuardRow]:
    type_id = id(manager.get_type_of_guarded_value())
    for leaf in manager.get_leaf_guards():
        yield from _leaf_rows(type(leaf).__name__, leaf, manager.get_source(), type_id)
    children = manager.get_child_managers()
    if (
        manager.get_source() == GLOBALS
    ):  # by name: Dynamo's order moves with counters in names (normalize.sort_global_guards)
        children = sorted(children, key=lambda child: child.get_source())
    for child in children:
        yield from _walk(child)


def _leaf_rows(kind: str, leaf: Any, source: str, type_id: int) -> Iterator[GuardRow]:
    for part in leaf.verbose_code_parts():
        code, comment = split_comment(part)
        yield GuardRow(kind, source, code, comment, type_id)
