"""The deletion rule, enforced here and only here.

The plugin deletes or overwrites only files it can show it wrote: its own
file names (artifact files that begin as it writes them, and temp files of
the exact name `common/files.py` writes), in folders of its own collected tests, under a
snapshot root inside the rootdir, never through a symbolic link out of the
root; and it deletes nothing in a folder it shares with files it does not
know (such a folder is left whole: its files are reported, not deleted).

`root_problem` refuses, when pytest starts, a root that could break the rule
(outside the rootdir, the rootdir itself, a link out of it, one holding test
sources or syrupy's snapshots); `write_problem` and `delete_problem` are
asked before each write and each deletion.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from .paths import is_own_file, reads_as_written

#: syrupy's snapshot folders: syrupy deletes what it does not know in them.
SYRUPY_FOLDER = "__snapshots__"
ROOT_FIX = "name a folder of its own inside the rootdir, e.g. snapshots (the default)"


def root_problem(root: Path, rootdir: Path) -> str | None:
    """Why `root` cannot be a snapshot root, with the fix; None when it can."""
    plain, top = Path(os.path.normpath(root)), Path(os.path.normpath(rootdir))
    if plain == top:
        return f"is the rootdir itself, which holds the test sources: {ROOT_FIX}"
    if not plain.is_relative_to(top):
        return f"is outside the rootdir {top}: {ROOT_FIX}"
    real, real_top = Path(os.path.realpath(plain)), Path(os.path.realpath(top))
    if real == real_top or not real.is_relative_to(real_top):
        return (
            f"leads through a symbolic link to {real}, outside the rootdir {real_top}: {ROOT_FIX}"
        )
    if SYRUPY_FOLDER in plain.relative_to(top).parts:
        return f"is inside a {SYRUPY_FOLDER} folder, which syrupy owns (it deletes files it did not write there): {ROOT_FIX}"
    return _foreign_content(plain)


def _foreign_content(root: Path) -> str | None:
    """Test sources or syrupy's folders under `root` (links are not followed)."""
    for dirpath, dirnames, filenames in os.walk(root):
        if SYRUPY_FOLDER in dirnames:
            found = Path(dirpath, SYRUPY_FOLDER)
            return f"holds syrupy's snapshot folder {found}, whose files syrupy deletes when it does not know them: {ROOT_FIX}"
        source = next((name for name in sorted(filenames) if name.endswith(".py")), None)
        if source is not None:
            found = Path(dirpath, source)
            return (
                f"holds Python files ({found}): snapshots never sit among test sources; {ROOT_FIX}"
            )
    return None


def write_problem(path: Path, root: Path, show: Callable[[Path], str] = str) -> str | None:
    """Why the plugin may not write `path`, or None (`show` words a path for the message).

    The folder must lie under `root` once links are followed (the file itself
    may be a link: writing replaces the link, never its target).
    """
    folder = Path(os.path.realpath(path.parent))
    if folder.is_relative_to(os.path.realpath(root)):
        return None
    link = _first_link(path.parent, root) or path.parent
    return (
        f"{show(link)} leads to {folder}, outside the snapshot folder {show(root)}: "
        "pytest-torchcompile neither writes nor deletes through a link out of it; "
        "replace the link with a folder"
    )


def delete_problem(path: Path, root: Path, show: Callable[[Path], str] = str) -> str | None:
    """Why the plugin may not delete `path`, or None: its own name and first bytes, a regular file,
    under `root` once links are followed, in a folder holding only the plugin's files."""
    if not is_own_file(path.name) or path.is_symlink():
        return f"{path.name} is not a file pytest-torchcompile writes"
    if not reads_as_written(path):
        return (
            f"{path.name} does not begin as pytest-torchcompile writes it (another tool's file "
            "of the same name?), so it is not deleted: delete it yourself if it is a snapshot"
        )
    problem = write_problem(path, root, show)
    if problem is not None:
        return problem
    strangers = foreign_files(path.parent)
    if strangers:
        return (
            f"its folder also holds {', '.join(strangers[:3])}{', ...' if len(strangers) > 3 else ''}, "
            "which pytest-torchcompile did not write, so it deletes nothing there: "
            "delete the file yourself, or move the other files out"
        )
    return None


def foreign_files(folder: Path) -> list[str]:
    """Names in `folder` that are neither the plugin's files nor folders (sorted)."""
    try:
        with os.scandir(folder) as entries:
            return sorted(
                e.name
                for e in entries
                if not e.is_dir(follow_symlinks=False)
                and not (is_own_file(e.name) and e.is_file(follow_symlinks=False))
            )
    except OSError:
        return []


def _first_link(folder: Path, root: Path) -> Path | None:
    """The first symbolic link on the way from `root` down to `folder`."""
    try:
        parts = folder.relative_to(root).parts
    except ValueError:
        return None
    current = root
    for part in parts:
        current = current / part
        if current.is_symlink():
            return current
    return None
