"""Dynamo's guards as data, then as a Python function a reader can follow.

Right after a compile, `read_guards` walks the guard tree of each cache entry
(`_debug_get_cache_entry_list(code)`: leaf guards, child managers, epilogue
lambda guards) and keeps plain `GuardRow`s: guard kind, guarded source, code,
comment. Nothing is recompiled; the tree already exists.

`guard_function` turns one frame compile's rows into the
`def guards_<frame>(L, G) -> bool` of the `program` artifact: tensor checks
spelled out (type, device, dispatch keys, dtype, requires_grad, size, stride),
identity and type checks, shape guards of dynamic dimensions, global state.
Object ids differ in every process, so the function reads them from a table
(`IDS_<frame>[source]`) that is bound when the function runs, never written
into the text. Guards with no Python form are kept as comments.

`GuardChecker` runs that emitted text on new inputs, binding L and G as
Dynamo does (L: the frame's arguments, `self` included; G: its globals).
"""

from __future__ import annotations

import ast
import functools
import inspect
import re
import types
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ..common.capture import CaptureLog, FrameKey

#: Python helpers the emitted guard functions call (the program's prelude).
PRELUDE = '''
import collections
import importlib
import json
import math

import torch

inf = math.inf
device = torch.device
utils_device = torch.utils._device  # DEFAULT_DEVICE: the device of `with torch.device(...)`
__load_module = importlib.import_module
__math_isnan = math.isnan

#: c10::ScalarType numbers of the dtypes that can be the default dtype.
_DEFAULT_DTYPES = {torch.float16: 5, torch.float32: 6, torch.float64: 7, torch.bfloat16: 15}


def global_state_matches(recorded: str) -> bool:
    """GLOBAL_STATE: the process-wide settings the graph was traced under.

    Dynamo also compares autocast dtypes per device and cuBLAS reduction
    flags; this re-checks the settings a test changes from Python.
    """
    state = json.loads(recorded)
    autocast = state.get("autocast_state", {})
    now = {
        "grad_mode": torch.is_grad_enabled(),
        "torch_function": torch._C._is_torch_function_enabled(),
        "torch_function_all_disabled": torch._C._is_torch_function_all_disabled(),
        "deterministic_algorithms": torch.are_deterministic_algorithms_enabled(),
        "deterministic_algorithms_warn_only": torch.is_deterministic_algorithms_warn_only_enabled(),
        "default_dtype": _DEFAULT_DTYPES.get(torch.get_default_dtype()),
        "num_threads": torch.get_num_threads(),
        "allow_tf32": torch.backends.cuda.matmul.allow_tf32,
    }
    autocast_on = any(torch.is_autocast_enabled(d) for d in ("cpu", "cuda", "xpu", "mps", "hpu"))
    return all(state[name] == value for name, value in now.items() if name in state) and (
        any(autocast.get("enabled", [])) == autocast_on
    )


def dispatch_keys(t: torch.Tensor) -> str:
    """The tensor's dispatch keys as Dynamo sees them (thread-local include/exclude applied)."""
    keys = torch._C._dispatch_keys(t) | torch._C._dispatch_tls_local_include_set()
    return repr(keys - torch._C._dispatch_tls_local_exclude_set())


def check_no_aliasing(*tensors: torch.Tensor) -> bool:
    """NO_TENSOR_ALIASING: inputs compiled as distinct tensors are still distinct objects."""
    return len({id(t) for t in tensors}) == len(tensors)


def saved_tensors_hooks_ids():
    """ids of the innermost saved-tensors hooks when AOTAutograd inlines them, else None."""
    utils = torch._functorch._aot_autograd.utils
    hooks = utils.top_saved_tensors_hooks()
    return tuple(map(id, hooks)) if utils.saved_tensors_hooks_are_inlineable(hooks) else None


def ___dict_contains(key, d) -> bool:
    return dict.__contains__(d, key)


def ___odict_getitem(d, key):
    return collections.OrderedDict.__getitem__(d, key)


def ___namedtuple_fields(x):
    return x._fields
'''.lstrip("\n")

#: device types by the backend dispatch key that opens a tensor's key set.
_BACKEND_DEVICES = {"CPU": "cpu", "CUDA": "cuda", "Meta": "meta", "MPS": "mps", "XPU": "xpu", "HPU": "hpu", "MTIA": "mtia"}
_TENSOR_TYPES = {"Tensor": "torch.Tensor", "Parameter": "torch.nn.Parameter"}
_ID_CHECK = re.compile(r"___check_(obj|type)_id\((.+?), (\d+)\)")
_TYPE_SUFFIX = re.compile(r", type=<class '([^']*)'>$")
_SAVED_HOOKS = re.compile(r"^torch\._functorch\.aot_autograd\.utils\.top_saved_tensors_hooks ids == None$")
_ACCESS_ERRORS = "(AttributeError, KeyError, IndexError)"
_BEFORE_COMMENT = re.compile(r"""((?:[^'"#]|'(?:[^'\\\n]|\\.)*'|"(?:[^"\\\n]|\\.)*")*)#""")


