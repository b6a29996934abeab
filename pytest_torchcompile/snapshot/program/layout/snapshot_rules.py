"""How the `program` snapshot differs from the file: the rules that keep it about the case.

The file names the torch and Python versions it was written with (it warns
when loaded under others) and holds a hash of the compiled function's
bytecode (`load` checks the function it is given against it). The snapshot
folder is keyed by torch's version already, and the rest of the file reads
the same on Python 3.11 to 3.14 (the translator writes each version's
bytecode as the same Python) and on every build of one torch release (a CPU
case compiles alike on the `+cpu` wheel and PyPI's CUDA build), so the
snapshot masks the Python version, drops torch's build tag and masks the hash (the
bytecode of one source differs per Python): one set serves them all. The runtime helpers and `load` are
the same text in every file (pytest-torchcompile's own code, copied in): the
snapshot holds one line for each, so it changes when the case does, not when
the plugin's runtime does. Pure text: no torch import.
"""

from __future__ import annotations

import re

_PYTHON_STAMP = re.compile(r"(PYTHON_VERSION = '|and Python )\d+\.\d+\.\d+")
_TORCH_BUILD = re.compile(r"((?:TORCH_VERSION = '|with torch )\d+\.\d+\.\d+[^+'\s]*)\+[\w.]+")
#: ENTRY's `'code': '<sha256 prefix of the bytecode>'`
_CODE_HASH = re.compile(r"^(ENTRY = \{.*'code': ')[0-9a-f]{16}'", re.M)
#: the copied parts: from their marker line to the next section of the file.
_RUNTIME = re.compile(
    r"^# ---- runtime \(copied into every program file from here on\) ----\n.*?(?=^# =+\n)",
    re.S | re.M,
)
_LOAD = re.compile(
    r"^# ---- load \(copied into every program file from here on\) ----\n.*?(?=^if __name__ == )",
    re.S | re.M,
)


#: where the case's own modules were imported from (`imports.py`): this machine's folders
_IMPORT_ROOTS = re.compile(
    r"^#: where a module the file imports was found.*\nIMPORT_ROOTS = .*\n", re.M
)


def mask_python_version(text: str) -> str:
    """`3.11.7` -> `3.<N>.<N>` where the file states the Python it was written with, `2.13.0+cpu` ->
    `2.13.0` where it states torch's (the build tag dropped), the compiled function's bytecode
    hash as `<hash>`, and no IMPORT_ROOTS (folders of this machine)."""
    text = _PYTHON_STAMP.sub(lambda m: f"{m.group(1)}3.<N>.<N>", text)
    text = _TORCH_BUILD.sub(r"\1", text)
    text = _IMPORT_ROOTS.sub("", text)
    return _CODE_HASH.sub(r"\1<hash>'", text)


def fold_copied_parts(text: str) -> str:
    """The runtime and `load`, the same in every file, as one line each."""
    text = _RUNTIME.sub(
        "# ---- runtime: the helpers every program file carries (not snapshotted) ----\n\n\n", text
    )
    return _LOAD.sub(
        "# ---- load: `load`, `Program` and the script entry point (not snapshotted) ----\n\n\n",
        text,
    )
