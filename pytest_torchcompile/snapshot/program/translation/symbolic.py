"""The symbolic stack of the bytecode translator: values, and the order they are evaluated in.

A value on the stack is pure (a constant, a temporary, a stable global), a
local's name, or a lazy expression (an attribute or subscript chain, a
display) evaluated once, where it is used. `take` pops an operation's operands
and evaluates into temporaries whatever would otherwise run out of the order
the bytecode runs it; `statement` writes an operation as a line of its own.
"""

from __future__ import annotations

import dis
import itertools
import types
from dataclasses import dataclass, field

#: prefixes of globals Dynamo installs once and never rebinds (read lazily: their value cannot change).
STABLE_GLOBALS = (
    "__compiled_fn",
    "__resume_at",
    "__import_",
    "___module_",
    "__builtins_dict",
    "__const_",
)


class Untranslatable(Exception):
    """The code uses something this translator cannot write as Python; the message says what."""


@dataclass
class Val:
    """A value on the symbolic stack: its expression, and whether it may be re-read or moved."""

    expr: str
    kind: str  # "null", "pure" (constant, temp, stable global), "local" (a variable's name), "lazy" (an expression to
    # evaluate once), "iter" (GET_ITER's iterator over expr, which only a for loop may consume)
    seq: int = 0  # creation order of lazy values
    local: str | None = None
    free: bool = False  # a lazy display of values already evaluated: dropping it changes nothing
    subscript: str | None = None  # a slice as written inside brackets (`0:1`), where it is one


NULL = Val("<NULL>", "null")


@dataclass
class Translation:
    """The source of one function and the non-literal constants it names."""

    source: str
    constants: dict[str, object] = field(default_factory=dict)
    globals_read: tuple[str, ...] = ()
    #: the functions the code makes, written inside it as defs: (code, name, constants' prefix),
    #: each proved on its own (`checked`)
    inner: tuple[tuple[types.CodeType, str, str], ...] = ()


class SymbolicStack:
    """The stack machinery shared by the instruction handlers and the control flow."""

    def __init__(self, code: types.CodeType, const_prefix: str) -> None:
        self.code, self.const_prefix = code, const_prefix
        self.ins = list(dis.get_instructions(code))
        self.at = {ins.offset: i for i, ins in enumerate(self.ins)}
        self.lines: list[str] = []
        self.indent = 1
        self.seq = itertools.count(1)
        self.cells = frozenset(code.co_freevars) | frozenset(code.co_cellvars)
        taken = set(code.co_varnames) | set(code.co_names) | self.cells
        self.prefix = next(
            p for p in ("_s", "_s_", "_s__", "_tmp_s") if not any(n.startswith(p) for n in taken)
        )
        self.temps = itertools.count()
        self.constants: dict[str, object] = {}
        self.globals_read: set[str] = set()
        self.nonlocals: set[str] = set()
        self.closed: set[str] = set()  # the variables whose cells the code loads (LOAD_CLOSURE)
        self.kw_names: tuple[str, ...] = ()
        self.renames: dict[str, str] = {}  # inlined comprehensions' variables -> their own names
        self.inner: list[tuple[types.CodeType, str, str]] = []  # the defs written (`nested.py`)

    def emit(self, line: str) -> None:
        self.lines.append("    " * self.indent + line)

    def temp(self) -> str:
        return f"{self.prefix}{next(self.temps)}"

    def materialize(self, stack: list[Val], which: list[int]) -> None:
        """Evaluate the stack entries at `which` into temporaries, oldest first.

        A lazy expression is evaluated only after every older one, so the
        older ones on the stack are evaluated with it.
        """
        newest = max((stack[i].seq for i in which if stack[i].kind == "lazy"), default=0)
        which = set(which) | {
            i for i, v in enumerate(stack) if v.kind == "lazy" and v.seq <= newest
        }
        for index in sorted(which, key=lambda i: stack[i].seq):
            val = stack[index]
            if val.kind in ("pure", "null"):
                continue
            name = self.temp()
            self.emit(f"{name} = {val.expr}")
            stack[index] = Val(name, "pure")

    def flush(self, stack: list[Val]) -> None:
        """Evaluate every lazy expression on the stack now, in the order it was created."""
        self.materialize(stack, [i for i, v in enumerate(stack) if v.kind == "lazy"])

    def take(self, stack: list[Val], count: int, order: list[int] | None = None) -> list[Val]:
        """Pop `count` operands for one operation, keeping the order in which Python evaluates things.

        Operands stay inline only when they are the newest lazy values and the
        operation evaluates them in the order they were created; everything
        else is evaluated into temporaries first.
        """
        operands = stack[len(stack) - count :] if count else []
        if any(v.kind == "iter" for v in operands):
            raise Untranslatable("an iterator used outside the for loop it was made for")
        rest = stack[: len(stack) - count]
        order = order if order is not None else list(range(count))
        lazy_rest = [v.seq for v in rest if v.kind == "lazy"]
        inline = [operands[i].seq for i in order if operands[i].kind == "lazy"]
        if (lazy_rest and inline and min(inline) < max(lazy_rest)) or inline != sorted(inline):
            self.materialize(
                stack,
                [len(rest) + i for i in range(count) if operands[i].kind == "lazy"]
                + [i for i, v in enumerate(rest) if v.kind == "lazy"],
            )
            operands = stack[len(stack) - count :] if count else []
        del stack[len(stack) - count :]
        return operands

    def statement(self, stack: list[Val], text: str, push: bool = True) -> None:
        """Emit `text` as a statement (assigned to a temporary pushed on the stack when `push`)."""
        self.flush(stack)
        if push:
            name = self.temp()
            self.emit(f"{name} = {text}")
            stack.append(Val(name, "pure"))
        else:
            self.emit(text)

    def lazy(self, stack: list[Val], expr: str, free: bool = False) -> None:
        """Push an expression evaluated once, where it is used (`free`: evaluating it has no effect)."""
        stack.append(Val(expr, "lazy", next(self.seq), free=free))

    def invalidate(self, stack: list[Val], local: str) -> None:
        """A local is about to change: stack entries that read it are evaluated first."""
        self.materialize(
            stack,
            [i for i, v in enumerate(stack) if v.kind == "local" and v.local == local],
        )
