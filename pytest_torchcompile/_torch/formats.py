"""torch's text formats: trace record names, and the shapes of the text it emits.

Pure text, no torch import: the snapshot wing's spec and catalogue (loaded
with the plugin, before anything imports torch) build on it. What is here is
what a torch release may change: the record kinds of the structured trace,
how FX graphs, output code and guard code are spelled (Dynamo's generated
names and graph-break records: `patterns/dynamo.py`), the message of a precompiled function's guard
failure, and the prelude of helpers the emitted guard functions call (Python
that reaches into `torch._C`, so it is a torch text format too).
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .patterns.dynamo import DYNAMO_STAND_INS as DYNAMO_STAND_INS

# Dynamo's generated names are defined in patterns/dynamo.py; the program room reads these here.
from .patterns.dynamo import DYNAMO_UTILS_ALIAS as DYNAMO_UTILS_ALIAS
from .patterns.dynamo import DYNAMO_UTILS_HELPERS as DYNAMO_UTILS_HELPERS
from .patterns.dynamo import DYNAMO_UTILS_MODULE as DYNAMO_UTILS_MODULE
from .patterns.dynamo import INSTALLED_GLOBAL as INSTALLED_GLOBAL
from .patterns.dynamo import RESUME_PREFIX as RESUME_PREFIX
from .patterns.dynamo import UNNAMED_SCOPE_PREFIX as UNNAMED_SCOPE_PREFIX

# --- structured-trace records ----------------------------------------------

#: trace record kind (or the name of an `artifact` record) -> the stream the
#: plugin files its payloads under. Two kinds feed one stream where torch
#: renamed a record between releases.
TRACE_RECORDS: dict[str, str] = {
    "dynamo_output_graph": "dynamo_graph",
    "aot_forward_graph": "aot_forward",
    "aot_backward_graph": "aot_backward",
    "aot_inference_graph": "aot_inference",
    "inductor_post_grad_graph": "post_grad_graph",
    "inductor_output_code": "output_code",
    "dynamo_cpp_guards_str": "guards",
    "runtime_wrapper_orchestration": "runtime_wrapper",
    "compiled_fn_wrapper": "runtime_wrapper",
    "dynamo_graph_break_reason": "graph_break_reason",
    "recompile_reasons": "recompile_reasons",
    # what the program file's AOTAutograd wrapper is written from (`program/aot_meta.py`)
    "aot_forward_graph_fw_metadata": "aot_metadata",
    # DDP's graph split at its bucket boundaries (Dynamo's DDPOptimizer), its parts nested in it
    "optimize_ddp_split_graph": "ddp_split",
}

#: streams whose payload a cache hit emits twice (as a record and as an artifact).
EMITTED_TWICE_ON_CACHE_HIT = frozenset({"post_grad_graph"})

#: the record kind whose real name is `metadata["artifact"]["name"]`.
ARTIFACT_KIND = "artifact"

# --- FX graphs and Inductor's output code -----------------------------------

#: `cpp_fused_relu_0 = async_compile.cpp_pybinding(...)`: one generated kernel.
KERNEL_DEF = re.compile(
    r"^(\w+) = async_compile\.(?:cpp_pybinding|cpp|triton|cuda|halide)\(", re.MULTILINE
)
#: an operation in a printed FX graph: an assignment that is not a rename or a deletion.
FX_OP_LINE = re.compile(
    r"^\s+\w+(?:: \"[^\"]*\")? = (?!None\b)(?![A-Za-z_]\w*\s*(?:;|$))", re.MULTILINE
)
#: `_tensor_constant0 = None  # device(type='cpu') torch.float32 (1, 2) (2, 1) 7f21...`: a constant tensor
#: of the graph, which Inductor's loader sets on the output code's module (the text holds no value).
OUTPUT_CONSTANT = re.compile(r"^([A-Za-z_]\w*) = None  # device\(", re.MULTILINE)
#: the kind in an output code's `# AOT ID: ['0_forward']` header.
AOT_KIND = re.compile(r"^# AOT ID: \['\d+_(\w+)'\]", re.MULTILINE)
#: where a printed FX graph's body starts.
FX_BODY_START = "def forward"
#: a printed FX graph's class line, `class GraphModule(torch.nn.Module):` (`class <lambda>(...)` for AOT's graphs).
FX_CLASS_LINE = re.compile(r"^class (.+?)\(torch\.nn\.Module\):$", re.MULTILINE)
#: code in a printed FX graph that reads its GraphModule (constants, submodules of higher-order ops).
FX_SELF_READ = re.compile(r"^(?![ \t]*#).*\bself\.", re.MULTILINE)
#: a printed FX graph's read of a tensor constant from its GraphModule, `... = self._tensor_constant0`.
FX_CONSTANT_READ = re.compile(
    r"^[ \t]*\w+(?:: \"[^\"]*\")? = self\.(_tensor_constant\d+)$", re.MULTILINE
)


def findall_on_lines(pattern: re.Pattern[str], text: str, literal: str) -> list[Any]:
    """`pattern.findall(text)` for a pattern whose every match lies within one line and holds
    `literal`: matched only on the lines that hold it. A pattern anchored at line starts tries
    every position of the text; `str.find` skips to the lines that matter (a kernel's name in an
    output code of 60,000 characters: a tenth of the time)."""
    found: list[Any] = []
    at = text.find(literal)
    while at >= 0:
        start = text.rfind("\n", 0, at) + 1
        end = text.find("\n", at)
        end = len(text) if end < 0 else end
        found += pattern.findall(text, start, end)
        at = text.find(literal, end)
    return found


def kernel_names(output_code: str) -> list[str]:
    """Names of the kernels Inductor generated (C++ or Triton) in one output code (`KERNEL_DEF`)."""
    return findall_on_lines(KERNEL_DEF, output_code, " = async_compile.")


def output_constants(code: str) -> list[str]:
    """The tensor constants an output code's module is given (`OUTPUT_CONSTANT`), in order."""
    return findall_on_lines(OUTPUT_CONSTANT, code, " = None  # device(")


