"""Guards on what a process chose (a registry's positions, a set-built list's order), without torch.

Each rule, both halves: the form another process prints reads the same, and another value
(another class in the registry, another axis) still reads as another check, a behaviour change.
`tests/data/tensordict_memo_guards_2.13.txt` is the guard tree torch 2.13 printed for
`fixtures/other_libraries.tensordict_dqn_loss` (tensordict's `_TENSORCLASS_MEMO`, looked up
five times, two of its keys named by the sources that read them); `another_process` prints it
as a process in which other tests had added classes first.
"""

from __future__ import annotations

import re

import pytest

from pytest_torchcompile._torch.formats import PRELUDE
from pytest_torchcompile._torch.guard_tree import GuardRow
from pytest_torchcompile.common.capture_log import FrameKey
from pytest_torchcompile.snapshot.artifacts.compact import compact_guards
from pytest_torchcompile.snapshot.artifacts.normalize import Normalizer
from pytest_torchcompile.snapshot.artifacts.registries import (
    sort_set_built_lists,
    stable_global_dict_keys,
)
from pytest_torchcompile.snapshot.compare.behaviour import BEHAVIOUR, compare_case
from pytest_torchcompile.snapshot.emit.guards import guard_function, guard_source
from tests.conftest import DATA

pytestmark = pytest.mark.torch_independent

NORMALIZE = Normalizer.for_paths("/home/ci/proj", "/opt/venv/lib/python3.11/site-packages/torch")
MEMO_TREE = (DATA / "tensordict_memo_guards_2.13.txt").read_text()
MEMO = "G['__import_tensordict_dot_utils']._TENSORCLASS_MEMO"


def stored(tree: str) -> str:
    """The guards as the snapshot stores them."""
    return compact_guards("# ===== frame 0 compile 0: forward =====\n" + NORMALIZE(tree))


def another_process(tree: str, shift: int = 3) -> str:
    """The same guards where other tests had added `shift` classes to the memo first, and had looked
    `dict` up before `Parameter` (the two entries trade places)."""
    moved = {"4": "4", "36": "40", "37": "37", "38": "38", "39": "36", "40": "39"}
    text = re.sub(
        r"(\)\)\[|index=)(\d+)",
        lambda m: m[1] + str(int(moved[m[2]]) + shift * (m[2] != "4")),
        tree,
    )
    blocks = re.split(r"(?m)^(?=\| \| \| \| \+- KeyValueManager)", text)
    head, pairs = blocks[0], blocks[1:]
    last = pairs[-1].split("\n")
    tail = "\n".join(line for line in last if not line.startswith("| | | | "))
    pairs[-1] = "\n".join(line for line in last if line.startswith("| | | | ")) + "\n"
    pairs.sort(key=lambda block: int(re.search(r"index=(\d+)", block)[1]))
    return head + "".join(pairs) + tail


def test_registry_positions_that_earlier_tests_moved_read_the_same() -> None:
    other = another_process(MEMO_TREE)
    assert other != MEMO_TREE and "[43]" in other
    assert stored(other) == stored(MEMO_TREE)
    text = stored(MEMO_TREE)
    assert "))[3" not in text and "))[4" not in text  # no position is stored
    assert f"ID_MATCH: <class 'torch.nn.parameter.Parameter'> in dict.keys({MEMO})" in text
    assert f"FALSE_MATCH: {MEMO}[<class 'torch.nn.parameter.Parameter'>] == False" in text
    # a key another guarded source holds is named by that source
    assert f"LAMBDA_GUARD: G['__import_tensordict'].TensorDict in dict.keys({MEMO})" in text
    assert f"{MEMO}[G['__import_tensordict'].TensorDict] == False" in text
    assert NORMALIZE(NORMALIZE(MEMO_TREE)) == NORMALIZE(MEMO_TREE)


