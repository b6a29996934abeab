"""Pure, idempotent text rules that make compiler output the same in every run.

Each rule masks one thing that varies between processes, checkouts, hosts,
caches or test order, and leaves the code itself (ops, shapes, dtypes,
strides, kernel bodies) intact. `STATIC_RULES` gives their order, top to
bottom; `Normalizer.for_paths` puts the checkout's path rule first.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from ..._torch.patterns.code import (
    AOT_ID,
    BACKEND_HASH,
    DEVICE_PROPERTIES,
    DEVICE_PROPERTY_NUMBER,
    FX_EVAL_KEY,
    GENERATED_MODULE_FILE,
    GENERATED_MODULE_TAIL,
    GRAPH_ID,
    KERNEL_PATH,
    SPACED_PRODUCT,
    SYM_ANNOTATION,
    SYMPY_OPERATOR,
    TENSOR_CONSTANT_HASH,
    TYPE_ANNOTATION,
)
from ..._torch.patterns.dynamo import (
    BUILTINS_DICT,
    BUILTINS_DICT_PREFIX,
    COMPILED_FN,
    GLOBAL_WITH_ID,
    NONE_TRACE,
    RESUME_FN,
    RESUME_IN_AT,
    TEMP,
    USER_TRACEBACK,
)
from ..._torch.patterns.guards import (
    BARE_PROVENANCE,
    COMMENT_PATH,
    EQUALS_MATCH_LINE,
    GLOBALS_MANAGER,
    GUARD_LATENCY,
    NUM_THREADS,
    OBJ_ID_VALUE,
    PROVENANCE_TAIL,
    PSEUDO_FILE_QUOTE,
    ROOT_LAMBDA_GUARD,
)
from .registries import sort_global_dict_entries, sort_set_built_lists, stable_global_dict_keys
from .sections import per_frame_section

Rule = Callable[[str], str]

#: `file.py:9` and `, line 9`, without groups: a fixed replacement expands no template per match
_LINE_REF = re.compile(r"\.py:\d+\b")
_LINE_WORD = re.compile(r", line \d+\b")
_FROZEN_LINE = re.compile(r"(<frozen [\w.]+>):\d+")
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+(?=>)")
_CODE_OBJECT_ADDRESS = re.compile(
    r"(<code object (?:<\w+>|[^\s<>,]+)) at 0x[0-9a-fA-F]+(?=, file )"
)
_ABSOLUTE_PY = re.compile(r"(?<![\w<>.])/+(?:[^\s/\"':,()]+/+)+[^\s/\"':,()]+\.py\b")
_MASK_IN_NAME = re.compile(r"(?<=\w)(?:<N>)+")
#: what every `GLOBAL_WITH_ID` match holds (the id and the counter)
_HAS_GLOBAL_ID = re.compile(r"_\d{6,}_c\d")
#: a Dynamo global as `renumber_dynamo_globals` writes it: `___unnamed_scope_obj0`, `G['_obj1']`
_RENUMBERED_GLOBAL = re.compile(r"(?<=[A-Za-z_'])_obj\d+(?![\w/])")


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
    if not _HAS_GLOBAL_ID.search(text):  # a fast search first: the pattern starts with a lookbehind
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


# --- the host, the checkout and the cache -----------------------------------------


def mask_num_threads(text: str) -> str:
    """The GLOBAL_STATE guard records the host's thread count."""
    return NUM_THREADS.sub(r"\1<N>", text)


def drop_guard_latency(text: str) -> str:
    """`Guard latency = 70.56 us` is a timing, not a property of the guards."""
    if GUARD_LATENCY not in text:
        return text
    # line by line, the blank lines above it too: a pattern anchored at each line start with
    # `\s*` would try every position of the whole guards text
    out: list[str] = []
    lines = text.split("\n")
    for index, line in enumerate(lines):
        if line.lstrip().startswith(GUARD_LATENCY):
            while out and not out[-1].strip():
                out.pop()
            if index == len(lines) - 1:
                out.append("")  # the last line: the line break before it stays
            continue
        out.append(line)
    return "\n".join(out)


