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


def literal(value: object) -> str | None:
    """The value as a Python literal that evaluates to an equal object of the same type, or None."""
    if value is None or value is Ellipsis or isinstance(value, (bool, str, bytes)):
        return repr(value)
    if isinstance(value, int):
        return repr(value) if value >= 0 else f"({value!r})"
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            return None
        return (
            repr(value)
            if value >= 0 and not (value == 0 and str(value).startswith("-"))
            else f"({value!r})"
        )
    if isinstance(value, complex):
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
    if type(value) is tuple:
        parts = [constant_source(v) for v in value]
        return (
            None
            if None in parts
            else "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"
        )  # type: ignore[arg-type]
    return None


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