@dataclass(frozen=True)
class GuardRow:
    """One guard as Dynamo installed it: kind, what it guards, its code and why."""

    kind: str  # leaf guard class (TENSOR_MATCH, ID_MATCH, ...) or EPILOGUE
    source: str  # the guarded value, `L['x']`; `L` for guards on the whole frame
    code: str  # Dynamo's code part without its comment
    comment: str  # the user line that installed the guard
    type_id: int  # id() of the guarded value's class, for tensor subclasses compared by identity


@dataclass(frozen=True)
class GuardFunction:
    """The emitted `guards_<frame>` source and the ids it reads from its table."""

    name: str
    table: str
    text: str
    ids: dict[str, int]


# --- reading the guard trees ---------------------------------------------------


def read_guards(log: CaptureLog) -> None:
    """Add the guard rows of every frame compile of `log` that has none yet."""
    from torch._dynamo.eval_frame import _debug_get_cache_entry_list

    wanted = {b.key for b in log.bytecode} - set(log.guards)
    if not wanted:
        return
    for code in dict.fromkeys(b.original for b in log.bytecode if b.key in wanted):
        for entry in _debug_get_cache_entry_list(code):
            if entry.compile_id is None:
                continue
            key = FrameKey(entry.compile_id.frame_id, entry.compile_id.frame_compile_id or 0)
            if key in wanted and key not in log.guards:
                log.guards[key] = guard_rows(entry.guard_manager.root)


def guard_rows(root: Any) -> tuple[GuardRow, ...]:
    """The tree in Dynamo's check order, then the epilogue; a relational guard
    (listed under each value it relates) once."""
    rows = list(_walk(root))
    for guard in root.get_epilogue_lambda_guards():
        rows.extend(_leaf_rows("EPILOGUE", guard, "L", 0))
    first: dict[tuple[str, str], GuardRow] = {}
    for row in rows:
        first.setdefault((row.kind, row.code), row)
    return tuple(first.values())


def _walk(manager: Any) -> Iterator[GuardRow]:
    type_id = id(manager.get_type_of_guarded_value())
    for leaf in manager.get_leaf_guards():
        yield from _leaf_rows(type(leaf).__name__, leaf, manager.get_source(), type_id)
    children = manager.get_child_managers()
    if manager.get_source() == "G":  # by name: Dynamo's order moves with counters in names (normalize.sort_global_guards)
        children = sorted(children, key=lambda child: child.get_source())
    for child in children:
        yield from _walk(child)


def _leaf_rows(kind: str, leaf: Any, source: str, type_id: int) -> Iterator[GuardRow]:
    for part in leaf.verbose_code_parts():
        code, comment = split_comment(part)
        yield GuardRow(kind, source, code, comment, type_id)


def split_comment(part: str) -> tuple[str, str]:
    """`code  # comment` -> (code, comment): the first `#` outside a string literal."""
    match = _BEFORE_COMMENT.match(part)
    if match:
        return match.group(1).rstrip(), part[match.end() :].strip()
    if "#" in part:  # an unbalanced quote: fall back to Dynamo's own separator
        code, _, comment = part.partition("  # ")
        return code.rstrip(), comment.strip()
    return part.strip(), ""


# --- emitting the guard function -----------------------------------------------


def frame_label(key: FrameKey) -> str:
    return f"f{key.frame_id}c{key.compile_id}"


@functools.lru_cache(maxsize=64)
def guard_function(key: FrameKey, frame_name: str, rows: tuple[GuardRow, ...]) -> GuardFunction:
    """`def guards_<frame>(L, G) -> bool`: all checks joined by `and`, in Dynamo's order."""
    label = frame_label(key)
    name, table = f"guards_{label}_{frame_name}", f"IDS_{label}"
    ids: dict[str, int] = {}
    body: list[str] = []
    first, last_comment = True, ""
    for row in rows:
        note = f"  # {row.kind}" + (f"  # {row.comment}" if row.comment and row.comment != last_comment else "")
        last_comment = row.comment or last_comment
        checks = _checks(row, table, ids)
        if not checks:
            body.append(f"# not re-checked here: {row.kind} {row.code}".replace("\n", " "))
        for index, check in enumerate(checks):
            body.append(("" if first else "and ") + check + (note if index == 0 else ""))
            first = False
    header = [
        f"def {name}(L, G) -> bool:",
        f'    """Frame {key.frame_id} compile {key.compile_id} ({frame_name}): True lets this compile\'s code run."""',
    ]
    if first:
        return GuardFunction(name, table, "\n".join([*header, "    return True"]) + "\n", ids)
    lines = [
        *header,
        "    try:",
        "        return (",
        *(f"            {line}" for line in body),
        "        )",
        f"    except {_ACCESS_ERRORS}:",
        "        return False  # a value these guards read is gone: Dynamo fails the guard too",
    ]
    return GuardFunction(name, table, "\n".join(lines) + "\n", ids)


