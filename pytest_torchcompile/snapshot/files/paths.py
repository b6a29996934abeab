"""Where a test's snapshots live, and which files there are the plugin's.

Layout: `<root>/<test file without .py>/[<Class>/...]<test name>[/<case>]/<artifact>.<ext>`.

Test, class and case names become one path segment each, escaped so that
distinct names never share a folder: a name made of safe characters is
kept as it is (every committed snapshot path stays where it was); `%`, the
characters Windows or POSIX forbid (`\\ / : * ? " < > |`), control
characters, a leading `.` (no `..`, no hidden folders) and trailing dots and
spaces (Windows drops them) are percent-encoded, and so is the first letter
of a name Windows reserves for a device (`con`, `nul`, `com1`, `lpt1.x`, ...,
in any case), so `unquote` gives the name back. A segment longer than
`MAX_SEGMENT_BYTES` keeps its start and ends in `%~` and a hash of the
whole name: an escape is always `%` and two hex digits, so a shortened name
never equals an escaped one.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
from functools import cache
from pathlib import Path

from ...common.files import temp_target
from ..artifacts.catalogue import ARTIFACT_EXTENSIONS

#: Well under the 255 bytes most file systems allow, with room for temp-file names.
MAX_SEGMENT_BYTES = 150
_UNSAFE = frozenset('\\/:*?"<>|%')
_HASH_MARK = "%~"
#: Windows opens a device, not a file, for these names, with any extension and in any case.
_WINDOWS_DEVICES = frozenset(
    {"CON", "PRN", "AUX", "NUL", *(f"{port}{n}" for port in ("COM", "LPT") for n in range(1, 10))}
)

#: The only file names the plugin writes into a snapshot folder.
ARTIFACT_FILENAMES = frozenset(f"{artifact}.{ext}" for artifact, ext in ARTIFACT_EXTENSIONS.items())


def artifact_filename(artifact: str) -> str:
    return f"{artifact}.{ARTIFACT_EXTENSIONS[artifact]}"


def segment(name: str) -> str:
    """A test, class or case name as one path segment, distinct for distinct names."""
    escaped = _escape(name)
    if escaped and len(escaped.encode("utf-8")) <= MAX_SEGMENT_BYTES:
        return escaped
    digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return _cut(escaped, MAX_SEGMENT_BYTES - len(_HASH_MARK) - len(digest)) + _HASH_MARK + digest


def _escape(name: str) -> str:
    parts = [
        "%2E"
        if i == 0 and c == "."
        else _pct(c)
        if c in _UNSAFE or ord(c) < 32 or ord(c) == 127
        else c
        for i, c in enumerate(name)
    ]
    end = len(parts)
    while end > 0 and parts[end - 1] in (".", " "):
        end -= 1
    parts[end:] = [_pct(c) for c in parts[end:]]
    if name.split(".", 1)[0].rstrip(" ").upper() in _WINDOWS_DEVICES:
        parts[0] = _pct(name[0])
    return "".join(parts)


def _pct(char: str) -> str:
    return "".join(f"%{byte:02X}" for byte in char.encode("utf-8", "surrogatepass"))


def _cut(escaped: str, limit: int) -> str:
    """The longest start of `escaped` within `limit` bytes that splits no escape."""
    tokens = re.findall(r"%[0-9A-F]{2}|.", escaped, flags=re.DOTALL)
    kept, size = [], 0
    for token in tokens:
        size += len(token.encode("utf-8", "surrogatepass"))
        if size > limit:
            break
        kept.append(token)
    return "".join(kept)


@cache
def folds_case(path: Path) -> bool:
    """Whether the file system at `path` takes names that differ only in case for one name.

    macOS and Windows do by default, so `test_A` and `test_a` would share a
    folder there. Probed on the nearest existing folder's nearest name with a
    cased letter: that name with its case swapped names the same folder. A
    path with no cased name answers False (no refusal on a guess).
    """
    existing = next((p for p in (path, *path.parents) if p.exists()), None)
    for probe in () if existing is None else (existing, *existing.parents):
        swapped = probe.name.swapcase()
        if swapped != probe.name:
            try:
                return os.path.samefile(probe, probe.with_name(swapped))
            except OSError:  # no such name: the file system told the two apart
                return False
    return False


def base_name(segment_text: str) -> str:
    """The function name in a test folder's segment (`test_x[1-cuda]` -> `test_x`)."""
    return segment_text.split("[", 1)[0]


def test_folder(
    root: Path, rootdir: Path, test_path: Path, classes: tuple[str, ...], test_name: str
) -> Path:
    """`<root>/<test file without .py>/[<Class>/...]<test name>`."""
    return module_folder(root, rootdir, test_path).joinpath(
        *map(segment, classes), segment(test_name)
    )


def module_folder(root: Path, rootdir: Path, test_path: Path) -> Path:
    """`<root>/<test file path relative to the rootdir, without .py>` (outside the rootdir: its name)."""
    try:
        relative = test_path.resolve().relative_to(rootdir.resolve())
    except ValueError:
        relative = Path(test_path.name)
    return root / relative.parent / relative.stem


def is_artifact_file(name: str) -> bool:
    return name in ARTIFACT_FILENAMES


def is_temp_file(name: str) -> bool:
    """The exact temp name `atomic_write_text` gives an artifact file (`.summary.txt.1a2b3c4d.tmp`)."""
    target = temp_target(name)
    return target is not None and is_artifact_file(target)


def is_own_file(name: str) -> bool:
    """A name the plugin writes into a snapshot folder: an artifact file or its temp file."""
    return is_artifact_file(name) or is_temp_file(name)


#: how the plugin begins each file it writes: the summary with its backend line, any other
#: artifact with a `#` comment (a frame header, or a line saying why it is empty)
_SUMMARY_START, _COMMENT_START = b"backend: ", b"#"


def reads_as_written(path: Path) -> bool:
    """Whether an artifact-named file begins as the plugin writes it.

    A name alone proves nothing: a user's `tests/data/report/summary.txt`
    shares it. A file that does not begin as the plugin's is not judged
    stale, nor deleted (temp files are judged by their exact name).
    """
    if not is_artifact_file(path.name):
        return is_temp_file(path.name)
    start = _SUMMARY_START if path.name == artifact_filename("summary") else _COMMENT_START
    try:  # non-blocking: a FIFO of that name must not hang the run (and is no file of ours)
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        with os.fdopen(fd, "rb") as handle:
            return stat.S_ISREG(os.fstat(fd).st_mode) and handle.read(len(start)) == start
    except OSError:
        return False
