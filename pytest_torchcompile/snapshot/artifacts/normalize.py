"""Pure, idempotent text rules that make compiler output the same in every run: their order.

Each rule masks one thing that varies between processes, checkouts, hosts,
caches or test order, and leaves the code itself (ops, shapes, dtypes,
strides, kernel bodies) intact. The rules live by what they mask: what the
process and the machine choose (`process_rules.py`), the host, the checkout
and the cache (`host_rules.py`), the guard tree's registries
(`registries.py`), and here, one thing printed two ways. `STATIC_RULES`
gives their order, top to bottom; `Normalizer.for_paths` puts the
checkout's path rule first.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from ..._torch.patterns.code import (
    SPACED_PRODUCT,
    SYM_ANNOTATION,
    SYMPY_OPERATOR,
    TYPE_ANNOTATION,
)
from ..._torch.patterns.dynamo import (
    BUILTINS_DICT,
    BUILTINS_DICT_PREFIX,
    GLOBAL_WITH_ID,
    NONE_TRACE,
    USER_TRACEBACK,
)
from ..._torch.patterns.guards import (
    BARE_PROVENANCE,
    GLOBALS_MANAGER,
    PROVENANCE_TAIL,
    ROOT_LAMBDA_GUARD,
)
from .host_rules import (
    PathRule,
    drop_guard_latency,
    drop_pseudo_file_quotes,
    mask_frozen_line_numbers,
    mask_generated_module_names,
    mask_kernel_paths,
    mask_line_numbers,
    mask_num_threads,
    shorten_guard_comment_paths,
    strip_trailing_space,
)
from .process_rules import (
    HAS_GLOBAL_ID,
    drop_addresses,
    drop_code_object_addresses,
    mask_aot_ids,
    mask_backend_hash,
    mask_bytecode_counters,
    mask_device_properties,
    mask_fx_eval_keys,
    mask_graph_ids,
    mask_object_ids,
    mask_tensor_constant_hashes,
    renumber_builtins_dicts,
    renumber_compiled_fns,
    renumber_dynamo_globals,
    sort_guarded_sets,
)
from .registries import sort_global_dict_entries, sort_set_built_lists, stable_global_dict_keys
from .sections import per_frame_section

Rule = Callable[[str], str]

_MASK_IN_NAME = re.compile(r"(?<=\w)(?:<N>)+")
#: a Dynamo global as `renumber_dynamo_globals` writes it: `___unnamed_scope_obj0`, `G['_obj1']`
_RENUMBERED_GLOBAL = re.compile(r"(?<=[A-Za-z_'])_obj\d+(?![\w/])")


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
    if "_c" in line and HAS_GLOBAL_ID.search(line):
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
