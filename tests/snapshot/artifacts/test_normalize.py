"""Unit tests for the pure text rules in `pytest_torchcompile.snapshot.artifacts.normalize`.

Snapshots are only useful if the same model gives the same text on every run,
host and checkout, and if a real change to the compiled code still shows up.
These tests pin both halves of that promise without running torch: each rule
masks exactly the varying part of realistic torch 2.13 output, nothing
semantic (ops, shapes, strides, constants, kernel bodies) is touched, and every
rule is idempotent and deterministic, as the module docstring claims.

Gaps found while writing these tests (a lazy id mask reaching into source
comments, a `#` plus whitespace crossing a newline, an unanchored `NoneType: None`, a double
slash in paths) are fixed and kept as regression tests at the end.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from pytest_torchcompile.snapshot.artifacts.catalogue import ARTIFACTS
from pytest_torchcompile.snapshot.artifacts.compact import drop_fx_frees
from pytest_torchcompile.snapshot.artifacts.host_rules import (
    PathRule,
    drop_guard_latency,
    mask_kernel_paths,
    mask_line_numbers,
    mask_num_threads,
    shorten_guard_comment_paths,
    strip_trailing_space,
)
from pytest_torchcompile.snapshot.artifacts.normalize import (
    STATIC_RULES,
    Normalizer,
    Rule,
    drop_guard_provenance,
    drop_user_traceback,
    unmask_names,
)
from pytest_torchcompile.snapshot.artifacts.older_forms import written_out
from pytest_torchcompile.snapshot.artifacts.process_rules import (
    drop_addresses,
    mask_aot_ids,
    mask_bytecode_counters,
    mask_graph_ids,
    mask_object_ids,
    renumber_builtins_dicts,
    renumber_compiled_fns,
)

ROOT = "/home/u/proj"
TORCH = "/venv/lib/python3.11/site-packages/torch"
UUID = "595f6bce_1234_4abc_9def_0123456789ab"

NORMALIZE = Normalizer.for_paths(ROOT, TORCH)
LOCAL_FILES = frozenset({"fixtures/zoo.py", "zoo.py", "b.py"})
LOCAL_AWARE = PathRule(ROOT, TORCH, LOCAL_FILES.__contains__)


def normalize_program(text: str) -> str:
    return ARTIFACTS["program"].normalize(NORMALIZE, text)


ALL_RULES: list[Rule] = [
    *STATIC_RULES,
    PathRule(ROOT, TORCH),
    LOCAL_AWARE,
    NORMALIZE,
    unmask_names,
    normalize_program,
    drop_fx_frees,
    written_out,
]


def rule_id(rule: Rule) -> str:
    return getattr(rule, "__name__", type(rule).__name__)


# --- one rule, one thing masked ---------------------------------------------

EXAMPLES: list[tuple[Callable[[str], str], str, str]] = [
    (
        mask_object_ids,
        "| +- ID_MATCH: ___check_obj_id(G['torch'], 140270709103312), type=<class 'module'>",
        "| +- ID_MATCH: ___check_obj_id(G['torch'], <id>), type=<class 'module'>",
    ),
    (
        mask_object_ids,
        "| +- TYPE_MATCH: ___check_type_id(L['self']._modules['lin']._parameters, 94823012345600), type=<class 'dict'>",
        "| +- TYPE_MATCH: ___check_type_id(L['self']._modules['lin']._parameters, <id>), type=<class 'dict'>",
    ),
    (
        mask_graph_ids,
        "class GraphModule(torch.nn.Module):  # graph id: 139812345678",
        "class GraphModule(torch.nn.Module):  # graph id: <id>",
    ),
    (
        drop_guard_latency,
        "TREE_GUARD_MANAGER:\n+- RootGuardManager\n| +- DEFAULT_DEVICE: utils_device.CURRENT_DEVICE == None\nGuard latency = 70.56 us\n",
        "TREE_GUARD_MANAGER:\n+- RootGuardManager\n| +- DEFAULT_DEVICE: utils_device.CURRENT_DEVICE == None\n",
    ),
    (drop_guard_latency, "+- RootGuardManager\n  Guard latency = 3.1 us", "+- RootGuardManager\n"),
    (
        renumber_compiled_fns,
        f"graph_out_0 = __compiled_fn_7_{UUID}(x)\ny = __compiled_fn_9_{UUID.replace('9def', '8aaa')}(graph_out_0)",
        "graph_out_0 = __compiled_fn_0(x)\ny = __compiled_fn_1(graph_out_0)",
    ),
    (
        renumber_compiled_fns,
        f"a = __compiled_fn_7_{UUID}(x)\nb = __compiled_fn_7_{UUID}(a)\nc = __compiled_fn_3(b)",
        "a = __compiled_fn_0(x)\nb = __compiled_fn_0(a)\nc = __compiled_fn_1(b)",
    ),
    (
        renumber_builtins_dicts,
        "source=G['__builtins_dict___20']['any'] ... G['__builtins_dict___20'] ... G['__builtins_dict___7']",
        "source=G['__builtins_dict___0']['any'] ... G['__builtins_dict___0'] ... G['__builtins_dict___1']",
    ),
    (mask_aot_ids, "# AOT ID: ['3_inference']", "# AOT ID: ['<N>_inference']"),
    (mask_aot_ids, "# AOT ID: ['12_backward']", "# AOT ID: ['<N>_backward']"),
    (
        mask_line_numbers,
        "        # File: fixtures/zoo.py:42 in forward, code: return x.relu()",
        "        # File: fixtures/zoo.py:<N> in forward, code: return x.relu()",
    ),
    (mask_line_numbers, '  File "x.py", line 9, in f', '  File "x.py", line <N>, in f'),
    (
        mask_line_numbers,
        "# ===== frame 1 compile 0: torch_dynamo_resume_in_forward_at_13 =====",
        "# ===== frame 1 compile 0: torch_dynamo_resume_in_forward_at_<N> =====",
    ),
    (mask_bytecode_counters, "return __resume_at_60_4(x)", "return __resume_at_<N>(x)"),
    (
        mask_bytecode_counters,
        "__temp_35 = []\n__temp_36 = [__temp_35]\n__temp_35.extend([])",
        "__temp_0 = []\n__temp_1 = [__temp_0]\n__temp_0.extend([])",
    ),
    (
        mask_num_threads,
        '{"grad_mode":true,"num_threads":16,"torch_function":true}',
        '{"grad_mode":true,"num_threads":<N>,"torch_function":true}',
    ),
    (drop_addresses, "<function f at 0x7f38aa12bc40>", "<function f>"),
    (
        drop_addresses,
        "<bound method M.forward of <M object at 0x7F38AA12BC40>>",
        "<bound method M.forward of <M object>>",
    ),
    (
        drop_user_traceback,
        "Graph break in user code at zoo.py:30\n"
        "Graph Break Reason: Call to `torch._dynamo.graph_break()`\n"
        "  Explanation: User-inserted graph break.\n"
        "\n"
        "User code traceback:\n"
        '  File "zoo.py", line 30, in forward\n'
        "    torch._dynamo.graph_break()\n"
        "\n"
        "NoneType: None\n",
        "Graph break in user code at zoo.py:30\n"
        "Graph Break Reason: Call to `torch._dynamo.graph_break()`\n"
        "  Explanation: User-inserted graph break.\n"
        "\n",
    ),
    (
        drop_user_traceback,
        'User code traceback:\n  File "zoo.py", line 30, in forward\n    g()\nTraceback (most recent call last):\n',
        "Traceback (most recent call last):\n",
    ),
    (
        shorten_guard_comment_paths,
        "| +- TENSOR_MATCH: check_tensor(L['x'], ...)  # y = x.sin()  # mp/probe/probe2.py:8 in f",
        "| +- TENSOR_MATCH: check_tensor(L['x'], ...)  # y = x.sin()  # probe2.py:8 in f",
    ),
    (
        shorten_guard_comment_paths,
        "| +- LAMBDA_GUARD: ... == None  # _dynamo/output_graph.py:471 in init_ambient_guards",
        "| +- LAMBDA_GUARD: ... == None  # output_graph.py:471 in init_ambient_guards",
    ),
    (
        mask_kernel_paths,
        "# kernel path: /tmp/torchinductor_root/ab/cabc.py",
        "# kernel path: <cache>",
    ),
    (
        strip_trailing_space,
        "def forward(self, x):  \n    return x\t\n",
        "def forward(self, x):\n    return x\n",
    ),
    (
        unmask_names,
        "def guards_f1c0_torch_dynamo_resume_in_forward_at_<N>(L, G):  # zoo.py:<N>\n    return __resume_at_<N>(x)  # ['<N>_forward']",
        "def guards_f1c0_torch_dynamo_resume_in_forward_at_N(L, G):  # zoo.py:<N>\n    return __resume_at_N(x)  # ['<N>_forward']",
    ),
    (
        normalize_program,
        "torch_dynamo_resume_in_forward_at_13 = __resume_at_60_4",
        "torch_dynamo_resume_in_forward_at_N = __resume_at_N",
    ),
]


@pytest.mark.parametrize(
    ("rule", "text", "expected"), EXAMPLES, ids=lambda v: rule_id(v) if callable(v) else ""
)
def test_rule_example(rule: Rule, text: str, expected: str) -> None:
    assert rule(text) == expected


PATH_EXAMPLES: list[tuple[str, str]] = [
    (f"{ROOT}/fixtures/zoo.py:3", "fixtures/zoo.py:3"),
    (f"{TORCH}/nn/modules/linear.py", "<torch>/nn/modules/linear.py"),
    ("/opt/other/lib/thing.py", "thing.py"),
    ('File "/opt/other/lib/thing.py", line 9, in f', 'File "thing.py", line 9, in f'),
    (f"# File: {ROOT}/fixtures/zoo.py:42 in forward", "# File: fixtures/zoo.py:42 in forward"),
    ("/usr/lib/libc.so.6 and /tmp/x/y.pyc", "/usr/lib/libc.so.6 and /tmp/x/y.pyc"),
]


@pytest.mark.parametrize(("text", "expected"), PATH_EXAMPLES)
def test_path_rule(text: str, expected: str) -> None:
    assert PathRule(rootdir=ROOT, torch_dir=TORCH)(text) == expected


def test_path_rule_ignores_trailing_slash_and_missing_torch_dir() -> None:
    rule = PathRule(rootdir=ROOT + "/", torch_dir=None)
    assert rule(f"{ROOT}/fixtures/zoo.py:3") == "fixtures/zoo.py:3"
    assert rule(f"{TORCH}/nn/modules/linear.py") == "linear.py"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "# File: /ci/other/checkout/fixtures/zoo.py:42 in forward",
            "# File: fixtures/zoo.py:42 in forward",
        ),
        ("# File: /ci/other/checkout/zoo.py:42 in forward", "# File: zoo.py:42 in forward"),
        ("/opt/other/lib/thing.py", "thing.py"),
        (f"{ROOT}/fixtures/zoo.py:3", "fixtures/zoo.py:3"),
    ],
)
def test_path_rule_maps_foreign_checkout_to_local_file(text: str, expected: str) -> None:
    """A warm cache filled by another checkout replays its absolute paths."""
    assert LOCAL_AWARE(text) == expected


def test_normalizer_for_paths_looks_up_files_under_rootdir(tmp_path) -> None:
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "zoo.py").write_text("")
    normalize = Normalizer.for_paths(str(tmp_path), TORCH)
    assert (
        normalize("# File: /elsewhere/repo/models/zoo.py:7 in f")
        == "# File: models/zoo.py:<N> in f"
    )
    assert normalize("# File: /elsewhere/repo/other.py:7 in f") == "# File: other.py:<N> in f"


def test_a_checkout_whose_path_ends_in_the_rootdir_is_foreign(tmp_path) -> None:
    """Found in CI: rootdir `/work/main`, a cache filled at `/check/work/main` (once `/checkfixtures/zoo.py`)."""
    (tmp_path / "fixtures").mkdir()
    (tmp_path / "fixtures" / "zoo.py").write_text("")
    torch_dir = "/venv/lib/site-packages/torch"
    normalize = Normalizer.for_paths(str(tmp_path), torch_dir)
    for line in (
        f"# File: /check{tmp_path}/fixtures/zoo.py:7 in f",
        f"# File: {tmp_path}/fixtures/zoo.py:7 in f",
        f'File "/check{tmp_path}/fixtures/zoo.py", line 7, in f',
    ):
        assert "fixtures/zoo.py" in normalize(line) and "check" not in normalize(line), line
    assert (
        normalize('File "/other/venv/lib/site-packages/torch/nn/f.py", line 3')
        == 'File "f.py", line <N>'
    )
    assert normalize(f'File "{torch_dir}/nn/f.py", line 3') == 'File "<torch>/nn/f.py", line <N>'


def test_a_path_into_another_install_of_this_torch_is_torch_relative(tmp_path) -> None:
    """Found in CI: two venvs of torch 2.13 share one Inductor cache, which replays the
    `# File:` paths of the venv that filled it (`.../nn/utils/parametrizations.py`)."""
    torch_dir = tmp_path / "venv_a/lib/python3.11/site-packages/torch"
    (torch_dir / "nn/utils").mkdir(parents=True)
    (torch_dir / "nn/utils/parametrizations.py").write_text("")
    normalize = Normalizer.for_paths(str(tmp_path / "proj"), str(torch_dir))
    other = "/root/.cache/venv_b/lib/python3.11/site-packages/torch/nn/utils/parametrizations.py"
    assert (
        normalize(f"# File: {other}:85 in forward")
        == "# File: <torch>/nn/utils/parametrizations.py:<N> in forward"
    )
    assert normalize(
        f"# File: {torch_dir}/nn/utils/parametrizations.py:85 in forward"
    ) == normalize(f"# File: {other}:85 in forward")
    # a file this torch does not have (another version's) keeps only its name, as before
    assert (
        normalize("# File: /venv_b/site-packages/torch/nn/gone.py:3 in f")
        == "# File: gone.py:<N> in f"
    )
    assert normalize(normalize(f"# File: {other}:85 in forward")) == normalize(
        f"# File: {other}:85 in forward"
    )


def test_normalizer_full_guard_line() -> None:
    line = (
        "| +- ID_MATCH: ___check_obj_id(G['torch'], 140270709103312), type=<class 'module'>"
        f"  # y = torch.sin(x)  # {ROOT}/fixtures/zoo.py:8 in forward   \n"
    )
    expected = "| +- ID_MATCH: ___check_obj_id(G['torch'], <id>), type=<class 'module'>  # y = torch.sin(x)  # zoo.py:<N> in forward\n"
    assert NORMALIZE(line) == expected


def test_normalizer_rewrites_paths_first() -> None:
    assert isinstance(NORMALIZE.rules[0], PathRule)
    assert tuple(NORMALIZE.rules[1:]) == STATIC_RULES


# --- nothing semantic is masked ---------------------------------------------

SEMANTIC = [
    'addmm: "f32[2, 4][4, 1]cpu" = torch.ops.aten.addmm.default(primals_2, primals_3, permute);  primals_2 = permute = None',
    "for(int64_t x0=static_cast<int64_t>(0L); x0<static_cast<int64_t>(8L); x0+=static_cast<int64_t>(16L))",
    "tmp2 = tmp0 * 0.7071067811865476",
    "auto tmp3 = tmp1 / tmp2;",
    "| | +- TENSOR_MATCH: check_tensor(L['x'], Tensor, DispatchKeySet(CPU, BackendSelect), torch.float32, "
    "device=None, requires_grad=False, size=[4, 8], stride=[8, 1])",
    "# Topologically Sorted Source Nodes: [linear, relu], Original ATen: [aten.addmm, aten.relu]",
    "buf0 = empty_strided_cpu((2, 4), (4, 1), torch.float32)",
]


@pytest.mark.parametrize("text", SEMANTIC)
def test_semantic_text_passes_unchanged(text: str) -> None:
    assert Normalizer.for_paths(ROOT, "/venv/torch")(text) == text


# --- idempotence and purity (hypothesis) -------------------------------------

FRAGMENTS = [
    "___check_obj_id(G['torch'], 140270709103312)\n",
    "| +- TYPE_MATCH: ___check_type_id(L['self'], 94823012345600), type=<class 'M'>  # y = x.sin()  # mp/probe/probe2.py:8 in f\n",
    "# graph id: 139812345678",
    "Guard latency = 70.56 us\n",
    "  Guard latency = 1.2 us",
    f"__compiled_fn_7_{UUID}(x)",
    "__compiled_fn_9(x)",
    "__compiled_fn_0",
    "__compiled_fn_12",
    "G['__builtins_dict___20']['any']",
    "__builtins_dict___0",
    "# AOT ID: ['3_inference']",
    "# AOT ID: ['<N>_forward']",
    "# File: fixtures/zoo.py:42 in forward",
    '  File "x.py", line 9, in f\n',
    "torch_dynamo_resume_in_forward_at_13",
    "resume_in_f_at_<N>",
    "<N><N>",
    "__resume_at_60_4",
    "__temp_35",
    "__temp_0",
    '"num_threads":16',
    "<function f at 0x7f38aa12bc40>",
    "User code traceback:\n",
    '  File "zoo.py", line 30, in forward\n    g()\n',
    "NoneType: None\n",
    "# y = x.sin()  # mp/probe/probe2.py:8 in f",
    "# kernel path: /tmp/torchinductor_root/ab/cabc.py",
    f"{ROOT}/fixtures/zoo.py:3",
    f"{TORCH}/nn/modules/linear.py",
    "/opt/other/lib/thing.py",
    "/ci/other/checkout/fixtures/zoo.py:42",
    "/x/b.py",
    "<torch>/x.py",
    "\n",
    "  \n",
    "\t",
    "| | +- EQUALS_MATCH: G['m']._VALID == {'valid', 'same'}  # if p in {'b', 'a'}:",
    "EQUALS_MATCH: L['k'] == frozenset({'while', ('in', {2, 1}), 'True'})",
    "{'y', 'x'}",
    "# File: <eval_with_key>.97:5 in forward",
    "# File: /tmp/torch_geometric.nn.conv.gcn_conv_GCNConv_propagate_0lxvt4o8.py:64 in collect",
    "_tensor_constant0 = None  # device(type='cpu') torch.float32 (1, 2) (2, 1) 7f2105b08eb0\n",
    "| +- GuardManager: source=G, accessed_by=GlobalsGuardAccessor\n",
    "| | +- GuardManager: source=G['___unnamed_scope_140483496852992_c0'], accessed_by=D\n",
    "| | | +- TYPE_MATCH: ___check_type_id(G['___unnamed_scope_140483496852992_c0'], 1) # z\n",
    "| | +- GuardManager: source=G['___unnamed_scope_obj1'], accessed_by=D\n",
    "+- LAMBDA_GUARD: G['m'].torch is G['___unnamed_scope_140483497535936_c0']['torch']  # b\n",
    "LAMBDA_GUARD: G['m'].torch is G['___unnamed_scope_obj0']['torch']  # a\n",
]
FILLER = st.text(alphabet="abfx_019 .:()<>'\"=\n\t", max_size=20)
PATTERNED = st.lists(st.one_of(st.sampled_from(FRAGMENTS), FILLER), max_size=12).map("".join)
TEXTS = st.one_of(PATTERNED, st.text())
#: derandomized: CI checks the same 200 texts every run, so a new random draw never fails
#: an unrelated change; drop `derandomize` locally to search further (texts found that way
#: become `@example`s, like the one below `test_version_and_gpu_rules_idempotent`).
HYPOTHESIS = settings(max_examples=200, deadline=None, database=None, derandomize=True)


@pytest.mark.parametrize("rule", ALL_RULES, ids=rule_id)
@HYPOTHESIS
@given(text=TEXTS)
def test_idempotent(rule: Rule, text: str) -> None:
    once = rule(text)
    assert rule(once) == once


@pytest.mark.parametrize("rule", ALL_RULES, ids=rule_id)
@HYPOTHESIS
@given(text=PATTERNED)
def test_deterministic(rule: Rule, text: str) -> None:
    assert rule(text) == rule(text)


# --- regressions: gaps found while writing these tests, since fixed ---------


def test_mask_object_ids_idempotent_with_constant_in_guard_comment() -> None:
    line = "| +- ID_MATCH: ___check_obj_id(G['torch'], 140270709103312), type=<class 'module'>  # y = torch.add(x, 2)  # zoo.py:3 in forward"
    once = mask_object_ids(line)
    assert "torch.add(x, 2)" in once
    assert mask_object_ids(once) == once


def test_normalizer_idempotent_after_empty_comment() -> None:
    text = "x = 1  # \nfixtures/zoo.py:3"
    once = NORMALIZE(text)
    assert NORMALIZE(once) == once


def test_path_rule_idempotent_with_double_slash() -> None:
    rule = PathRule(ROOT, TORCH)
    once = rule("/d//a/b.py")
    assert rule(once) == once


def test_none_trace_only_removes_whole_line() -> None:
    assert drop_user_traceback("NoneType: Nonesense\n") == "NoneType: Nonesense\n"


@pytest.mark.parametrize(
    "provenance",
    [
        " and (_inductor/codegen/cpp.py:812 in need_use_acc_helper)",
        " and (_functorch/_aot_autograd/aot_autograd_result.py:<N> in _check_guards)",
    ],
)
def test_drop_guard_provenance_cold_and_warm_agree(provenance: str) -> None:
    line = "+- LAMBDA_GUARD: 2 <= L['x'].size()[1] <= 4096  # return x / n  # zoo.py:<N> in forward (user code shown is first use)"
    assert drop_guard_provenance(line + provenance + "\n") == line + "\n"
    assert drop_guard_provenance(line + "\n") == line + "\n"


@pytest.mark.parametrize(
    "text",
    [
        "User code traceback:\n  Guard latency = 1.2 us",
        "User code traceback:\n\t",
        'User code traceback: \n  File "x.py"',
    ],
)
def test_user_traceback_removed_when_its_last_line_has_no_newline(text: str) -> None:
    """Found by hypothesis in CI: a traceback ending the text without a newline
    survived the first pass, and a later rule made it match on the second."""
    assert NORMALIZE(text) == ""


def _calls(name: str):
    """A frame that calls a Dynamo-named graph on a line long enough for depyf to wrap."""
    source = (
        "def forward(self, x):\n"
        f"    graph_out_0 = {name}(x, self._modules['norm1']._parameters['weight'], tmp_4['bias'], tmp_3['qkv'], y)\n"
        "    return graph_out_0\n"
    )
    scope: dict = {}
    exec(source, scope)
    return scope["forward"].__code__


@pytest.mark.skipif(
    sys.version_info >= (3, 13),
    reason="depyf cannot decompile Python 3.13's bytecode (LOAD_FAST_LOAD_FAST); "
    "transformed_code is the project's translator there",
)
def test_decompiled_code_wraps_the_same_whatever_compiled_earlier() -> None:
    """depyf wraps at a fixed width; Dynamo's counter sets the name's length."""
    import depyf

    from pytest_torchcompile.snapshot.artifacts.transformed import depyf_source

    early, late = _calls(f"__compiled_fn_7_{UUID}"), _calls(f"__compiled_fn_17_{UUID}")
    assert NORMALIZE(depyf.decompile(early)) != NORMALIZE(depyf.decompile(late))
    assert NORMALIZE(depyf_source(early)[0]) == NORMALIZE(depyf_source(late)[0])


# --- torch 2.11's guard text and GPU (Triton) output -----------------------------
# Real cold/warm payloads from an H100 are checked in tests/snapshot/artifacts/test_normalize_gpu_text.py; these pin
# each rule on one line, what it leaves alone, and idempotence on mixed text.

from pytest_torchcompile.snapshot.artifacts.normalize import (  # noqa: E402  (this block's own imports)
    drop_bare_guard_provenance,
    unspace_sym_products,
)
from pytest_torchcompile.snapshot.artifacts.process_rules import (  # noqa: E402
    drop_code_object_addresses,
    mask_backend_hash,
    mask_device_properties,
)

#: the rules for torch 2.11's guard text and GPU output
VERSION_AND_GPU_RULES = (
    drop_code_object_addresses,
    drop_bare_guard_provenance,
    mask_backend_hash,
    mask_device_properties,
    unspace_sym_products,
)

DEVICE_PROPERTIES = (
    "'device': DeviceProperties(type='cuda', index=0, multi_processor_count=132, cc=90, major=9, "
    "regs_per_multiprocessor=65536, max_threads_per_multi_processor=2048, max_threads_per_block=1024, warp_size=32)"
)
GPU_EXAMPLES = [
    (
        drop_code_object_addresses,
        'type=<code object silu at 0x7f8b7fd27990, file "<torch>/nn/functional.py", line 2375>',
        'type=<code object silu, file "<torch>/nn/functional.py", line 2375>',
    ),
    (
        drop_code_object_addresses,
        'type=<code object <lambda> at 0xe6135c0, file "m.py", line 3>',
        'type=<code object <lambda>, file "m.py", line 3>',
    ),
    (
        drop_bare_guard_provenance,
        "+- LAMBDA_GUARD: 64*L['x'].size()[0] <= 2147483647  # (_inductor/codegen/simd.py:1877 in can_use_32bit_indexing)\n+- next",
        "+- LAMBDA_GUARD: 64*L['x'].size()[0] <= 2147483647\n+- next",
    ),
    (
        drop_bare_guard_provenance,
        "and 2 <= L['x'].size()[0]  # EPILOGUE  # (simd.py:<N> in f)",
        "and 2 <= L['x'].size()[0]  # EPILOGUE",
    ),
    (
        mask_backend_hash,
        "'backend_hash': '91D1D1166449D9E2EB66EB9770C9E2C3B0FEB787341F27FEB4D3F0338DA50336', 'x': 1",
        "'backend_hash': '<hash>', 'x': 1",
    ),
    (
        mask_device_properties,
        DEVICE_PROPERTIES,
        "'device': DeviceProperties(type='cuda', index=0, multi_processor_count=<N>, cc=<N>, major=<N>, "
        "regs_per_multiprocessor=<N>, max_threads_per_multi_processor=<N>, max_threads_per_block=<N>, warp_size=<N>)",
    ),
    (
        unspace_sym_products,
        'mul_117: "Sym(s27 * s52)" = arg0_1 * arg1_1',
        'mul_117: "Sym(s27*s52)" = arg0_1 * arg1_1',
    ),
    (unspace_sym_products, '"Sym(2 * s0 ** 2 + s1)"', '"Sym(2*s0**2 + s1)"'),
]


@pytest.mark.parametrize(
    ("rule", "text", "expected"), GPU_EXAMPLES, ids=lambda v: rule_id(v) if callable(v) else ""
)
def test_version_and_gpu_rule_example(rule: Rule, text: str, expected: str) -> None:
    assert rule(text) == expected
    assert rule in STATIC_RULES  # the Normalizer applies it


GPU_SEMANTIC = [
    "    tmp0 = tl.load(in_ptr0 + (x0), xmask)",  # a kernel body line
    "    tmp2 = tmp0 * tmp1",
    "def triton_poi_fused_mul_silu_1(in_ptr0, in_ptr1, out_ptr0, xnumel, XBLOCK : tl.constexpr):",
    "triton_meta={'signature': {'in_ptr0': '*fp32', 'xnumel': 'i32', 'XBLOCK': 'constexpr'}, 'constants': {}}",
    "assert_size_stride(primals_1, (64, ), (1, ), 'input')",
    "buf0 = empty_strided_cuda((8, 1), (1, 8), torch.float32)",
    'addmm: "f32[8, 128][128, 1]cuda:0" = torch.ops.aten.addmm.default(primals_3, view, permute)',
    "with torch.cuda._DeviceGuard(0):",
    "+- LAMBDA_GUARD: L['self']._modules['norm'].eps == 1e-05  # return F.layer_norm(  # normalization.py:229 in forward (functional.py:2935 in layer_norm)",
    "+- LAMBDA_GUARD: ___as_tensor(L['self']._modules['norm'].eps).item() == 1e-05  # (unknown source ___as_tensor(L['self']._modules['norm'].eps).item(), please file a bug)",
    "ks0 = s27 * s52",  # a product in code, not in a Sym annotation
]


@pytest.mark.parametrize("text", GPU_SEMANTIC)
def test_version_and_gpu_rules_leave_semantic_text_alone(text: str) -> None:
    for rule in VERSION_AND_GPU_RULES:
        assert rule(text) == text, rule.__name__


GPU_FRAGMENTS = [
    'type=<code object silu at 0x7f8b7fd27990, file "<torch>/nn/functional.py", line 2375>',
    "<code object f at 0x1>",
    "  # (_inductor/codegen/simd.py:1877 in can_use_32bit_indexing)\n",
    "  # (simd.py:<N> in f)",
    " and (autograd_cache.py:970 in evaluate_guards)",
    "'backend_hash': '91D1D116'",
    DEVICE_PROPERTIES,
    "DeviceProperties(index=1, cc=<N>)",
    '"Sym(s27 * s52)"',
    '"Sym(s0 ** 2)"',
    " * ",
    "# (",
]
GPU_TEXTS = st.lists(
    st.one_of(st.sampled_from(GPU_FRAGMENTS + FRAGMENTS), FILLER), max_size=12
).map("".join)


@pytest.mark.parametrize(
    "rule", [*VERSION_AND_GPU_RULES, NORMALIZE, normalize_program], ids=rule_id
)
@HYPOTHESIS
@given(text=st.one_of(GPU_TEXTS, st.text()))
@example(
    text=" and (autograd_cache.py:970 in evaluate_guards)  # (_inductor/codegen/simd.py:1877 in can_use_32bit_indexing)\n"
)
@example(text="  # (simd.py:<N> in f) and (x.py:1 in g)")
def test_version_and_gpu_rules_idempotent(rule: Rule, text: str) -> None:
    once = rule(text)
    assert rule(once) == once


@pytest.mark.parametrize(
    "comment",
    ["  # (simd.py:<N> in f)  \n", " and (autograd_cache.py:970 in evaluate_guards) \t\n"],
)
def test_provenance_dropped_before_trailing_blanks(comment: str) -> None:
    """Found by hypothesis: blanks after a provenance hid it from the rule until
    strip_trailing_space ran, so a second pass changed the text again."""
    assert NORMALIZE("guard" + comment) == "guard\n"
