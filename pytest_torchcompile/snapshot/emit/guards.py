"""Dynamo's guards as data, then as Python functions a reader can follow.

Right after a compile, `read_guards` reads the guard tree of each cache entry
(`_torch/guard_tree.py`: leaf guards, child managers, epilogue lambda guards)
as plain `GuardRow`s: guard kind, guarded source, code, comment. Nothing is
recompiled; the tree already exists. How guard code is spelled (tensor
matches, id checks, global state) and the prelude of helpers the emitted
functions call are torch's text formats, in `_torch/formats.py`.

`row_checks` writes one row as Python checks: tensor checks spelled out
(type, device, dispatch keys, dtype, requires_grad, size, stride), identity
and type checks, shape guards of dynamic dimensions, global state. Object
ids differ in every process, so a check reads them from a table
(`IDS[source]`) bound when it runs, never written into the text. Two
functions are built from the rows: `guard_source`, the program file's
`def guards_<frame>(L, G, IDS)`, which returns the first guard that fails;
and `guard_function`, the `def guards_<frame>(L, G) -> bool` that
`GuardChecker` runs on new inputs (`CompileResult.check_guards`), binding L
and G as Dynamo does (L: the frame's arguments, `self` included, by
`frame_locals`, the one the program file carries; G: its globals). Guards
with no Python form are kept as comments.
"""

from __future__ import annotations

import ast
import functools
import inspect
import types
from dataclasses import dataclass
from typing import Any

from ..._torch.formats import (
    BACKEND_DEVICES,
    CHECK_HELPER,
    GLOBAL_STATE,
    GLOBAL_STATE_SEPARATOR,
    ID_CHECK,
    PRELUDE,
    PRELUDE_HELPERS,
    SAVED_HOOKS_GUARD,
    SET_CONTAINS_CALL,
    SET_CONTAINS_HELPER,
    TENSOR_MATCH,
    TENSOR_TYPES,
    TYPE_SUFFIX,
    parse_tensor_match,
)
from ..._torch.guard_tree import GuardRow, cached_guards
from ..._torch.program.runtime import frame_locals
from ...common.capture_log import CaptureLog, FrameKey
from .unordered import KeyName, global_dict_keys, position, unordered_check

__all__ = [
    "PRELUDE",
    "GuardChecker",
    "GuardFunction",
    "GuardRow",
    "frame_locals",
    "guard_function",
    "guard_source",
    "read_guards",
]

#: what reading a guarded value raises when the value is gone (the guard then fails).
_ACCESS_ERRORS = "(AttributeError, KeyError, IndexError)"


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
    wanted = {b.key for b in log.bytecode} - set(log.guards)
    if not wanted:
        return
    for code in dict.fromkeys(b.original for b in log.bytecode if b.key in wanted):
        for frame_id, compile_id, rows in cached_guards(code):
            key = FrameKey(frame_id, compile_id)
            if key in wanted and key not in log.guards:
                log.guards[key] = rows


# --- emitting the guard functions ----------------------------------------------


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
    keys = global_dict_keys(row.code for row in rows)
    for row in rows:
        note = f"  # {row.kind}" + (
            f"  # {row.comment}" if row.comment and row.comment != last_comment else ""
        )
        last_comment = row.comment or last_comment
        checks = [held_keys(check, keys, table) for check in row_checks(row, table, ids)]
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


def guard_source(
    key: FrameKey, name: str, rows: tuple[GuardRow, ...]
) -> tuple[str, str, list[str]]:
    """`def guards_<label>_<name>(L, G, IDS)`: the first guard that fails, or None; and the guards it cannot check."""
    function = f"guards_{frame_label(key)}_{name}"
    lines = [
        f"def {function}(L, G, IDS):",
        f'    """Frame {key.frame_id} compile {key.compile_id} ({name}): None when its code may run, else the guard that failed."""',
        "    return first_failing(",
    ]
    not_checked = []
    keys = global_dict_keys(row.code for row in rows)
    for row in rows:
        checks = [held_keys(check, keys, "IDS") for check in row_checks(row, "IDS", {})]
        if not checks:
            not_checked.append(f"{row.kind}: {row.code}".replace("\n", " "))
        for index, check in enumerate(checks):
            note = f"  # {row.kind}" if index == 0 else ""
            lines.append(f"        lambda: {check},{note}")
    lines.append("    )")
    return "\n".join(lines) + "\n", function, not_checked


