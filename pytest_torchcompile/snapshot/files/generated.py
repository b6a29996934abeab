"""The snapshot set marked as generated for the code host, so a pull request shows it collapsed.

Snapshot tools do this (Jest's `__snapshots__` are collapsed by GitHub's linguist): a
`.gitattributes` with `* linguist-generated=true` at the set's root folds every snapshot
file's diff in a pull request's file list, where a reviewer opens the one they want; git
itself diffs them as before, and the failure block and `diff` report are unchanged.

The plugin writes that file when an update writes into the set and no `.gitattributes`
is there, and rewrites it only while it begins with the plugin's first line: a
`.gitattributes` of the user's (or one they edited) is never touched.
"""

from __future__ import annotations

from pathlib import Path

from ...common.files import atomic_write_text
from .ownership import write_problem

NAME = ".gitattributes"
FIRST_LINE = "# written by pytest-torchcompile: the snapshot files below are generated"
TEXT = f"""{FIRST_LINE}, so a code host
# (GitHub's linguist) collapses their diffs in a pull request; git diffs them as always.
# To see them expanded, make this file yours: replace this text with "* -linguist-generated".
# The plugin rewrites this file only while it begins with the line above.
* linguist-generated=true
"""


def mark_generated(root: Path) -> None:
    """Write the set's `.gitattributes` where none is, or where the plugin's own is out of date.

    Best effort: the snapshots are written already, and a folder that refuses this file
    refuses nothing a test needs.
    """
    path = root / NAME
    if write_problem(path, root) is not None or path.is_symlink():
        return
    try:
        if path.exists() and not path.read_text(encoding="utf-8").startswith(FIRST_LINE):
            return  # the user's
        if not path.exists() or path.read_text(encoding="utf-8") != TEXT:
            atomic_write_text(path, TEXT)
    except (OSError, UnicodeDecodeError):
        return
