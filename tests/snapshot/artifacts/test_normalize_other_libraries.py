"""The rules found on models of other libraries, on their real text, without running torch.

`tests/data/other_libraries_raw_2.13.json` holds raw trace payloads (before any
rule) of `fixtures/other_libraries.py` models on torch 2.13, the same model in
two processes with other hash seeds: whatever differs between the two is
process noise, and each rule below takes away one cause of it. The other half
of the promise holds too: what the guard or the code checks still shows.
"""

from __future__ import annotations

import json
import keyword
import re
import types

import pytest

from pytest_torchcompile.snapshot.artifacts.host_rules import mask_generated_module_names
from pytest_torchcompile.snapshot.artifacts.normalize import (
    Normalizer,
    sort_global_guards,
)
from pytest_torchcompile.snapshot.artifacts.process_rules import (
    mask_fx_eval_keys,
    mask_tensor_constant_hashes,
    sort_guarded_sets,
)
from pytest_torchcompile.snapshot.compare.behaviour import BEHAVIOUR, compare_case
from tests.conftest import DATA

RAW = json.loads((DATA / "other_libraries_raw_2.13.json").read_text())
NORMALIZE = Normalizer.for_paths("/home/ci/proj", "/opt/venv/lib/python3.11/site-packages/torch")


def both(name: str) -> tuple[str, str]:
    """The lines of one cause as the two processes printed them."""
    first, second = RAW[name]
    return "\n".join(first), "\n".join(second)


# --- a set's iteration order (PYTHONHASHSEED) -----------------------------------------


def test_kornia_set_constants_print_in_hash_order_and_read_the_same_sorted() -> None:
    first, second = both("set_order")
    assert first != second  # {'valid', 'same'} in one process, {'same', 'valid'} in the other
    assert sort_guarded_sets(first) == sort_guarded_sets(second)
    assert NORMALIZE(first) == NORMALIZE(second)
    assert (
        "._VALID_BORDERS == {'circular', 'constant', 'reflect', 'replicate'}  "
        "# str(border_type).lower() in _VALID_BORDERS,"
    ) in sort_guarded_sets(first)


def test_einops_frozenset_of_keywords_reads_the_same_sorted() -> None:
    first, second = both("frozenset_order")
    assert first != second
    assert sort_guarded_sets(first) == sort_guarded_sets(second)
    words = re.search(r"frozenset\(\{(.*)\}\)", sort_guarded_sets(first)).group(1).split(", ")
    assert words == sorted(words) and len(words) == 35 and "'lambda'" in words


def test_sorting_sets_keeps_the_comment_the_elements_and_other_braces() -> None:
    line = (
        "EQUALS_MATCH: L['m'] == {'b', ('a', frozenset({3, 1}))}  # if m in {'y', 'x'}:  # f.py:3"
    )
    assert sort_guarded_sets(line) == (
        "EQUALS_MATCH: L['m'] == {'b', ('a', frozenset({1, 3}))}  # if m in {'y', 'x'}:  # f.py:3"
    )
    for kept in (
        "EQUALS_MATCH: L['d'] == {'b': 1, 'a': 2}",  # a dict keeps its order (its repr is insertion order)
        'GLOBAL_STATE: ___check_global_state() against {"b":1,"a":0}',
        "    for(int64_t x0=0; x0<4; x0+=1) { tmp0 = {b, a}; }",
        "EQUALS_MATCH: L['s'] == '{b, a}'",
    ):
        assert sort_guarded_sets(kept) == kept


def test_other_set_elements_are_a_behaviour_change_other_order_is_not() -> None:
    """A stored snapshot recorded before the rule, compared with today's run: not `behaviour changed`."""
    first, second = (
        f"# ===== frame 0 compile 0: forward =====\n{text}\n" for text in both("set_order")
    )
    assert compare_case({"guards": first}, {"guards": second}).verdict != BEHAVIOUR
    changed = second.replace("'valid', 'same'", "'valid', 'full'")
    assert compare_case({"guards": first}, {"guards": changed}).verdict == BEHAVIOUR


# --- generated names: FX's counter, tempfile modules, a constant's hash ----------------------


def test_fx_eval_key_counter_is_masked_and_the_line_in_the_generated_code_stays() -> None:
    first, second = both("eval_with_key")
    assert first.strip() != second.strip()  # <eval_with_key>.11 and .97
    assert mask_fx_eval_keys(first).strip() == mask_fx_eval_keys(second).strip()
    assert "# File: <eval_with_key>.<N>:5 in forward, code: getitem = x1[" in mask_fx_eval_keys(
        first
    )