def row_checks(row: GuardRow, table: str, ids: dict[str, int]) -> list[str]:
    """The Python checks of one row; [] when the guard has no Python form."""
    if row.kind == TENSOR_MATCH:
        return _tensor_checks(row, table, ids)
    if row.kind == GLOBAL_STATE and GLOBAL_STATE_SEPARATOR in row.code:
        return [f"global_state_matches({row.code.split(GLOBAL_STATE_SEPARATOR, 1)[1]!r})"]
    if SAVED_HOOKS_GUARD.match(row.code):
        return ["saved_tensors_hooks_ids() is None"]
    code = ID_CHECK.sub(
        lambda m: _id_lookup(m.group(1), m.group(2), int(m.group(3)), table, ids),
        TYPE_SUFFIX.sub("", row.code),
    )
    code = SET_CONTAINS_CALL.sub(SET_CONTAINS_HELPER, code)
    return [code] if _parses(code) else []


def held_keys(check: str, keys: dict[tuple[str, str], KeyName], table: str) -> str:
    """The check with each key of a global dict read by what it holds, never by its position
    (`emit/unordered.py`): a fresh process's registry holds its keys in another order, or fewer
    of them; and a list built from a set compared sorted. A position nothing names stays, and so
    does a check the names would not leave as Python (Dynamo's own form is still a check)."""
    original = check
    for (d, index), name in keys.items():
        key = position(d, index)
        if key not in check:
            continue
        label = f"{table}[{key!r}]"  # the id table's entry, a name: it stays as it is
        if name.kind == "alias":
            held = f"___dict_key({d}, {name.text})"
        elif name.kind == "literal":
            held = f"___dict_key_equal({d}, {name.text})"
        else:
            held = f"___dict_key_with_id({d}, {label})"
        check = check.replace(label, "\0").replace(key, held).replace("\0", label)
    check = unordered_check(check)
    return check if _parses(check) else original


def _id_lookup(what: str, source: str, value: int, table: str, ids: dict[str, int]) -> str:
    subject = source if what == "obj" else f"type({source})"
    ids[subject] = value
    return f"id({subject}) == {table}[{subject!r}]"


def _parses(code: str) -> bool:
    """Whether the check is Python the file can run: it parses, and every helper of Dynamo's it
    names is one the prelude has (another would raise NameError where Dynamo's guard ran)."""
    try:
        tree = ast.parse(code, mode="eval")
    except SyntaxError:
        return False
    helpers = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id.startswith("__")}
    return CHECK_HELPER not in code and helpers <= PRELUDE_HELPERS


def _tensor_checks(row: GuardRow, table: str, ids: dict[str, int]) -> list[str]:
    """`check_tensor(src, Tensor, DispatchKeySet(...), dtype, device=, requires_grad=, size=, stride=)`."""
    match = parse_tensor_match(row.code)
    if match is None:
        return []
    src, kw = match.source, match.keywords
    if match.type_name in TENSOR_TYPES:
        checks = [f"type({src}) is {TENSOR_TYPES[match.type_name]}"]
    else:
        ids[f"type({src})"] = row.type_id
        checks = [f"id(type({src})) == {table}[{f'type({src})'!r}]"]
    if match.backend_key in BACKEND_DEVICES:
        index = "" if kw.get("device") is None else f", {kw['device']}"
        checks.append(
            f"{src}.device == torch.device({BACKEND_DEVICES[match.backend_key]!r}{index})"
        )
    checks += [
        f"dispatch_keys({src}) == {match.dispatch_keys!r}",
        f"{src}.dtype == {match.dtype}",
        f"{src}.requires_grad == {kw.get('requires_grad')}",
    ]
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

    def __init__(self, log: CaptureLog, model: object) -> None:
        if not log.guards:
            raise ValueError(
                "check_guards: no compiled frame with guards was captured for this case"
            )
        self.key = min(log.guards)
        record = next(b for b in log.bytecode if b.key == self.key)
        self.function, self.self_arg = frame_function(model, record.original)
        emitted = guard_function(self.key, record.original.co_name, log.guards[self.key])
        scope: dict[str, object] = {emitted.table: emitted.ids}
        exec(compile(PRELUDE + "\n\n" + emitted.text, f"<program: {emitted.name}>", "exec"), scope)
        self.guards = scope[emitted.name]

    def __call__(self, *args: Any, **kwargs: Any) -> bool:
        return bool(
            self.guards(
                frame_locals(self.function, self.self_arg + args, kwargs), self.function.__globals__
            )
        )


def frame_function(
    model: object, code: types.CodeType
) -> tuple[types.FunctionType, tuple[object, ...]]:
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
