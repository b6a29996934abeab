"""Where the file's imports come from: the folders of modules a fresh interpreter may not find.

A model defined in a test module (`test_timm.py`, which pytest imported by
putting its folder on `sys.path`) or in a project's own package imports in
the process that compiled it, not in `python program.py` run from another
folder. The file imports by name first and, where that fails, looks in the
folder each such module was imported from when the file was written
(`IMPORT_ROOTS`, read by the runtime's `import_object`).
"""

from __future__ import annotations

import re
import site
import sys
import sysconfig
from pathlib import Path

#: a `module:qualname` the file names (ENTRY, MODULE_LAYOUT, IDS, INSTALLED, `import_object(...)`)
_IMPORTED = re.compile(r"'([A-Za-z_][\w.]*):[\w.]*'")
#: the line the writer puts IMPORT_ROOTS after (the case section's last table)
ANCHOR = re.compile(r"^KERNEL_BUILD = .*$", re.M)
NOTE = (
    "#: where a module the file imports was found when it was written, by top-level name, for a "
    "fresh interpreter that does not find it (a test module): tried after what is installed"
)


def with_import_roots(text: str) -> str:
    """The file's text with `IMPORT_ROOTS` after the case's tables, where any module needs one."""
    roots = import_roots(text)
    if not roots:
        return text
    line = f"{NOTE}\nIMPORT_ROOTS = {roots!r}"
    return ANCHOR.sub(lambda m: f"{m.group(0)}\n{line}", text, count=1)


def import_roots(text: str) -> dict[str, str]:
    """For each top-level module the text imports from a folder outside the installed packages and
    the standard library, that folder (the one on `sys.path` it was found through)."""
    installed = _installed_folders()
    roots = {}
    for top in sorted({name.partition(".")[0] for name in _IMPORTED.findall(text)}):
        module = sys.modules.get(top)
        location = getattr(module, "__file__", None)
        if not isinstance(location, str):
            continue
        path = Path(location).resolve()
        folder = path.parent.parent if path.name == "__init__.py" else path.parent
        if not any(folder == base or base in folder.parents for base in installed):
            roots[top] = str(folder)
    return roots


def _installed_folders() -> list[Path]:
    paths = sysconfig.get_paths()
    found = [paths[k] for k in ("stdlib", "platstdlib", "purelib", "platlib") if k in paths]
    found += site.getsitepackages() + [site.getusersitepackages()]
    return [Path(p).resolve() for p in found]
