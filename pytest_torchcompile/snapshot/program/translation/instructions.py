"""The bytecode translator's instruction handlers: one method per opcode, `op_<NAME>`.

Each handler pops its operands from the symbolic stack (`symbolic.py`) and
pushes its result, writing a statement where the operation can have an
effect. An opcode without a handler raises `Untranslatable` naming it.
The handlers come in three layers, each a class over the one below: loads
and stores (`loads.py`), operators and displays (`operations.py`), and
here calls, returns, stack moves and imports; `operands.py` says how a
value is written where Python's grammar puts it.
"""

from __future__ import annotations

import dis
import sys

from .operands import as_attr, as_operand, keyword_names
from .operations import BINARY_310, Operations
from .symbolic import NULL, Untranslatable, Val

_SKIP = {
    "NOP",
    "RESUME",
    "CACHE",
    "PRECALL",
    "EXTENDED_ARG",
    "MAKE_CELL",
    "COPY_FREE_VARS",
    "END_FOR",
    "NOT_TAKEN",  # 3.14: marks the fall-through of a conditional jump, for instrumentation only
}

_UNARY = {
    "UNARY_NEGATIVE": "-{}",
    "UNARY_POSITIVE": "+{}",
    "UNARY_NOT": "not {}",
    "UNARY_INVERT": "~{}",
}