def mask_kernel_paths(text: str) -> str:
    """`# kernel path: /tmp/torchinductor_x/...` points into the cache dir."""
    if "# kernel path: " not in text:
        return text
    return KERNEL_PATH.sub(r"\1<cache>", text)


@lru_cache(maxsize=8)
def _at_path_start(folder: str) -> re.Pattern[str]:
    """`folder/` where a path starts, not inside a longer one.

    With the rootdir `/work/main`, a cache filled by a checkout at
    `/check/work/main` replays `/check/work/main/fixtures/zoo.py`, which must
    not become `/checkfixtures/zoo.py`.
    """
    return re.compile(
        r"(?<![\w<>.~+@%/-])" + re.escape(folder.rstrip("/") + "/")
    )  # `<>`: as `_ABSOLUTE_PY`


def _never_local(relative: str) -> bool:
    return False


@dataclass(frozen=True)
class PathRule:
    """Rewrite absolute paths: the rootdir becomes relative, torch's dir `<torch>`.

    A warm Inductor/AOTAutograd cache replays graphs with the `# File:` paths
    of whichever checkout filled it, so an absolute path from elsewhere is
    mapped to the longest suffix that names a file under this rootdir
    (`/other/checkout/fixtures/zoo.py` -> `fixtures/zoo.py`); `is_local`
    answers that question, which keeps the rule itself a pure function. Other
    absolute paths to Python files (site-packages, a script outside the
    rootdir) keep only their basename. The same cache is shared by every
    install of one torch version (two venvs of 2.13: the cache key holds the
    version, not the path), so a path into another install's `torch/` that
    names a file of this torch (`is_torch_file`) is `<torch>/...` too.
    """

    rootdir: str
    torch_dir: str | None = None
    is_local: Callable[[str], bool] = _never_local
    is_torch_file: Callable[[str], bool] = _never_local

    def __call__(self, text: str) -> str:
        # Line by line, each pattern only on the lines that hold its literal part: no match
        # spans a line, and a regex that starts with a lookbehind would try every position.
        folders = [
            (folder.rstrip("/") + "/", _at_path_start(folder), replacement)
            for folder, replacement in ((self.torch_dir, "<torch>/"), (self.rootdir, ""))
            if folder
        ]
        if ".py" not in text and not any(literal in text for literal, _, _ in folders):
            return text
        lines = text.split("\n")
        for index, line in enumerate(lines):
            for literal, pattern, replacement in folders:
                if literal in line:
                    line = pattern.sub(replacement, line)
            if ".py" in line and _starts_a_path(line):
                line = _ABSOLUTE_PY.sub(self._foreign, line)
            lines[index] = line
        return "\n".join(lines)

    def _foreign(self, match: re.Match[str]) -> str:
        parts = [p for p in match.group(0).split("/") if p]
        for start in range(1, len(parts) - 1):
            relative = "/".join(parts[start:])
            if self.is_local(relative):
                return relative
        for at in reversed([n for n, part in enumerate(parts[:-1]) if part == "torch"]):
            inside = "/".join(parts[at + 1 :])
            if self.is_torch_file(inside):
                return f"<torch>/{inside}"
        return parts[-1]


def _starts_a_path(line: str) -> bool:
    """Whether a `/` on the line can start an absolute path: one that `_ABSOLUTE_PY`'s
    lookbehind lets through (no word character, `<`, `>` or `.` before it)."""
    at = line.find("/")
    while at >= 0:
        if at == 0 or not (line[at - 1].isalnum() or line[at - 1] in "_<>."):
            return True
        at = line.find("/", at + 1)
    return False


