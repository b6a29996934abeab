"""Text rules for what the process and the machine choose: ids, counters, set orders, the GPU.

Object ids and addresses, Dynamo's and AOTAutograd's counters, compiled
functions' numbers, the iteration order of a guarded set, and the GPU model
(the snapshot folder's `{device}` keys it): each masked or renumbered, the
code itself left intact. Pure and idempotent; `normalize.STATIC_RULES`
gives their order.
"""

from __future__ import annotations

import ast
import re

from ..._torch.patterns.code import (
    AOT_ID,
    BACKEND_HASH,
    DEVICE_PROPERTIES,
    DEVICE_PROPERTY_NUMBER,
    FX_EVAL_KEY,
    GRAPH_ID,
    TENSOR_CONSTANT_HASH,
)
from ..._torch.patterns.dynamo import (
    BUILTINS_DICT,
    COMPILED_FN,
    GLOBAL_WITH_ID,
    RESUME_FN,
    TEMP,
)
from ..._torch.patterns.guards import (
    EQUALS_MATCH_LINE,
    OBJ_ID_VALUE,
)

_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+(?=>)")
_CODE_OBJECT_ADDRESS = re.compile(
    r"(<code object (?:<\w+>|[^\s<>,]+)) at 0x[0-9a-fA-F]+(?=, file )"
)
#: what every `GLOBAL_WITH_ID` match holds (the id and the counter)
HAS_GLOBAL_ID = re.compile(r"_\d{6,}_c\d")


# --- numbers the process hands out: object ids, counters ---------------------------


def mask_object_ids(text: str) -> str:
    """`___check_obj_id(G['torch'], 1400...)` -> `___check_obj_id(G['torch'], <id>)`."""
    return OBJ_ID_VALUE.sub(r"\1<id>\2", text)


def mask_graph_ids(text: str) -> str:
    """`# graph id: 1398...` is an object address of the graph module."""
    return GRAPH_ID.sub(r"\1<id>", text)


def renumber_compiled_fns(text: str) -> str:
    """`__compiled_fn_7_595f6bce_...` -> `__compiled_fn_<k>`, k in order of first use.

    The counter is process-global and the suffix a uuid; renumbering keeps
    two different graphs apart while hiding both.
    """
    return _renumber(COMPILED_FN, "__compiled_fn_{}", text)


def renumber_builtins_dicts(text: str) -> str:
    """`G['__builtins_dict___20']` -> `G['__builtins_dict___0']`, in order of first use.

    Dynamo names the builtins dict of each new globals scope with a
    process-global counter, so the number says what compiled earlier.
    """
    return _renumber(BUILTINS_DICT, "__builtins_dict___{}", text)


def renumber_dynamo_globals(text: str) -> str:
    """`___module_collections_1402..._c0` -> `___module_collections_obj0`, in order of first use.

    The number is an object id and a compile counter that moves with every
    compile earlier in the process; two distinct objects stay distinct.
    """
    if not HAS_GLOBAL_ID.search(text):  # a fast search first: the pattern starts with a lookbehind
        return text
    return _renumber(GLOBAL_WITH_ID, "_obj{}", text)


def mask_aot_ids(text: str) -> str:
    """`# AOT ID: ['3_inference']` keeps the kind and masks the global counter."""
    return AOT_ID.sub(r"\1<N>\2", text)


def mask_bytecode_counters(text: str) -> str:
    """`__resume_at_60_4` and `__temp_35` carry global counters of Dynamo."""
    text = RESUME_FN.sub("__resume_at_<N>", text)
    return _renumber(TEMP, "__temp_{}", text)


def mask_fx_eval_keys(text: str) -> str:
    """`# File: <eval_with_key>.97:5 in forward` -> `<eval_with_key>.<N>:5`: FX counts the GraphModules
    it generates code for in the process (e3nn's tensor products are such modules); the line
    within the generated code stays. A copy of such a module names its code after the one it was
    traced from (`<eval_with_key>.98 from <eval_with_key>.97:11 in forward`): whether the
    compiled module is the user's or a copy is not the compiler's doing, so both read the same."""
    return FX_EVAL_KEY.sub(r"\1<N>", text)


def mask_tensor_constant_hashes(text: str) -> str:
    """`_tensor_constant0 = None  # device(type='cpu') torch.float32 (1, 2) (2, 1) 7f2105b08eb0`:
    the last field is the tensor's `hash()`, its id; the device, dtype, size and stride stay."""
    if " = None  # device(" not in text:  # the pattern's literal part: no regex scan without it
        return text
    return TENSOR_CONSTANT_HASH.sub(r"\1 <hash>", text)