class Instructions(Operations):
    """`step` runs one instruction's handler on the stack: loads and stores (`loads.py`),
    operators and displays (`operations.py`), and here calls, returns, stack moves and imports."""

    def step(self, ins: dis.Instruction, stack: list[Val]) -> None:
        op = ins.opname
        if op in _SKIP:
            return
        if "JUMP" in op:
            raise Untranslatable(
                f"a jump this translator cannot structure, such as a while loop ({op} at offset {ins.offset})"
            )
        handler = getattr(self, f"op_{op}", None)
        if handler is not None:
            handler(ins, stack)
        elif op in _UNARY:
            (value,) = self.take(stack, 1)
            self.statement(stack, _UNARY[op].format(value.expr))
        elif op.startswith(("BINARY_", "INPLACE_")) and op.split("_", 1)[1] in BINARY_310:
            symbol = BINARY_310[op.split("_", 1)[1]]
            self.binary(stack, symbol + "=" if op.startswith("INPLACE_") else symbol)
        elif op.startswith("BUILD_"):
            self.build(ins, stack)
        else:
            raise Untranslatable(f"instruction {op} (offset {ins.offset})")

    def op_KW_NAMES(self, ins: dis.Instruction, stack: list[Val]) -> None:
        self.kw_names = (
            tuple(self.code.co_consts[ins.arg]) if isinstance(ins.arg, int) else tuple(ins.argval)
        )

    def op_CALL(self, ins: dis.Instruction, stack: list[Val]) -> None:
        """3.11+: a callable and a NULL (either order) or a method and self, then the arguments;
        3.11 and 3.12 name the keyword arguments in KW_NAMES first."""
        names, self.kw_names = self.kw_names, ()
        self.call(stack, ins.arg or 0, names, with_null=True)

    def op_CALL_KW(self, ins: dis.Instruction, stack: list[Val]) -> None:
        """3.13+: as CALL, the keyword arguments' names a tuple on top of the stack."""
        (names,) = self.take(stack, 1)
        self.call(stack, ins.arg or 0, keyword_names(names, ins), with_null=True)

    def op_CALL_FUNCTION(self, ins: dis.Instruction, stack: list[Val]) -> None:
        """3.10: the callable, then the arguments (no NULL)."""
        self.call(stack, ins.arg or 0, (), with_null=False)

    def op_CALL_FUNCTION_KW(self, ins: dis.Instruction, stack: list[Val]) -> None:
        """3.10: as CALL_FUNCTION, the keyword arguments' names a tuple on top of the stack."""
        (names,) = self.take(stack, 1)
        self.call(stack, ins.arg or 0, keyword_names(names, ins), with_null=False)

    def op_CALL_METHOD(self, ins: dis.Instruction, stack: list[Val]) -> None:
        """3.10: LOAD_METHOD's two values, then the arguments."""
        self.call(stack, ins.arg or 0, (), with_null=True)

    def call(self, stack: list[Val], argc: int, names: tuple[str, ...], with_null: bool) -> None:
        operands = self.take(stack, argc + (2 if with_null else 1))
        if not with_null:
            function, positional, args = operands[0], [], operands[1:]
        else:
            first, second, args = operands[0], operands[1], operands[2:]
            if first is NULL:
                function, positional = second, []
            elif second is NULL:
                function, positional = first, []
            else:
                function, positional = first, [second]
        split = len(args) - len(names)
        parts = [v.expr for v in positional + args[:split]] + [
            f"{k}={v.expr}" for k, v in zip(names, args[split:])
        ]
        self.statement(stack, f"{as_operand(function)}({', '.join(parts)})")

    def op_CALL_FUNCTION_EX(self, ins: dis.Instruction, stack: list[Val]) -> None:
        """`f(*args, **kwargs)`: a NULL beside the callable from 3.11 on (below it up to 3.12, above from
        3.13); from 3.14 on the kwargs are always there, a NULL where the call has none."""
        with_kwargs = sys.version_info >= (3, 14) or bool(ins.arg and ins.arg & 1)
        with_null = sys.version_info >= (3, 11)
        operands = self.take(stack, 2 + with_null + with_kwargs)
        if with_null:
            first, second = operands[0], operands[1]
            if first is not NULL and second is not NULL:
                raise Untranslatable(
                    f"CALL_FUNCTION_EX on a method with self (offset {ins.offset})"
                )
            function = second if first is NULL else first
        else:
            function = operands[0]
        args = operands[1 + with_null]
        star = f", **{operands[-1].expr}" if with_kwargs and operands[-1] is not NULL else ""
        self.statement(stack, f"{as_operand(function)}(*{as_operand(args)}{star})")

    def op_RETURN_VALUE(self, ins: dis.Instruction, stack: list[Val]) -> None:
        (value,) = self.take(stack, 1)
        self.flush(stack)
        self.emit(f"return {value.expr}")

    def op_RAISE_VARARGS(self, ins: dis.Instruction, stack: list[Val]) -> None:
        parts = [v.expr for v in self.take(stack, ins.arg or 0)]
        self.flush(stack)
        self.emit(
            "raise"
            if not parts
            else f"raise {parts[0]}" + (f" from {parts[1]}" if len(parts) > 1 else "")
        )

    def op_LOAD_ASSERTION_ERROR(self, ins: dis.Instruction, stack: list[Val]) -> None:
        stack.append(Val("AssertionError", "pure"))

    def op_RETURN_GENERATOR(self, ins: dis.Instruction, stack: list[Val]) -> None:
        """A generator's first instruction: the value sent to start it (None), which the POP_TOP
        after drops; the `yield` in the translation makes its `def` a generator function too."""
        if not self.code.co_name == "<genexpr>":  # type: ignore[attr-defined]
            raise Untranslatable(f"a generator function (offset {ins.offset})")
        stack.append(Val("None", "pure"))

    def op_YIELD_VALUE(self, ins: dis.Instruction, stack: list[Val]) -> None:
        """`yield value`, whose result is what the generator's consumer sends back (None for a
        `for` loop; the POP_TOP after drops it)."""
        if not self.code.co_name == "<genexpr>":  # type: ignore[attr-defined]
            raise Untranslatable(f"a yield outside a generator expression (offset {ins.offset})")
        (value,) = self.take(stack, 1)
        self.flush(stack)
        sent = self.temp()  # type: ignore[attr-defined]
        self.emit(f"{sent} = yield {value.expr}")  # type: ignore[attr-defined]
        stack.append(Val(sent, "pure"))

    def op_POP_TOP(self, ins: dis.Instruction, stack: list[Val]) -> None:
        (value,) = self.take(stack, 1)
        if value.kind == "lazy" and not value.free:
            self.statement(stack, value.expr, push=False)

    def op_COPY(self, ins: dis.Instruction, stack: list[Val]) -> None:
        self.copy(stack, ins.arg or 0)

    def copy(self, stack: list[Val], depth: int) -> None:
        index = len(stack) - depth
        if stack[index].kind == "lazy":
            self.materialize(stack, [index])
        stack.append(stack[index])

    def op_SWAP(self, ins: dis.Instruction, stack: list[Val]) -> None:
        stack[-1], stack[-ins.arg] = stack[-ins.arg], stack[-1]

    def op_ROT_N(self, ins: dis.Instruction, stack: list[Val]) -> None:
        """3.10: the top of the stack moves down to position n (ROT_TWO, ROT_THREE, ROT_FOUR: n = 2, 3, 4)."""
        count = {"ROT_TWO": 2, "ROT_THREE": 3, "ROT_FOUR": 4}.get(ins.opname, ins.arg or 0)
        top = stack.pop()
        stack.insert(len(stack) - count + 1, top)

    op_ROT_TWO = op_ROT_THREE = op_ROT_FOUR = op_ROT_N

    def op_DUP_TOP(self, ins: dis.Instruction, stack: list[Val]) -> None:
        """3.10's COPY 1."""
        self.copy(stack, 1)

    def op_DUP_TOP_TWO(self, ins: dis.Instruction, stack: list[Val]) -> None:
        """3.10: the two top values, again, in the same order."""
        self.copy(stack, 2)
        self.copy(stack, 2)

    def op_STORE_FAST_LOAD_FAST(self, ins: dis.Instruction, stack: list[Val]) -> None:
        """3.13+: STORE_FAST then LOAD_FAST, one instruction."""
        stored, loaded = ins.argval
        self.store(stack, stored)
        self.load_fast(loaded, ins, stack)

    def op_TO_BOOL(self, ins: dis.Instruction, stack: list[Val]) -> None:
        """3.13+: the truth value, before a conditional jump or `not` (which test the value itself)."""
        following = self.ins[self.at[ins.offset] + 1].opname
        if following == "UNARY_NOT" or following.startswith("POP_JUMP_IF_"):
            return  # `if x` and `not x` test the truth of x themselves, once
        (value,) = self.take(stack, 1)
        self.statement(stack, f"bool({value.expr})")

    def op_IMPORT_NAME(self, ins: dis.Instruction, stack: list[Val]) -> None:
        level, fromlist = self.take(stack, 2)
        self.statement(
            stack,
            f"__import__({ins.argval!r}, globals(), None, {fromlist.expr}, {level.expr})",
        )

    def op_IMPORT_FROM(self, ins: dis.Instruction, stack: list[Val]) -> None:
        module = self.container(stack, 1)
        self.statement(stack, f"{module}.{as_attr(ins.argval)}")
