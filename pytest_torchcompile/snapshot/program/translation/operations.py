"""The translator's handlers for operators and displays: binary and comparison operators,
f-strings, lists, tuples, sets, dicts, unpacking and iterators.

Below `Instructions` (`instructions.py`), above the loads and stores
(`loads.py`, whose subscript it writes for BINARY_OP's `[]`): each handler
pops its operands from the symbolic stack (`symbolic.py`) and pushes the
expression it makes.
"""

from __future__ import annotations

import ast
import dis

from ...emit.values import literal
from .loads import LoadsAndStores
from .operands import all_free, as_operand
from .symbolic import Untranslatable, Val

#: Python 3.10's operator opcodes (3.11 folded them into BINARY_OP, whose argrepr is the symbol).
BINARY_310 = {
    "ADD": "+", "SUBTRACT": "-", "MULTIPLY": "*", "TRUE_DIVIDE": "/", "FLOOR_DIVIDE": "//",
    "MODULO": "%", "POWER": "**", "MATRIX_MULTIPLY": "@", "LSHIFT": "<<", "RSHIFT": ">>",
    "AND": "&", "OR": "|", "XOR": "^",
}  # fmt: skip

#: 3.12+'s one-operand intrinsics this translator writes (CALL_INTRINSIC_1's argrepr -> template).
_INTRINSIC_1 = {"INTRINSIC_LIST_TO_TUPLE": "(*{},)", "INTRINSIC_UNARY_POSITIVE": "+{}"}

#: FORMAT_VALUE's and CONVERT_VALUE's conversions (`!s`, `!r`, `!a`)
_CONVERSIONS = {1: "str", 2: "repr", 3: "ascii"}