def mask_generated_module_names(text: str) -> str:
    """`torch_geometric.nn.conv.gcn_conv_GCNConv_propagate_0lxvt4o8.py` -> `..._propagate_<tmp>.py`.

    A library that generates a module's source writes it to a `tempfile` named
    by the module's dotted name and 8 random characters, different in every
    process (torch_geometric's `propagate`); graphs and guard comments quote
    that file. The dotted stem is what tells it from a file of the project:
    such a name cannot be imported.
    """
    if not GENERATED_MODULE_TAIL.search(text):  # a match's tail never spans a line
        return text
    # only on the lines that hold a match's tail: the pattern would try every word boundary
    return "\n".join(
        GENERATED_MODULE_FILE.sub(r"\1<tmp>\2", line)
        if GENERATED_MODULE_TAIL.search(line)
        else line
        for line in text.split("\n")
    )


def shorten_guard_comment_paths(text: str) -> str:
    """Guard comments shorten paths relative to torch's install dir; keep the basename."""
    return COMMENT_PATH.sub(r"\1\2", text)


def drop_pseudo_file_quotes(text: str) -> str:
    """A guard's comment quotes no line of `<string>` or `<stdin>`: every eval'd text shares
    the name, and under xdist on Python 3.13 the worker's own `-c` program was quoted for a
    namedtuple's `_tuple_new` (pyg), where a plain run quotes nothing."""
    if "  # <string>:" not in text and "  # <stdin>:" not in text:
        return text
    return "\n".join(
        PSEUDO_FILE_QUOTE.sub(r"\1\2", line) if "  # <" in line else line
        for line in text.split("\n")
    )


def mask_line_numbers(text: str) -> str:
    """`file.py:9`, `, line 9`, `resume_in_f_at_13`: a moved line is not a regression."""
    text = _LINE_REF.sub(".py:<N>", text)
    text = _LINE_WORD.sub(", line <N>", text)
    return RESUME_IN_AT.sub(r"\1<N>", text)


def mask_frozen_line_numbers(text: str) -> str:
    """`<frozen os>:677` is a line of the Python build, not of the model."""
    return _FROZEN_LINE.sub(r"\1:<N>", text)


def strip_trailing_space(text: str) -> str:
    """Trailing blanks differ with padding of variable-width fields."""
    if " \n" not in text and "\t\n" not in text and not text.endswith((" ", "\t")):
        return text
    # line by line: a regex backtracks through every run of indentation
    return "\n".join(line.rstrip(" \t") for line in text.split("\n"))


# --- one thing printed two ways ---------------------------------------------------


def drop_user_traceback(text: str) -> str:
    """Graph-break reasons end with a traceback through pytest's own frames."""
    if "User code traceback:" not in text and "NoneType: None" not in text:
        return text  # no regex scan where there is nothing to drop
    return NONE_TRACE.sub("", USER_TRACEBACK.sub("", text))


def drop_guard_provenance(text: str) -> str:
    """A shape guard's comment ends with the torch function that installed it.

    That is Inductor's codegen on a cache miss and AOTAutograd's cache check on
    a hit (` and (_inductor/codegen/cpp.py:12 in need_use_acc_helper)`): the
    same guard, found by a different path.
    """
    return PROVENANCE_TAIL.sub("", text)


def drop_bare_guard_provenance(text: str) -> str:
    """A shape guard with no user code has only the torch function that installed it as its comment.

    `LAMBDA_GUARD: 64*L['x'].size()[0] <= 2147483647  # (_inductor/codegen/simd.py:1877
    in can_use_32bit_indexing)` on an Inductor cache miss is the same guard as
    `... # (_functorch/_aot_autograd/autograd_cache.py:970 in evaluate_guards)` on a
    hit (torch 2.11 on a GPU). The guard stays; the comment goes, and so does the
    ` and (...)` form (`drop_guard_provenance`): dropping either can bare the other at
    the line's end, so both go until neither is left.
    """
    if "# (" not in text and " and (" not in text:  # neither form: no regex scan
        return text
    while True:
        dropped = drop_guard_provenance(BARE_PROVENANCE.sub("", text))
        if dropped == text:
            return text
        text = dropped