def test_another_class_in_the_registry_is_a_behaviour_change() -> None:
    changed = MEMO_TREE.replace(
        "type=<class 'tensordict.nn.params.TensorDictParams'>",
        "type=<class 'tensordict.nn.params.OtherParams'>",
    )
    assert stored(changed) != stored(MEMO_TREE)
    diff = compare_case({"guards": stored(MEMO_TREE)}, {"guards": stored(changed)})
    assert diff.verdict == BEHAVIOUR
    assert "OtherParams" in " ".join(f.message for f in diff.findings)


def test_a_key_no_guard_names_is_masked_not_dropped() -> None:
    text = stored(MEMO_TREE)
    assert f"TRUE_MATCH: {MEMO}[list(dict.keys({MEMO}))[<key>]] == True" in text


def test_a_key_only_checked_by_position_is_left_out() -> None:
    # an identity guard on a key whose value the compile never read: an iteration over the registry
    line = f"| | +- ID_MATCH: ___check_obj_id(list(dict.keys({MEMO}))[2], <id>), type=<class 'X'>"
    assert stable_global_dict_keys(line) == ""


def test_dicts_of_the_frame_keep_their_positions() -> None:
    line = (
        "| | +- ID_MATCH: ___check_obj_id(list(dict.keys(L['self'].d))[2], <id>), type=<class 'X'>"
    )
    assert stable_global_dict_keys(line) == line


# --- lists einops builds from sets -------------------------------------------------------------

EINOPS = (
    "| | +- EQUALS_MATCH: L['self']._modules['from_patches']._multirecipe[3]"
    ".input_composition_known_unknown[2] == ({known}, [5])"
)


def test_known_axes_in_hash_order_read_the_same_sorted() -> None:
    one, other = EINOPS.format(known="[4, 3]"), EINOPS.format(known="[3, 4]")
    assert sort_set_built_lists(one) == sort_set_built_lists(other) == other
    assert NORMALIZE(one) == NORMALIZE(other)


def test_another_axis_is_a_behaviour_change() -> None:
    one, other = (
        f"# ===== frame 0 compile 0: forward =====\n{EINOPS.format(known=k)}\n"
        for k in ("[4, 3]", "[4, 2]")
    )
    assert sort_set_built_lists(one) != sort_set_built_lists(other)
    diff = compare_case({"guards": NORMALIZE(one)}, {"guards": NORMALIZE(other)})
    assert diff.verdict == BEHAVIOUR
    assert diff.findings[0].fact == (
        "guards changed: EQUALS_MATCH on L['self']._modules['from_patches']._multirecipe[3]"
        ".input_composition_known_unknown[2]"
    )


def test_other_lists_keep_their_order() -> None:
    for kept in (
        "| | +- EQUALS_MATCH: L['self'].axes_permutation == [2, 1, 0]",
        "| | +- EQUALS_MATCH: L['self'].input_composition_known_unknown == [3, 1]",
    ):
        assert sort_set_built_lists(kept) == kept


# --- the program file's checks -----------------------------------------------------------------


class Memo:
    """A stand-in for tensordict.utils, holding the memo."""

    def __init__(self, memo: dict) -> None:
        self._TENSORCLASS_MEMO = memo


def memo_rows(tree: str, ids: dict[str, int]) -> tuple[GuardRow, ...]:
    """The leaf guards of the tree as Dynamo's cache gives them, the class ids set to `ids`."""
    rows = []
    for line in tree.split("\n"):
        leaf = re.match(r"^[| ]*\+- ([A-Z_]+): (.*?)(?:  # .*)?$", line)
        if leaf is None or "Manager" in leaf[1]:
            continue
        code = re.sub(
            r"(___check_obj_id\(.*?, )\d+(\), type=<class '([^']*)'>)",
            lambda m: f"{m[1]}{ids.get(m[3], 0)}{m[2]}",
            leaf[2],
        )
        rows.append(GuardRow(leaf[1], "", code, "", 0))
    return tuple(rows)