def constants_read(graph: str) -> list[str]:
    """The tensor constants a printed FX graph reads from its GraphModule (`FX_CONSTANT_READ`), in order."""
    return FX_CONSTANT_READ.findall(graph) if " = self._tensor_constant" in graph else []


#: an op's repr, `<OpOverload(op='aten.relu', overload='default')>`.
OP_OVERLOAD = re.compile(r"<OpOverload\(op='([\w.]+)', overload='(\w+)'\)>")

# --- guard code (verbose_code_parts of the guard tree) ----------------------

#: `G['name']` in a guard's source: a global the guard reads.
GUARD_GLOBAL = re.compile(r"G\['([A-Za-z_]\w*)'\]")
#: `L['name']` in a guard's source: a local (or free variable) of the frame the guard reads.
GUARD_LOCAL = re.compile(r"L\['([A-Za-z_]\w*)'\]")
#: the kind of a guard that compares its source with a constant (`L['name'] == 'einsum'`)
EQUALS_MATCH = "EQUALS_MATCH"

#: `___check_obj_id(G['torch'], 1400...)` and `___check_type_id(...)`.
ID_CHECK = re.compile(r"___check_(obj|type)_id\((.+?), (\d+)\)")
#: the `, type=<class '...'>` suffix some guard codes carry.
TYPE_SUFFIX = re.compile(r", type=<class '([^']*)'>$")
#: SET_CONTAINS's code, `set.__contains__(G['m'].keyword.iskeyword.__self__, 'n')`: Python's unbound
#: `set.__contains__` raises on the frozenset that Dynamo's C check accepts, so the emitted guard calls
#: the prelude's `___set_contains` (`program/runtime_guards.py`), which takes both.
SET_CONTAINS_CALL = re.compile(r"(?<![\w.])set\.__contains__\(")
SET_CONTAINS_HELPER = "___set_contains("
#: Dynamo's helper prefix: code still holding one has no Python form of its own.
CHECK_HELPER = "___check_"
#: the guard on AOTAutograd's saved-tensors hooks.
SAVED_HOOKS_GUARD = re.compile(
    r"^torch\._functorch\.aot_autograd\.utils\.top_saved_tensors_hooks ids == None$"
)
#: leaf guard kinds with a format of their own.
TENSOR_MATCH, GLOBAL_STATE = "TENSOR_MATCH", "GLOBAL_STATE"
#: GLOBAL_STATE's code: `... against {json of the recorded state}`.
GLOBAL_STATE_SEPARATOR = " against "
#: device types by the backend dispatch key that opens a tensor's key set.
BACKEND_DEVICES = {
    "CPU": "cpu",
    "CUDA": "cuda",
    "Meta": "meta",
    "MPS": "mps",
    "XPU": "xpu",
    "HPU": "hpu",
    "MTIA": "mtia",
}
#: TENSOR_MATCH's type names -> the Python class.
TENSOR_TYPES = {"Tensor": "torch.Tensor", "Parameter": "torch.nn.Parameter"}

#: the code before the first `#` outside a string literal, written as runs between strings (an
#: alternation tried at each character costs twice as much on a guard's code)
_BEFORE_COMMENT = re.compile(
    r"""([^'"#]*(?:(?:'[^'\\\n]*(?:\\.[^'\\\n]*)*'|"[^"\\\n]*(?:\\.[^"\\\n]*)*")[^'"#]*)*)#"""
)