def unspace_sym_products(text: str) -> str:
    """`"Sym(s27 * s52)"` -> `"Sym(s27*s52)"`: the same symbolic size, printed two ways.

    torch 2.11 prints a graph's symbolic-size annotation with sympy's `str`
    (`s27*s52`) when it traces and spaced (`s27 * s52`) when it replays a
    cached graph (dynamic Llama on an H100, cold vs warm). Only products in
    `Sym(...)` annotations are touched; `+`, `-` and `//` print alike in both.
    """
    return SYM_ANNOTATION.sub(lambda m: SPACED_PRODUCT.sub(r"\1", m.group(0)), text)


def canonical_sympy_spacing(text: str) -> str:
    """`Sym(2 * s50)` -> `Sym(2*s50)`: sympy prints a product with spaces on a cache hit only.

    Only inside FX type annotations (`"Sym(...)"`, `"f32[2*s50, 32]..."`).
    """
    return TYPE_ANNOTATION.sub(_unspaced_annotation, text)


def _unspaced_annotation(match: re.Match[str]) -> str:
    inner = match.group(1)
    if "*" not in inner and "/" not in inner:  # no operator: most annotations, kept as they are
        return match.group(0)
    return '"' + SYMPY_OPERATOR.sub(r"\1", inner) + '"'


def sort_global_guards(text: str) -> str:
    """The guards on a frame's globals, one block per global, sorted by the block's text.

    Dynamo installs guards sorted by the length of their name, and names it
    numbered with a process-global counter (`G['__builtins_dict___17']`,
    `G['_1402..._c7']`) grow with every compile earlier in the process, so the
    order of these blocks says how many compiles came first. Guards are a
    conjunction: the order is not part of what they check.
    """
    if "accessed_by=GlobalsGuardAccessor" not in text:  # no globals manager: nothing to sort
        return text
    lines = text.split("\n")
    out: list[str] = []
    i = 0
    while i < len(lines):
        match = "GlobalsGuardAccessor" in lines[i] and GLOBALS_MANAGER.match(lines[i])
        out.append(lines[i])
        i += 1
        if not match:
            continue
        child = len(match.group(1)) + 2  # children sit one `| ` deeper
        blocks: list[list[str]] = []
        while i < len(lines) and (depth := _tree_depth(lines[i])) >= child:
            if depth == child or not blocks:
                blocks.append([])
            blocks[-1].append(lines[i])
            i += 1
        blocks.sort(key=lambda block: _block_key(block, child))
        out.extend(line for block in blocks for line in block)
    return "\n".join(out)


def _block_key(block: list[str], child: int) -> tuple[str, ...]:
    """A global's guard lines with the numbers Dynamo or the renumbering gave its names masked.

    `G['___unnamed_scope_obj1']` is numbered by first use, and first use
    follows Dynamo's order of these blocks, which is what the sort removes:
    sorted by the unmasked name, two such globals kept the order of the
    process that recorded them (the length of an object's id decides it).
    Two blocks whose first lines are alike then (two unnamed scopes) go by
    the guards below. The names are numbered again on the sorted text
    (`STATIC_RULES`).
    """
    return tuple(_masked_numbers(line)[child:] for line in block)


def _masked_numbers(line: str) -> str:
    """The line with its globals' and builtins dicts' numbers masked; each pattern runs only
    on a line that holds its literal part (they start with lookbehinds, slow to scan)."""
    if "_obj" in line:
        line = _RENUMBERED_GLOBAL.sub("_obj", line)
    if "_c" in line and _HAS_GLOBAL_ID.search(line):
        line = GLOBAL_WITH_ID.sub("_obj", line)
    if BUILTINS_DICT_PREFIX in line:
        line = BUILTINS_DICT.sub("__builtins_dict___", line)
    return line