class Operations(LoadsAndStores):
    """Handlers that combine values into a new one (an operator, a display, an f-string)."""

    def op_BINARY_OP(self, ins: dis.Instruction, stack: list[Val]) -> None:
        """An operator; from 3.14 on also a subscript (argrepr `[]`, BINARY_SUBSCR up to 3.13)."""
        if ins.argrepr == "[]":
            self.op_BINARY_SUBSCR(ins, stack)
        else:
            self.binary(stack, ins.argrepr)

    def binary(self, stack: list[Val], symbol: str) -> None:
        """`left <symbol> right`; an augmented one (`+=`) on a temporary, as CPython's in-place operator."""
        left, right = self.take(stack, 2)
        if symbol.endswith("=") and symbol not in ("==", "!=", "<=", ">="):
            self.flush(stack)
            name = self.temp()
            self.emit(f"{name} = {left.expr}")
            self.emit(f"{name} {symbol} {right.expr}")
            stack.append(Val(name, "pure"))
        else:
            self.statement(stack, f"{left.expr} {symbol} {right.expr}")

    def op_COMPARE_OP(self, ins: dis.Instruction, stack: list[Val]) -> None:
        left, right = self.take(stack, 2)
        symbol = str(ins.argval).removeprefix("bool(").removesuffix(")")
        self.statement(stack, f"{left.expr} {symbol} {right.expr}")

    def op_IS_OP(self, ins: dis.Instruction, stack: list[Val]) -> None:
        left, right = self.take(stack, 2)
        self.statement(stack, f"{left.expr} {'is not' if ins.arg else 'is'} {right.expr}")

    def op_CONTAINS_OP(self, ins: dis.Instruction, stack: list[Val]) -> None:
        left, right = self.take(stack, 2)
        self.statement(stack, f"{left.expr} {'not in' if ins.arg else 'in'} {right.expr}")

    def op_FORMAT_VALUE(self, ins: dis.Instruction, stack: list[Val]) -> None:
        """An f-string's `{value!conversion:spec}` (up to 3.12): the conversion, then `format`."""
        flags = ins.arg or 0
        operands = self.take(stack, 2 if flags & 0x04 else 1)
        value, spec = operands[0].expr, (operands[1].expr if flags & 0x04 else "''")
        conversion = _CONVERSIONS.get(flags & 0x03)
        if conversion:
            value = f"{conversion}({value})"
        self.statement(stack, f"format({value}, {spec})")

    def op_CONVERT_VALUE(self, ins: dis.Instruction, stack: list[Val]) -> None:
        """3.13+: an f-string's `!s`, `!r` or `!a`."""
        (value,) = self.take(stack, 1)
        self.statement(stack, f"{_CONVERSIONS[ins.arg or 0]}({value.expr})")

    def op_FORMAT_SIMPLE(self, ins: dis.Instruction, stack: list[Val]) -> None:
        """3.13+: an f-string's `{value}` without a spec."""
        (value,) = self.take(stack, 1)
        self.statement(stack, f"format({value.expr}, '')")

    def op_FORMAT_WITH_SPEC(self, ins: dis.Instruction, stack: list[Val]) -> None:
        value, spec = self.take(stack, 2)
        self.statement(stack, f"format({value.expr}, {spec.expr})")

    def build(self, ins: dis.Instruction, stack: list[Val]) -> None:
        op, count = ins.opname, ins.arg or 0
        if op == "BUILD_MAP":
            items = self.take(stack, 2 * count)
            pairs = [f"{items[k].expr}: {items[k + 1].expr}" for k in range(0, len(items), 2)]
            self.lazy(stack, "{" + ", ".join(pairs) + "}", all_free(items))
        elif op == "BUILD_CONST_KEY_MAP":
            items = self.take(stack, count + 1)
            keys = ast.literal_eval(items[-1].expr)
            self.lazy(
                stack,
                "{" + ", ".join(f"{literal(k)}: {v.expr}" for k, v in zip(keys, items[:-1])) + "}",
                all_free(items),
            )
        elif op == "BUILD_SLICE":
            parts = self.take(stack, count)
            bounds = [("" if p.expr == "None" else p.expr) for p in parts]
            self.lazy(stack, "slice(" + ", ".join(p.expr for p in parts) + ")", all_free(parts))
            stack[-1].subscript = ":".join(bounds)
        elif (
            op == "BUILD_STRING"
        ):  # an f-string's parts, each a str by now: joined, no method called
            vals = self.take(stack, count)
            self.lazy(
                stack, "''.join((" + "".join(f"{v.expr}, " for v in vals) + "))", all_free(vals)
            )
        elif op in ("BUILD_TUPLE", "BUILD_LIST", "BUILD_SET"):
            vals = self.take(stack, count)
            items = [v.expr for v in vals]
            if op == "BUILD_TUPLE":
                self.lazy(
                    stack,
                    "(" + ", ".join(items) + ("," if count == 1 else "") + ")",
                    all_free(vals),
                )
            elif op == "BUILD_LIST":
                self.lazy(stack, "[" + ", ".join(items) + "]", all_free(vals))
            else:
                self.lazy(stack, "{" + ", ".join(items) + "}" if items else "set()")
        else:
            raise Untranslatable(f"instruction {op} (offset {ins.offset})")

    def container(self, stack: list[Val], depth: int) -> str:
        """The container `depth` below the top, evaluated into a temporary (it is about to change)."""
        index = len(stack) - depth
        if stack[index].kind != "pure":
            self.materialize(stack, [index])
        return stack[index].expr

    def op_LIST_EXTEND(self, ins: dis.Instruction, stack: list[Val]) -> None:
        self.mutate(stack, ins.arg, "{}.extend({})")

    def op_LIST_APPEND(self, ins: dis.Instruction, stack: list[Val]) -> None:
        self.mutate(stack, ins.arg, "{}.append({})")

    def op_SET_UPDATE(self, ins: dis.Instruction, stack: list[Val]) -> None:
        self.mutate(stack, ins.arg, "{}.update({})")

    def op_SET_ADD(self, ins: dis.Instruction, stack: list[Val]) -> None:
        self.mutate(stack, ins.arg, "{}.add({})")

    def op_MAP_ADD(self, ins: dis.Instruction, stack: list[Val]) -> None:
        """A dict comprehension's item: the key, then the value, on top of the stack."""
        key, value = self.take(stack, 2)
        target = self.container(stack, ins.arg or 0)
        self.statement(stack, f"{target}[{key.expr}] = {value.expr}", push=False)

    def op_DICT_UPDATE(self, ins: dis.Instruction, stack: list[Val]) -> None:
        self.mutate(stack, ins.arg, "{}.update({})")

    def op_DICT_MERGE(self, ins: dis.Instruction, stack: list[Val]) -> None:
        """`f(**a, **b)`: as `update`, which overrides a repeated keyword where CPython raises TypeError."""
        self.mutate(stack, ins.arg, "{}.update({})")

    def mutate(self, stack: list[Val], depth: int, template: str) -> None:
        (value,) = self.take(stack, 1)
        target = self.container(stack, depth)
        self.statement(stack, template.format(target, value.expr), push=False)

    def op_LIST_TO_TUPLE(self, ins: dis.Instruction, stack: list[Val]) -> None:
        (value,) = self.take(stack, 1)
        self.statement(stack, f"(*{as_operand(value)},)")

    def op_CALL_INTRINSIC_1(self, ins: dis.Instruction, stack: list[Val]) -> None:
        template = _INTRINSIC_1.get(ins.argrepr)
        if template is None:
            raise Untranslatable(
                f"instruction CALL_INTRINSIC_1 {ins.argrepr} (offset {ins.offset})"
            )
        (value,) = self.take(stack, 1)
        self.statement(stack, template.format(as_operand(value)))

    def op_UNPACK_SEQUENCE(self, ins: dis.Instruction, stack: list[Val]) -> None:
        (value,) = self.take(stack, 1)
        self.flush(stack)
        names = [self.temp() for _ in range(ins.arg or 0)]
        self.emit(
            f"{', '.join(names) + (',' if len(names) == 1 else '')} = {value.expr}"
            if names
            else f"() = {value.expr}"
        )
        stack.extend(Val(n, "pure") for n in reversed(names))

    def op_GET_ITER(self, ins: dis.Instruction, stack: list[Val]) -> None:
        """The iterator stays implicit: the `for` statement that consumes it calls iter() itself.
        So does 3.11's comprehension, a function made just before and called on it: its `for` loop
        over its parameter `.0` (renamed) calls iter() on what it is given, the iterable, where the
        bytecode called it just before the call (nothing runs between the two). A generator
        expression's body runs only once it is consumed, so there `iter()` is called here (the
        builtin, as a constant: a name the code could rebind would not do)."""
        made = self.comprehensions.get(stack[-2].expr) if len(stack) > 1 else None  # type: ignore[attr-defined]
        if made == "<genexpr>":
            (value,) = self.take(stack, 1)
            self.lazy(stack, f"{self.constant(iter)}({value.expr})")  # type: ignore[attr-defined]
            return
        if made is not None:
            return
        if stack[-1].kind not in ("pure", "local"):
            self.materialize(stack, [len(stack) - 1])
        (value,) = self.take(stack, 1)
        stack.append(Val(value.expr, "iter"))