#: e3nn's first line, as a fresh recording printed it in Dynamo's graph and in a guard's comment:
#: the module compiled was a copy (the plugin compiles copies), whose GraphModule FX re-traced
#: from the original's generated code; the committed snapshot had compiled the original.
ORIGINAL_AND_COPY = [
    (
        "        # File: <eval_with_key>.11:5 in forward, code: getitem = x1[(Ellipsis, slice(None, 1, None))]",
        "        # File: <eval_with_key>.40 from <eval_with_key>.39:11 in forward:5 in forward, code: getitem = x1[(Ellipsis, slice(None, 1, None))]",
    ),
    (
        "TYPE_MATCH: ___check_type_id(G['___unnamed_scope_obj0'], <id>), type=<class 'dict'>  # broadcast_tensors = torch.functional.broadcast_tensors(getitem, getitem_1);  getitem = getitem_1 = None  # <eval_with_key>.<N>:7 in forward (HINT: type dict)",
        "TYPE_MATCH: ___check_type_id(G['___unnamed_scope_obj0'], <id>), type=<class 'dict'>  # broadcast_tensors = torch.functional.broadcast_tensors(getitem, getitem_1);  getitem = getitem_1 = None  # <eval_with_key>.<N> from <eval_with_key>.<N>:11 in forward:7 in forward (HINT: type dict)",
    ),
    # `torch.fx.symbolic_trace` of a user's function: the origin is the user's file
    (
        "  # <eval_with_key>.3:7 in forward",
        "  # <eval_with_key>.0 from fixtures/model.py:8 in forward:7 in forward",
    ),
]


@pytest.mark.parametrize(("original", "copy"), ORIGINAL_AND_COPY)
def test_a_copied_fx_module_reads_as_the_original(original: str, copy: str) -> None:
    assert mask_fx_eval_keys(copy) == mask_fx_eval_keys(original)
    assert NORMALIZE(copy) == NORMALIZE(original)
    assert ":7 in forward" in mask_fx_eval_keys(copy) or ":5 in forward" in mask_fx_eval_keys(copy)


def test_torch_geometric_generated_module_names_are_masked() -> None:
    first, second = both("generated_module")
    assert first != second
    assert NORMALIZE(first) == NORMALIZE(second)
    assert (
        "# File: torch_geometric.nn.conv.gat_conv_GATConv_edge_updater_<tmp>.py:<N> in edge_collect, "
        "code: edge_index_i = edge_index[i]"
    ) in NORMALIZE(first)


def test_generated_module_names_in_guard_comments_are_masked() -> None:
    first, second = both("generated_module_guard_comment")
    assert NORMALIZE(first) == NORMALIZE(second)
    assert "# torch_geometric.nn.conv.gat_conv_GATConv_propagate_<tmp>.py:<N> in collect" in (
        NORMALIZE(first)
    )


def test_a_project_file_is_not_a_generated_module() -> None:
    for kept in (
        "fixtures/other_libraries.py:12",
        "models/gcn_conv_abcdefgh.py",
        "a/b.c/d_12345678.py",
    ):
        assert mask_generated_module_names(kept) == kept


def test_inductor_constant_tensor_hash_is_masked_and_its_layout_stays() -> None:
    first, second = both("tensor_constant")
    assert first != second
    assert mask_tensor_constant_hashes(first) == mask_tensor_constant_hashes(second)
    assert (
        "_tensor_constant0 = None  # device(type='cpu') torch.float32 (1, 2) (2, 1) <hash>"
        in mask_tensor_constant_hashes(first)
    )


# --- objects numbered by first use, after a stable sort ---------------------------------


def other_process(tree: str) -> str:
    """The same guards as a process whose two unnamed scopes got each other's addresses prints
    them: Dynamo orders a frame's globals by the length of their names, then by insertion, so the
    two blocks trade places, and so do the two epilogue guards that read them (seen in a
    stability run: `+- LAMBDA_GUARD: ... is G['___unnamed_scope_obj0']['torch']`, either first)."""
    first, second = sorted(set(re.findall(r"___unnamed_scope_\d+_c\d+", tree)))
    swapped = tree.replace(first, "@").replace(second, first).replace("@", second)
    lines = swapped.split("\n")
    starts = [i for i, line in enumerate(lines) if "source=G['___unnamed_scope_" in line]
    assert len(starts) == 2
    end = starts[1] + 1
    while end < len(lines) and lines[end].startswith("| | | "):
        end += 1
    a, b = lines[starts[0] : starts[1]], lines[starts[1] : end]
    lines = lines[: starts[0]] + b + a + lines[end:]
    epilogue = [
        i
        for i, line in enumerate(lines)
        if line.startswith("+- LAMBDA_GUARD: ") and "___unnamed_scope_" in line
    ]
    assert len(epilogue) == 2
    first, second = epilogue
    lines[first], lines[second] = lines[second], lines[first]
    return "\n".join(lines)