def _checks(row: GuardRow, table: str, ids: dict[str, int]) -> list[str]:
    """The Python checks of one row; [] when the guard has no Python form."""
    if row.kind == "TENSOR_MATCH":
        return _tensor_checks(row, table, ids)
    if row.kind == "GLOBAL_STATE" and " against " in row.code:
        return [f"global_state_matches({row.code.split(' against ', 1)[1]!r})"]
    if _SAVED_HOOKS.match(row.code):
        return ["saved_tensors_hooks_ids() is None"]
    code = _ID_CHECK.sub(lambda m: _id_lookup(m.group(1), m.group(2), int(m.group(3)), table, ids), _TYPE_SUFFIX.sub("", row.code))
    return [code] if _parses(code) else []


def _id_lookup(what: str, source: str, value: int, table: str, ids: dict[str, int]) -> str:
    subject = source if what == "obj" else f"type({source})"
    ids[subject] = value
    return f"id({subject}) == {table}[{subject!r}]"


def _parses(code: str) -> bool:
    try:
        ast.parse(code, mode="eval")
    except SyntaxError:
        return False
    return "___check_" not in code


def _tensor_checks(row: GuardRow, table: str, ids: dict[str, int]) -> list[str]:
    """`check_tensor(src, Tensor, DispatchKeySet(...), dtype, device=, requires_grad=, size=, stride=)`."""
    try:
        call = ast.parse(row.code, mode="eval").body
        assert isinstance(call, ast.Call) and len(call.args) == 4
    except (SyntaxError, AssertionError):
        return []
    src, type_name, keys, dtype = (row.code[a.col_offset : a.end_col_offset] for a in call.args)  # one line: columns suffice
    kw = {k.arg: ast.literal_eval(k.value) for k in call.keywords}
    if type_name in _TENSOR_TYPES:
        checks = [f"type({src}) is {_TENSOR_TYPES[type_name]}"]
    else:
        ids[f"type({src})"] = row.type_id
        checks = [f"id(type({src})) == {table}[{f'type({src})'!r}]"]
    backend = keys.removeprefix("DispatchKeySet(").split(",")[0].rstrip(")")
    if backend in _BACKEND_DEVICES:
        index = "" if kw.get("device") is None else f", {kw['device']}"
        checks.append(f"{src}.device == torch.device({_BACKEND_DEVICES[backend]!r}{index})")
    checks += [f"dispatch_keys({src}) == {keys!r}", f"{src}.dtype == {dtype}", f"{src}.requires_grad == {kw.get('requires_grad')}"]
    checks += _dims(src, "size", kw.get("size")) + _dims(src, "stride", kw.get("stride"))
    return checks


def _dims(src: str, what: str, values: list[int | None] | None) -> list[str]:
    """`x.size() == (4, 8)`; with dynamic dimensions (None) only the static ones."""
    if values is None:
        return []
    if None not in values:
        return [f"{src}.{what}() == {tuple(values)!r}"]
    checks = [f"{src}.dim() == {len(values)}"] if what == "size" else []
    return checks + [f"{src}.{what}()[{i}] == {v}" for i, v in enumerate(values) if v is not None]


# --- running the emitted function on new inputs -------------------------------


class GuardChecker:
    """Evaluate the emitted guards of a case's first frame compile on new inputs."""

    def __init__(self, log: CaptureLog, model: Any) -> None:
        if not log.guards:
            raise ValueError("check_guards: no compiled frame with guards was captured for this case")
        self.key = min(log.guards)
        record = next(b for b in log.bytecode if b.key == self.key)
        self.function, self.self_arg = frame_function(model, record.original)
        emitted = guard_function(self.key, record.original.co_name, log.guards[self.key])
        scope: dict[str, Any] = {emitted.table: emitted.ids}
        exec(compile(PRELUDE + "\n\n" + emitted.text, f"<program: {emitted.name}>", "exec"), scope)
        self.guards = scope[emitted.name]

    def __call__(self, *args: Any, **kwargs: Any) -> bool:
        return bool(self.guards(frame_locals(self.function, self.self_arg + args, kwargs), self.function.__globals__))


def frame_function(model: Any, code: types.CodeType) -> tuple[types.FunctionType, tuple[Any, ...]]:
    """The function whose frame Dynamo compiled (a module's forward, or the function) and its `self`."""
    forward = getattr(type(model), "forward", None)
    if isinstance(forward, types.FunctionType) and forward.__code__ is code:
        return forward, (model,)
    for candidate in (model, inspect.unwrap(model) if callable(model) else None):
        if isinstance(candidate, types.FunctionType) and candidate.__code__ is code:
            return candidate, ()
    raise ValueError(
        f"check_guards: the case's first compiled frame is {code.co_name!r}, which is neither the model's "
        "forward nor the compiled function itself; its locals cannot be bound from the call's arguments"
    )


def frame_locals(function: types.FunctionType, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
    """L as Dynamo sees it: bound arguments with defaults, then closure cells."""
    bound = inspect.signature(function).bind(*args, **kwargs)
    bound.apply_defaults()
    scope = dict(bound.arguments)
    for name, cell in zip(function.__code__.co_freevars, function.__closure__ or ()):
        scope[name] = cell.cell_contents
    return scope