def guards_hold(tree: str, memo: dict, tensordict: type, tensor: type) -> bool:
    classes = [k for k in memo if isinstance(k, type)]
    ids = {f"{k.__module__}.{k.__qualname__}".removeprefix("builtins."): id(k) for k in classes}
    emitted = guard_function(FrameKey(0, 0), "forward", memo_rows(tree, ids))
    scope: dict = {emitted.table: emitted.ids}
    exec(PRELUDE + "\n\n" + emitted.text, scope)
    G = {
        "__import_tensordict_dot_utils": Memo(memo),
        "__import_tensordict": type("TD", (), {"TensorDict": tensordict}),
        "_140270929074496_c0": type("T", (), {"Tensor": tensor}),
    }
    return scope[emitted.name]({}, G)


def test_the_program_finds_registry_keys_by_what_they_hold_in_any_order() -> None:
    import torch

    td = type("TensorDict", (), {})
    params = type("TensorDictParams", (), {})
    params.__module__, params.__qualname__ = "tensordict.nn.params", "TensorDictParams"
    tensorclass = type("Step", (), {})
    entries = {
        torch.nn.Parameter: False,
        td: False,
        torch.Tensor: False,
        dict: False,
        params: False,
    }
    # fewer and other keys before them, in another order: what a fresh process holds (its
    # first five are tensorclasses, True, as in any process: the key at [4] no guard names stays
    # read by position)
    fresh = {type(f"C{i}", (), {}): True for i in range(4)} | {tensorclass: True}
    fresh |= {dict: False, params: False, torch.Tensor: False, td: False, torch.nn.Parameter: False}
    padded = {type(f"C{i}", (), {}): True for i in range(41)}
    assert guards_hold(MEMO_TREE, padded | entries, td, torch.Tensor)
    assert guards_hold(MEMO_TREE, fresh, td, torch.Tensor)
    # a class missing, or holding another value: the guards fail
    assert not guards_hold(
        MEMO_TREE, {k: v for k, v in fresh.items() if k is not params}, td, torch.Tensor
    )
    assert not guards_hold(MEMO_TREE, {**fresh, td: True}, td, torch.Tensor)


def test_the_program_compares_a_set_built_list_sorted() -> None:
    code = EINOPS.format(known="[4, 3]").split("EQUALS_MATCH: ")[1]
    emitted = guard_function(
        FrameKey(0, 0), "forward", (GuardRow("EQUALS_MATCH", "", code, "", 0),)
    )
    scope: dict = {emitted.table: emitted.ids}
    exec(PRELUDE + "\n\n" + emitted.text, scope)
    recipe = type("R", (), {})()

    def holds(known: list[int]) -> bool:
        recipe.input_composition_known_unknown = [None, None, (known, [5])]
        patches = type("M", (), {"_multirecipe": {3: recipe}})()
        return scope[emitted.name](
            {"self": type("S", (), {"_modules": {"from_patches": patches}})()}, {}
        )

    assert holds([3, 4]) and holds([4, 3])
    assert not holds([4, 2]) and not holds([3, 4, 2])


# --- another tensorclass where one was --------------------------------------------------------

#: the guard on the DQN loss's batch, as `fixtures/other_libraries.tensordict_dqn_loss` stores it
STEP_GUARD = (
    "TYPE_MATCH: ___check_type_id(L['batch']._tensordict._tensordict['next'], <id>), "
    "type=<class 'fixtures.tensorclasses.Step'>  # if not _is_tensor_collection(type(value))  "
    "# base.py:<N> in <dictcomp> (HINT: type Step)"
)


def test_another_class_in_a_type_check_is_a_behaviour_change_that_names_both() -> None:
    """A type check's id is masked: its class is what it compares (an identity check's note is
    not read: torch 2.11 prints the object's repr there, later releases its class)."""
    old = f"# ===== frame 0 compile 0: forward =====\n{STEP_GUARD}\n"
    diff = compare_case({"guards": old}, {"guards": old.replace("Step", "Outcome")})
    assert diff.verdict == BEHAVIOUR
    assert diff.findings[0].fact == (
        "guards changed: TYPE_MATCH on L['batch']._tensordict._tensordict['next']: "
        "<class 'fixtures.tensorclasses.Step'> -> <class 'fixtures.tensorclasses.Outcome'>"
    )
    moved = old.replace("# base.py", "# other.py")
    assert compare_case({"guards": old}, {"guards": moved}).verdict != BEHAVIOUR