def sort_epilogue_guards(text: str) -> str:
    """Consecutive epilogue guards on Dynamo's globals, sorted by their text with its numbers masked.

    Dynamo adds a root `LAMBDA_GUARD` per global it relates to another
    (`G['m'].torch is G['___unnamed_scope_...']['torch']`, one per unnamed
    scope) in the order it installed those globals, which is the order
    `sort_global_guards` removes; sorted, the numbering by first use that
    follows cannot trade two such globals' numbers.
    """
    if "LAMBDA_GUARD: " not in text:
        return text
    lines, out = text.split("\n"), []
    i = 0
    while i < len(lines):
        run = i
        while run < len(lines) and _epilogue_on_global(lines[run]):
            run += 1
        if run == i:
            out.append(lines[i])
            i += 1
            continue
        out.extend(sorted(lines[i:run], key=lambda line: _block_key([line], 0)))
        i = run
    return "\n".join(out)


def _epilogue_on_global(line: str) -> bool:
    return bool(ROOT_LAMBDA_GUARD.match(line)) and bool(
        GLOBAL_WITH_ID.search(line) or _RENUMBERED_GLOBAL.search(line)
    )


def _tree_depth(line: str) -> int:
    """Characters before `+- ` on a guard tree line; -1 for any other line."""
    index = line.find("+- ")
    return index if index >= 0 and not line[:index].replace("| ", "").strip() else -1


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


# --- the order ----------------------------------------------------------------------

#: Every rule, in the order it runs. Order matters where one rule's output is another's
#: input: provenance comments go before guard comment paths are shortened (which would
#: eat a bare provenance's `(`), and the per-frame renumberings run last, on text whose
#: other counters are already masked and whose guards on globals are already sorted (by
#: their text with those numbers masked), so first use follows an order no process chose.
STATIC_RULES: tuple[Rule, ...] = (
    drop_user_traceback,
    mask_object_ids,
    mask_graph_ids,
    drop_guard_latency,
    renumber_compiled_fns,
    renumber_builtins_dicts,
    mask_aot_ids,
    mask_bytecode_counters,
    mask_fx_eval_keys,
    mask_num_threads,
    drop_addresses,
    mask_tensor_constant_hashes,
    mask_kernel_paths,
    drop_guard_provenance,
    drop_code_object_addresses,
    drop_bare_guard_provenance,
    mask_backend_hash,
    mask_device_properties,
    unspace_sym_products,
    mask_generated_module_names,
    shorten_guard_comment_paths,
    drop_pseudo_file_quotes,
    mask_line_numbers,
    strip_trailing_space,
    mask_frozen_line_numbers,
    canonical_sympy_spacing,
    stable_global_dict_keys,
    sort_global_dict_entries,
    sort_set_built_lists,
    sort_guarded_sets,
    sort_global_guards,
    sort_epilogue_guards,
    per_frame_section(renumber_dynamo_globals),
    per_frame_section(renumber_builtins_dicts),
)


@dataclass(frozen=True)
class Normalizer:
    """All rules in order; path rewriting first so later rules see short paths."""

    rules: Sequence[Rule]

    @classmethod
    def for_paths(cls, rootdir: str, torch_dir: str | None) -> Normalizer:
        """The rules for one checkout; foreign paths are matched against its files."""
        root, torch_root = Path(rootdir), Path(torch_dir) if torch_dir else None
        # each path asked about once per normalizer: a file's existence, not a stat per mention
        rule = PathRule(
            rootdir,
            torch_dir,
            is_local=lru_cache(maxsize=4096)(lambda relative: (root / relative).is_file()),
            is_torch_file=lru_cache(maxsize=4096)(
                lambda inside: torch_root is not None and (torch_root / inside).is_file()
            ),
        )
        return cls((rule, *STATIC_RULES))

    def __call__(self, text: str) -> str:
        for rule in self.rules:
            text = rule(text)
        return text


def unmask_names(text: str) -> str:
    """`resume_in_f_at_<N>` -> `resume_in_f_at_N`: a masked name stays a Python name.

    Only for artifacts that must parse as Python (`program`); elsewhere the
    `<N>` reads better.
    """
    return _MASK_IN_NAME.sub(lambda m: "N" * (len(m.group(0)) // 3), text)
