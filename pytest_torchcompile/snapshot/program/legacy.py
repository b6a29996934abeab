"""The `program` artifact: everything a compile emitted, as one Python file.

For each frame compile, in (frame, compile) order: its guards as a Python
function (see `guards.py`), the transformed frame code (depyf's Python, or
the bytecode listing as comments where depyf cannot), what that code calls
(compiled graphs, resume functions), AOTAutograd's runtime wrapper, and the
compiled graph itself: Inductor's output code with its kernels, or the graphs
a backend without output code runs. Everything comes from the capture; nothing
is compiled again. A piece that is not valid Python as captured is kept as
comments, so the file always parses.
"""

from __future__ import annotations

import ast
import functools

from ..._torch.formats import AOT_KIND, COMPILED_CALL, COMPILED_FN_PREFIX
from ..artifacts import bytecode_listing, depyf_source
from ...common.records import BytecodeRecord, CaptureLog, FrameKey
from ..guards import PRELUDE, guard_function

HEADER = """\
# What torch.compile runs for this case, as one Python file, in the order it runs
# (pytest-torchcompile `program` artifact; backend: {backend}).
#
# For each compiled frame (a Python function Dynamo compiled; a graph break adds
# a resume frame, a recompile another compile of the same frame):
#   1. guards_<frame>(L, G): checked before the frame runs. L holds the frame's
#      arguments (`self` for a module's forward), G its module's globals. True runs
#      the code below; False makes Dynamo try the frame's other compiles (newest
#      first) or compile it again.
#   2. the transformed code Dynamo runs instead of the function's own bytecode.
#   3. what it calls: __compiled_fn_<k> is the captured graph as the backend compiled
#      it; __resume_at_<N> continues after a graph break and is a compiled frame of
#      its own, further down.
#   4. AOTAutograd's runtime wrapper around the compiled graph.
#   5. the compiled forward (and backward) with their kernels.
# Object ids differ in every process: IDS_<frame>[source] stands for the id() that
# Dynamo recorded for that source; CompileResult.check_guards binds it.
"""

def build(log: CaptureLog, backend: str) -> str:
    """The raw program of one case (normalize it like any artifact)."""
    names = log.frame_names()
    bytecode = {b.key: b for b in log.bytecode}
    sections = [HEADER.format(backend=backend), PRELUDE]
    for key in log.frames():
        sections.append(frame_section(log, key, names.get(key, "frame"), bytecode.get(key)))
    return "\n\n".join(s.rstrip("\n") + "\n" for s in sections)


def frame_section(log: CaptureLog, key: FrameKey, name: str, record: BytecodeRecord | None) -> str:
    rule = "# " + "=" * 78
    parts = [f"{rule}\n# frame {key.frame_id} compile {key.compile_id}: {name}\n{rule}"]
    if key in log.guards:
        parts.append(_titled("1. guards", guard_function(key, name, log.guards[key]).text))
    if record is not None:
        parts.append(_titled(f"2. transformed code of {name}", transformed(record)))
        calls = called_names(record)
        if calls:
            parts.append(_titled("3. calls", "\n".join(f"# {c}: {_call_note(c)}" for c in calls)))
    wrappers = log.payloads("runtime_wrapper", key)
    if wrappers:
        parts.append(_titled("4. AOTAutograd runtime wrapper", "\n\n".join(_python(w) for w in wrappers)))
    for title, text in compiled_graphs(log, key):
        parts.append(_titled(f"5. {title}", _python(text)))
    return "\n\n".join(parts)


def _titled(title: str, body: str) -> str:
    return f"# ----- {title} " + "-" * max(3, 72 - len(title)) + "\n" + body.strip("\n")


def transformed(record: BytecodeRecord) -> str:
    """depyf's Python, or the `dis` listing as comments with the reason."""
    source, why = depyf_source(record.transformed)
    if source is not None and is_python(source):
        return source
    listing = "\n".join(f"# {line}" for line in bytecode_listing(record.transformed).splitlines())
    return f"# depyf could not decompile this frame ({why or 'not valid Python'}); bytecode listing, as comments:\n{listing}"


def called_names(record: BytecodeRecord) -> list[str]:
    """Compiled graphs and resume functions the transformed code calls, in first-use order."""
    return [n for n in dict.fromkeys(record.transformed.co_names) if COMPILED_CALL.match(n)]


def _call_note(name: str) -> str:
    if name.startswith(COMPILED_FN_PREFIX):
        return "the graph Dynamo captured from this frame, as the backend compiled it (sections 4 and 5)"
    return "resume function: runs the rest of the original function after the graph break; compiled as its own frame below"


def compiled_graphs(log: CaptureLog, key: FrameKey) -> list[tuple[str, str]]:
    """What runs for the graph: Inductor's output code, else AOT graphs, else Dynamo's graph."""
    codes = log.payloads("output_code", key)
    if codes:
        return [(f"compiled {_aot_kind(code)} (output code)", code) for code in codes]
    aot = [(name, text) for name in ("aot_forward", "aot_backward", "aot_inference") for text in log.payloads(name, key)]
    if aot:
        return [(f"{name.replace('aot_', 'AOTAutograd ')} graph, run by the backend", text) for name, text in aot]
    return [("Dynamo's graph, run by the backend", text) for text in log.payloads("dynamo_graph", key)]


def _aot_kind(code: str) -> str:
    match = AOT_KIND.search(code)
    return match.group(1) if match else "graph"


def _python(text: str) -> str:
    """The text as is when it parses; otherwise as comments, saying so."""
    text = text.strip("\n")
    if is_python(text):
        return text
    return "# (not valid Python as captured; kept as comments)\n" + "\n".join(f"# {line}" for line in text.splitlines())


@functools.lru_cache(maxsize=256)
def is_python(text: str) -> bool:
    try:
        ast.parse(text)
    except SyntaxError:
        return False
    return True
