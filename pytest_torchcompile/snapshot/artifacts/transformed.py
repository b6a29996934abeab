"""The `transformed_code` artifact: Dynamo's rewritten bytecode, as Python.

The project's own translator writes it first (`program/translation`, the
one the program file uses): it proves each translation against the bytecode,
follows a graph break's stack shuffles, and writes the same text on every
Python for the same code, so a suite recorded on 3.11 reads the same on 3.13.
Where it refuses (a try block, a while loop), depyf decompiles the frame
(Python up to 3.12); where neither can, a `dis` listing follows a note.
"""

from __future__ import annotations

import dis
import functools
import re
import types

from ..._torch.patterns.dynamo import COUNTED_NAME
from ...common.capture_log import BytecodeRecord, CaptureLog, signature
from ..emit.values import constant_source
from ..program.translation.bytecode import Untranslatable
from ..program.translation.checked import NotEquivalent, checked
from .sections import frame_header

#: depyf's errors name the instruction it could not decompile.
_OPNAME = re.compile(r"opname='(\w+)'")
#: depyf writes a constant without a literal form (a `torch.device`) as this string.
_DEPYF_CONSTANT = re.compile(r"'__co_consts\[(\d+)\]'")


def transformed_code(log: CaptureLog) -> str:
    """Dynamo's rewritten bytecode of every frame, as Python where depyf can."""
    sections = []
    for record in sorted(log.bytecode, key=lambda b: b.key):
        sections.append(
            f"{frame_header(record.key, signature(record.original))}\n{decompile(record)}\n"
        )
    return "\n".join(sections)


def decompile(record: BytecodeRecord) -> str:
    """The transformed code as Python: ours, else depyf's, else a `dis` listing with a note."""
    source, refused = translated_source(record.transformed)
    if source is not None:
        return source
    source, why = depyf_source(record.transformed)
    if source is not None:
        return f"# depyf's decompilation: {refused}\n{source}"
    note = f"# neither could write this frame as Python ({refused}; depyf: {why}); bytecode listing follows"
    return note + "\n" + bytecode_listing(record.transformed)


@functools.lru_cache(maxsize=256)
def translated_source(code: types.CodeType) -> tuple[str | None, str]:
    """(Python source, "") from the project's translator, proved against the bytecode, or (None, why not).

    Constants without a literal form are bound above the function, as the program file binds them.
    """
    try:
        translation = checked(code)
    except NotEquivalent as exc:
        return None, f"the translation did not do what the bytecode does: {exc}"
    except Untranslatable as exc:
        return None, f"the translator refused it: {exc}"
    bound = []
    for name, value in translation.constants.items():
        text = constant_source(value)
        bound.append(f"{name} = {text if text is not None else f'<a {type(value).__name__}>'}")
    return "\n".join([*bound, translation.source.strip("\n")]), ""


@functools.lru_cache(maxsize=256)
def depyf_source(code: types.CodeType) -> tuple[str | None, str]:
    """(Python source, "") from depyf, or (None, why not); each code object decompiled once."""
    try:
        import depyf

        steady, padded = steady_names(code)
        source = str(depyf.decompile(steady)).strip("\n")
        for name in sorted(padded, key=len, reverse=True):
            source = source.replace(name, padded[name])
        return _constants(source, code), ""
    except Exception as exc:  # depyf raises many kinds; any of them means "fall back"
        opname = _OPNAME.search(str(exc))
        return None, type(exc).__name__ + (f" at instruction {opname.group(1)}" if opname else "")


def _constants(source: str, code: types.CodeType) -> str:
    """depyf's `'__co_consts[29]'` strings as the constants they stand for (`torch.device('cpu')`)."""

    def written(match: re.Match[str]) -> str:
        index = int(match.group(1))
        value = code.co_consts[index] if index < len(code.co_consts) else None
        text = constant_source(value) if value is not None else None
        return text if text is not None else match.group(0)

    return _DEPYF_CONSTANT.sub(written, source)


def steady_names(code: types.CodeType) -> tuple[types.CodeType, dict[str, str]]:
    """The code with Dynamo's counted names padded to one length, and padded -> original.

    depyf wraps long lines at a fixed width, so `__compiled_fn_7_<uuid>`
    and `__compiled_fn_17_<uuid>` (a process-global counter: what compiled
    earlier in the process) would wrap a call at different places. Decompiled
    padded, the wrap no longer depends on the counter; the original names go
    back in afterwards so they match the other artifacts' references.
    """
    padded: dict[str, str] = {}

    def pad_names(c: types.CodeType) -> types.CodeType:
        names = []
        for name in c.co_names:
            steady = COUNTED_NAME.sub(_pad, name)
            if steady != name:
                padded[steady] = name
            names.append(steady)
        consts = tuple(pad_names(k) if isinstance(k, types.CodeType) else k for k in c.co_consts)
        return c.replace(co_names=tuple(names), co_consts=consts)

    return pad_names(code), padded


def _pad(match: re.Match[str]) -> str:
    if match.group(1):
        return match.group(1) + match.group(2).zfill(8)
    return f"{match.group(3)}{match.group(4).zfill(8)}_{match.group(5).zfill(8)}"


def bytecode_listing(code: types.CodeType) -> str:
    """A `dis` listing without line numbers or addresses (they vary between runs)."""
    lines = []
    for ins in dis.get_instructions(code):
        arg = (
            f"<code object {ins.argval.co_name}>"
            if isinstance(ins.argval, types.CodeType)
            else ins.argrepr
        )
        lines.append(f"{ins.offset:>5} {ins.opname:<28} {arg}".rstrip())
    return "\n".join(lines)