def split_comment(part: str) -> tuple[str, str]:
    """`code  # comment` -> (code, comment): the first `#` outside a string literal."""
    if "#" not in part:
        return part.strip(), ""
    match = _BEFORE_COMMENT.match(part)
    if match:
        return match.group(1).rstrip(), part[match.end() :].strip()
    if "#" in part:  # an unbalanced quote: fall back to Dynamo's own separator
        code, _, comment = part.partition("  # ")
        return code.rstrip(), comment.strip()
    return part.strip(), ""


@dataclass(frozen=True)
class TensorMatch:
    """A TENSOR_MATCH guard's code, `check_tensor(src, Tensor, DispatchKeySet(CPU, ...), torch.float32, device=None, ...)`."""

    source: str
    type_name: str
    dispatch_keys: str
    dtype: str
    keywords: dict[str, Any]

    @property
    def backend_key(self) -> str:
        """The dispatch key that opens the set (`CPU`, `CUDA`, ...)."""
        return self.dispatch_keys.removeprefix("DispatchKeySet(").split(",")[0].rstrip(")")


def parse_tensor_match(code: str) -> TensorMatch | None:
    """The parts of a TENSOR_MATCH code, or None when it is not in the known form."""
    try:
        call = ast.parse(code, mode="eval").body
        if not (isinstance(call, ast.Call) and len(call.args) == 4):
            return None
        keywords = {k.arg: ast.literal_eval(k.value) for k in call.keywords if k.arg}
    except (SyntaxError, ValueError):
        return None
    source, type_name, keys, dtype = (
        code[a.col_offset : a.end_col_offset] for a in call.args
    )  # one line: columns suffice
    return TensorMatch(source, type_name, keys, dtype, keywords)


# --- a precompiled function's guard failure ---------------------------------

GUARD_FAILURE_PREFIX = "GuardManager check failed"
_REJECTED = re.compile(r"verbose_code_parts=(\[.*?\])\s*,\s*num_guards_executed", re.DOTALL)


def rejected_guards(message: str) -> list[str] | None:
    """The guard codes a loaded artifact's guard failure names; None when it is another error."""
    if not message.startswith(GUARD_FAILURE_PREFIX):
        return None
    match = _REJECTED.search(message)
    try:
        failed = ast.literal_eval(match.group(1)) if match else [message]
    except (ValueError, SyntaxError):
        failed = [message]
    return [str(part) for part in failed]


# --- the prelude of the `program` artifact's guard functions ----------------

#: where the guard helpers start in the program file's runtime (`program/runtime_guards.py`)
_PRELUDE_START = "# --- the guard prelude: what Dynamo's guard code calls"

_PRELUDE_HEADER = """
import collections
import importlib
import json
import math
import sys

import torch

inf = math.inf
device = torch.device
utils_device = torch.utils._device  # DEFAULT_DEVICE: the device of `with torch.device(...)`
__load_module = importlib.import_module
__math_isnan = math.isnan

"""


def _guard_prelude() -> str:
    """The helpers Dynamo's guard code calls, read from the program file's runtime, so the guard
    checker and every program file run one copy of them (read as text: no torch import here)."""
    runtime = (Path(__file__).parent / "program" / "runtime_guards.py").read_text()
    return _PRELUDE_HEADER.lstrip("\n") + runtime[runtime.index(_PRELUDE_START) :]


#: Python helpers the emitted guard functions call (the program's prelude).
PRELUDE = _guard_prelude()


def _defined(source: str) -> frozenset[str]:
    """The names a module's top level defines (functions, classes, assignments, imports)."""
    names: set[str] = set()
    for node in ast.parse(source).body:
        if isinstance(node, ast.FunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name))
    return frozenset(names)


#: the dunder-prefixed helpers the prelude has: a guard calling another of Dynamo's helpers
#: (`___tuple_iterator_len`, ...) has no Python form in the file, where running it would raise
#: NameError
PRELUDE_HELPERS = frozenset(n for n in _defined(PRELUDE) if n.startswith("__"))


def recompile_reasons(payload: str) -> list[str]:
    """The reasons one `recompile_reasons` record gives: torch writes one reason as its text
    and several as a JSON list of them (guards.py: `reasons[0] if len(reasons) == 1 else
    reasons`)."""
    text = payload.strip()
    if text.startswith("["):
        try:
            listed = json.loads(text)
        except ValueError:
            return [text]
        if isinstance(listed, list) and all(isinstance(r, str) for r in listed):
            return [r.strip() for r in listed]
    return [text]