def drop_addresses(text: str) -> str:
    """`<function f at 0x7f38...>` -> `<function f>`."""
    return _ADDRESS.sub("", text)


def drop_code_object_addresses(text: str) -> str:
    """`<code object silu at 0x7f8b..., file "f.py", line 9>` -> `<code object silu, file "f.py", line 9>`.

    torch 2.11 prints an ID_MATCH guard's `type=` as the code object's repr,
    where the address is followed by `, file`, not `>` (`drop_addresses`).
    """
    return _CODE_OBJECT_ADDRESS.sub(r"\1", text)


def _renumber(pattern: re.Pattern[str], template: str, text: str) -> str:
    seen: dict[str, str] = {}

    def replace(match: re.Match[str]) -> str:
        return seen.setdefault(match.group(0), template.format(len(seen)))

    return pattern.sub(replace, text)


# --- orders the process chooses: a set's iteration order ------------------------


def sort_guarded_sets(text: str) -> str:
    """`EQUALS_MATCH: G['m'].MODES == {'valid', 'same'}` -> `... == {'same', 'valid'}`.

    Dynamo prints a set or frozenset constant as Python's repr, in the order
    the set iterates, which for strings follows the process's
    `PYTHONHASHSEED`. A set equals any reordering of itself, so the elements
    are sorted by their text (nested sets first). Only the code of guard lines
    is touched: the comment after it quotes user source as written, and FX
    or C++ braces are not sets.
    """
    if "EQUALS_MATCH" not in text or not EQUALS_MATCH_LINE.search(text):
        return text
    return "\n".join(
        _sorted_sets(line)
        if "{" in line and "EQUALS_MATCH" in line and EQUALS_MATCH_LINE.search(line)
        else line
        for line in text.split("\n")
    )


def _sorted_sets(line: str) -> str:
    """Each set display in the code of one line, outside strings and the comment, sorted."""
    parts, done = [], 0
    for start, end in _brace_spans(line):
        parts += [line[done:start], _sorted_set(line[start:end])]
        done = end
    return "".join(parts) + line[done:]


def _sorted_set(display: str) -> str:
    """`{b, a}` -> `{a, b}`; a dict display or anything else keeps its order (its inner sets sorted)."""
    try:
        node = ast.parse(display, mode="eval").body
    except SyntaxError:
        return display
    if not isinstance(node, ast.Set):
        return display[0] + _sorted_sets(display[1:-1]) + display[-1]
    elements = [_sorted_sets(ast.get_source_segment(display, e) or "") for e in node.elts]
    return "{" + ", ".join(sorted(elements)) + "}"


def _brace_spans(line: str) -> list[tuple[int, int]]:
    """(start, end) of each outermost `{...}` outside string literals, up to a `#` comment."""
    spans: list[tuple[int, int]] = []
    quote, depth, start, i = "", 0, 0, 0
    while i < len(line):
        char = line[i]
        if quote:
            if char == "\\":
                i += 1
            elif char == quote:
                quote = ""
        elif char in "'\"":
            quote = char
        elif char == "#":
            break
        elif char == "{":
            start = i if depth == 0 else start
            depth += 1
        elif char == "}" and depth:
            depth -= 1
            if depth == 0:
                spans.append((start, i + 1))
        i += 1
    return spans


# --- the GPU model (the snapshot folder's {device} keys it instead) -----------------


def mask_backend_hash(text: str) -> str:
    """`'backend_hash': '91D1...'` in a Triton kernel's metadata hashes the Triton build, not the kernel."""
    return BACKEND_HASH.sub(r"\1<hash>", text)


def mask_device_properties(text: str) -> str:
    """`DeviceProperties(type='cuda', index=0, multi_processor_count=132, cc=90, ...)` -> `..., multi_processor_count=<N>, cc=<N>, ...`.

    The numbers describe the GPU model (SM count, compute capability, registers,
    warp size), which the snapshot folder keys instead: `{device}` is
    `cuda-sm90` for cc 9.0. Masked here, GPUs of one compute capability (H100
    SXM with 132 SMs, H100 PCIe with 114) share a snapshot set; a kernel that
    Inductor generates differently for them still shows in the kernel's code.
    The device type and index stay: they are where the user put the model.
    """
    return DEVICE_PROPERTIES.sub(lambda m: DEVICE_PROPERTY_NUMBER.sub(r"\1<N>", m.group(0)), text)
