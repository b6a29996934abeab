"""Python source for values: literals, constants of Dynamo's code, long texts.

`literal` writes a plain value (a number, a string, a tuple of them) as the
literal that evaluates to it, for the bytecode translator, the case's facts
and the constants below. `constant_source` writes a constant Dynamo put in
a frame's `co_consts` (a `torch.device`, a dtype) as the expression that
builds it again, or None when it has none. `text_literal` writes a long text (Inductor's output
code) as a string literal that reads like the text itself.
"""

from __future__ import annotations

import ast
import enum
import importlib
import sys
import types


def literal(value: object) -> str | None:
    """The value as a Python literal that evaluates to an equal object of the same type, or None.

    Exact types only: a subclass's repr is not its source (a str-Enum's is `<Format.NCHW: 'NCHW'>`,
    numpy's float64 `np.float64(1.0)`); `constant_source` writes an enum member by name.
    """
    if value is None or value is Ellipsis or type(value) in (bool, str, bytes):
        return repr(value)
    if type(value) is int:
        return repr(value) if value >= 0 else f"({value!r})"
    if type(value) is float:
        if value != value or value in (float("inf"), float("-inf")):
            return None
        return (
            repr(value)
            if value >= 0 and not (value == 0 and str(value).startswith("-"))
            else f"({value!r})"
        )
    if type(value) is complex:
        return (
            f"complex({literal(value.real)}, {literal(value.imag)})"
            if None not in (literal(value.real), literal(value.imag))
            else None
        )
    if type(value) is tuple:
        parts = [literal(v) for v in value]
        if None in parts:
            return None
        return "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"
    if type(value) is frozenset:
        parts = [literal(v) for v in sorted(value, key=repr)]
        return (
            None
            if None in parts
            else "frozenset({" + ", ".join(parts) + "})"
            if parts
            else "frozenset()"
        )
    return None


def constant_source(value: object) -> str | None:
    """An expression that builds an equal value of the same type, or None."""
    text = literal(value)
    if text is not None:
        return text
    import torch  # late: the artifact catalogue loads this module with the plugin, before torch

    if isinstance(value, torch.device):
        return f"torch.device({value.type!r}{'' if value.index is None else f', {value.index}'})"
    if isinstance(value, (torch.dtype, torch.memory_format, torch.layout)):
        name = str(value)
        return name if name.startswith("torch.") else None
    if isinstance(value, torch.Size):
        return f"torch.Size({list(value)!r})"
    if isinstance(value, enum.Enum):
        return enum_source(value)
    if _is_numpy_scalar(value):  # normflows' `DiagGaussian.d = np.prod(shape)`, guarded as a tensor
        item = literal(value.item())  # type: ignore[attr-defined]
        name = type(value).__name__
        return None if item is None else f"import_object('numpy:{name}')({item})"
    if type(value) is slice:
        parts = [constant_source(p) for p in (value.start, value.stop, value.step)]
        return None if None in parts else f"slice({', '.join(parts)})"  # type: ignore[arg-type]
    if type(value) is tuple:
        parts = [constant_source(v) for v in value]
        return (
            None
            if None in parts
            else "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"
        )  # type: ignore[arg-type]
    return None


def _is_numpy_scalar(value: object) -> bool:
    """A numpy scalar of a type numpy names at its top (`numpy.int64`), where numpy is loaded."""
    numpy = sys.modules.get("numpy")
    return (
        numpy is not None
        and isinstance(value, numpy.generic)
        and getattr(numpy, type(value).__name__, None) is type(value)
    )


def enum_source(member: enum.Enum) -> str | None:
    """An enum member as its class's attribute, imported by name (`import_object` is the program
    file's), where the class imports back by name and the name gives this very member; else None."""
    cls = type(member)
    path = import_path(cls)
    if path is None or getattr(cls, member.name, None) is not member:
        return None
    return f"import_object({f'{path}.{member.name}'!r})"


def import_path(value: object) -> str | None:
    """`module:qualname` that imports back to this very object, or None."""
    if isinstance(value, types.ModuleType):
        return value.__name__ + ":" if sys.modules.get(value.__name__) is value else None
    module, qualname = (
        getattr(value, "__module__", None),
        getattr(value, "__qualname__", None),
    )
    owner = getattr(value, "__self__", None)
    if isinstance(owner, type):  # a method of a class: `tuple.__new__`, a namedtuple's `P._make`
        module = owner.__module__
    if not isinstance(module, str) or not isinstance(qualname, str) or "<" in qualname:
        return None
    try:
        found: object = importlib.import_module(module)
        for part in qualname.split("."):
            found = getattr(found, part)
    except (ImportError, AttributeError):
        return None
    same = found is value or (isinstance(value, types.MethodType) and found == value)
    return f"{module}:{qualname}" if same else None


def text_literal(text: str) -> str:
    """`text` as a string literal: raw and triple-quoted where that keeps it verbatim, else escaped."""
    for quote in ('"""', "'''"):
        candidate = f"r{quote}{text}{quote}"
        if (
            quote not in text
            and not text.endswith(("\\", quote[0]))
            and _round_trips(candidate, text)
        ):
            return candidate
    return repr(text)


def _round_trips(candidate: str, text: str) -> bool:
    try:
        return ast.literal_eval(candidate) == text
    except (SyntaxError, ValueError):
        return False
