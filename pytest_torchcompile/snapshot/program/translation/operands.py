"""How the translator writes a stack value where Python's grammar puts it: an operand, a bound, a key.

Shared by the instruction handlers (`loads.py`, `operations.py`,
`instructions.py`): a number as an attribute's operand is parenthesized,
a slice bound of None left out, a call's keyword names read from their
constant, an attribute's name checked to be an identifier.
"""

from __future__ import annotations

import ast
import dis
import keyword

from .symbolic import Untranslatable, Val


def as_operand(val: Val) -> str:
    """The value as the operand of an attribute, call, subscript or operator.

    Every expression on the stack is a primary (a name, a literal, a call,
    an attribute, a subscript or a display), so only a number needs
    parentheses (`(1).real`, not `1.real`).
    """
    return f"({val.expr})" if val.expr[:1].isdigit() else val.expr


def as_bound(val: Val) -> str:
    """A slice bound as written between brackets (`a[:2]`, not `a[None:2]`)."""
    return "" if val.expr == "None" else val.expr


def keyword_names(names: Val, ins: dis.Instruction) -> tuple[str, ...]:
    """The keyword names of a call: a tuple constant on the stack."""
    try:
        value = ast.literal_eval(names.expr)
    except (ValueError, SyntaxError):
        value = None
    if not isinstance(value, tuple) or not all(isinstance(n, str) for n in value):
        raise Untranslatable(
            f"{ins.opname} with keyword names that are not a constant (offset {ins.offset})"
        )
    return value


def as_key(val: Val) -> str:
    """A subscript's key: a slice as `a:b` (no call to `slice`), anything else as is."""
    return val.subscript if val.subscript is not None else val.expr


def all_free(vals: list[Val]) -> bool:
    """A display of these values evaluates nothing new (no attribute, call or global read)."""
    return all(v.kind != "lazy" or v.free for v in vals)


def as_attr(name: str) -> str:
    if not name.isidentifier() or keyword.iskeyword(name):
        raise Untranslatable(f"an attribute whose name is not a Python identifier ({name!r})")
    return name