def test_a_key_that_is_another_dicts_key_stays_a_check_by_position() -> None:
    """torchao's tables of dtypes share their keys, and Dynamo guards one key by the other's
    position; nothing names either key, so both stay read by position (it used to be written
    half replaced, a file Python could not read)."""
    bounds, widths = "G['m']._DTYPE_TO_QVALUE_BOUNDS", "G['m']._DTYPE_TO_BIT_WIDTH"
    code = f"list(dict.keys({bounds}))[1] is list(dict.keys({widths}))[0]"
    source, name, _ = guard_source(
        FrameKey(0, 0), "forward", (GuardRow("EPILOGUE", "", code, "", 0),)
    )
    from pytest_torchcompile._torch.program import runtime

    scope: dict = {"first_failing": runtime.first_failing}
    exec(PRELUDE + "\n\n" + source, scope)
    shared = object()

    def module(first: dict, second: dict) -> dict:
        names = {"_DTYPE_TO_QVALUE_BOUNDS": first, "_DTYPE_TO_BIT_WIDTH": second}
        return {"m": type("M", (), names)}

    assert scope[name]({}, module({"a": 0, shared: 1}, {shared: 2}), {}) is None
    assert scope[name]({}, module({"a": 0, shared: 1}, {"b": 2}), {}) is not None


def test_a_numpy_value_is_checked_as_dynamo_checks_it_and_an_unknown_helper_is_not_run() -> None:
    """Dynamo checks a module's numpy integer (normflows' `DiagGaussian.d`) as the tensor
    `torch.as_tensor` makes of it, through its `___from_numpy` helper: the file's guards check it
    the same way. A guard calling a helper of Dynamo's the prelude lacks has no Python form (it is
    listed as not re-checked), never a NameError when the file runs."""
    import numpy as np

    from pytest_torchcompile._torch.program import runtime

    size = "___from_numpy(L['self'].d)"
    rows = (
        GuardRow("TENSOR_MATCH", "", f"check_tensor({size}, Tensor, DispatchKeySet(CPU, "
                 "BackendSelect, ADInplaceOrView, AutogradCPU), torch.int64, device=None, "
                 "requires_grad=False, size=[], stride=[])", "", 0),
        GuardRow("EPILOGUE", "", "___tuple_iterator_len(L['it']) == 2", "", 0),
    )  # fmt: skip
    source, name, not_checked = guard_source(FrameKey(0, 0), "forward", rows)
    assert not_checked == ["EPILOGUE: ___tuple_iterator_len(L['it']) == 2"]
    scope: dict = {"first_failing": runtime.first_failing}
    exec(PRELUDE + "\n\n" + source, scope)
    holder = type("M", (), {"d": np.prod((2, 3))})()
    assert scope[name]({"self": holder}, {}, {}) is None
    holder.d = np.float32(6.0)
    assert scope[name]({"self": holder}, {}, {}) is not None  # a float32 now


def test_a_numpy_scalar_is_written_as_one() -> None:
    """The file's rebuilt module holds the numpy integer it was compiled with, not an int (which
    the guard above refuses: `python program.py` on normflows failed so)."""
    import numpy as np

    from pytest_torchcompile._torch.program import runtime
    from pytest_torchcompile.snapshot.emit.values import constant_source

    for value in (np.int64(6), np.float32(0.5), np.bool_(True)):
        source = constant_source(value)
        assert source is not None, value
        rebuilt = eval(source, {"import_object": runtime.import_object})  # noqa: S307
        assert type(rebuilt) is type(value) and rebuilt == value
