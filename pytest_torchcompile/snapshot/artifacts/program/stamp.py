"""The program file's version stamp, and the rule that keeps it out of the `program` snapshot.

The file names the torch and Python versions it was written with (it warns
when loaded under others). The snapshot folder is keyed by torch's version
already; Python's patch release differs between machines that share a
snapshot set, so the snapshot masks it. Pure text: no torch import.
"""

from __future__ import annotations

import re

_PYTHON_STAMP = re.compile(r"(PYTHON_VERSION = '|and Python )(\d+\.\d+)\.\d+")


def mask_python_version(text: str) -> str:
    """`3.11.7` -> `3.11.<N>` where the file states the Python it was written with."""
    return _PYTHON_STAMP.sub(lambda m: f"{m.group(1)}{m.group(2)}.<N>", text)