def test_two_unnamed_scopes_of_e3nn_are_numbered_the_same_whatever_their_order() -> None:
    tree = RAW["two_unnamed_scopes_guards"]
    swapped = other_process(tree)
    assert swapped != tree
    assert NORMALIZE(tree) == NORMALIZE(swapped)
    normalized = NORMALIZE(tree)
    assert "G['___unnamed_scope_obj0']" in normalized and "G['___unnamed_scope_obj1']" in normalized
    assert NORMALIZE(normalized) == normalized


def test_global_blocks_alike_but_for_their_numbers_go_by_the_guards_below() -> None:
    tree = "\n".join(
        [
            "| +- GuardManager: source=G, accessed_by=GlobalsGuardAccessor",
            "| | +- GuardManager: source=G['___unnamed_scope_obj0'], accessed_by=DictGetItemGuardAccessor",
            "| | | +- TYPE_MATCH: check(G['___unnamed_scope_obj0'])  # zeta",
            "| | +- GuardManager: source=G['___unnamed_scope_obj1'], accessed_by=DictGetItemGuardAccessor",
            "| | | +- TYPE_MATCH: check(G['___unnamed_scope_obj1'])  # alpha",
        ]
    )
    assert sort_global_guards(tree).split("\n")[2].endswith("# alpha")


# --- the program file's guard on einops' keyword set ------------------------------------


@pytest.mark.parametrize("line", RAW["set_contains"])
def test_einops_set_contains_guard_is_written_so_it_runs_on_a_frozenset(line: str) -> None:
    from pytest_torchcompile._torch.formats import PRELUDE
    from pytest_torchcompile._torch.guard_tree import GuardRow
    from pytest_torchcompile.snapshot.emit.guards import row_checks

    code = line.split("+- SET_CONTAINS: ", 1)[1].split("  # ", 1)[0]
    row = GuardRow(kind="SET_CONTAINS", source="", code=code, comment="", type_id=0)
    (check,) = row_checks(row, "IDS", {})
    assert check.startswith("not ___set_contains(G['__import_einops_dot_parsing']")
    scope: dict = {}
    exec(PRELUDE, scope)
    # what the guard reads: einops.parsing's `keyword`, the standard library's, whose `iskeyword`
    # is a frozenset's `__contains__`; Dynamo's own spelling raises on it
    parsing = types.SimpleNamespace(keyword=keyword)
    assert eval(check, scope, {"G": {"__import_einops_dot_parsing": parsing}}) is True
    with pytest.raises(TypeError, match="doesn't apply to a 'frozenset' object"):
        eval(code, scope, {"G": {"__import_einops_dot_parsing": parsing}})
    held = types.SimpleNamespace(
        keyword=types.SimpleNamespace(iskeyword={"n", "b", "d"}.__contains__)
    )
    assert eval(check, scope, {"G": {"__import_einops_dot_parsing": held}}) is False


# --- a line quoted from a pseudo-file (`<string>`) -----------------------------------


#: a guard pyg's namedtuples install (`_tuple_new`, compiled from `<string>`), as a plain run
#: prints it and as an xdist worker on Python 3.13 does: that worker's `python -c` program is
#: registered as `<string>`'s source, so its line is quoted (both seen on the same model)
PLAIN_RUN = (
    "| | +- TYPE_MATCH: ___check_type_id(G['___unnamed_scope_obj0'], 94812)"
    "                 #   # <string>:1 in <lambda> (HINT: type dict)"
)
XDIST_WORKER = (
    "| | +- TYPE_MATCH: ___check_type_id(G['___unnamed_scope_obj0'], 94812)"
    "                 # import sys;exec(eval(sys.stdin.readline()))  # <string>:1 in <lambda> (HINT: type dict)"
)


def test_a_line_quoted_from_string_is_no_users_and_reads_the_same_dropped() -> None:
    assert NORMALIZE(PLAIN_RUN) == NORMALIZE(XDIST_WORKER)
    assert "<string>:1 in <lambda>" in NORMALIZE(XDIST_WORKER)  # where the guard came from stays
    # a real file's quoted line stays: it is the user's code
    real = XDIST_WORKER.replace("<string>:1", "model.py:12")
    assert "import sys;exec" in NORMALIZE(real)
