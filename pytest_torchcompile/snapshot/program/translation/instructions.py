"""The bytecode translator's instruction handlers: one method per opcode, `op_<NAME>`.

Each handler pops its operands from the symbolic stack (`symbolic.py`) and
pushes its result, writing a statement where the operation can have an
effect. An opcode without a handler raises `Untranslatable` naming it.
"""

from __future__ import annotations

import ast
import dis
import keyword
import sys
import types

from ...emit.values import literal
from .symbolic import NULL, STABLE_GLOBALS, SymbolicStack, Untranslatable, Val

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

#: Python 3.10's operator opcodes (3.11 folded them into BINARY_OP, whose argrepr is the symbol).
_BINARY_310 = {
    "ADD": "+", "SUBTRACT": "-", "MULTIPLY": "*", "TRUE_DIVIDE": "/", "FLOOR_DIVIDE": "//",
    "MODULO": "%", "POWER": "**", "MATRIX_MULTIPLY": "@", "LSHIFT": "<<", "RSHIFT": ">>",
    "AND": "&", "OR": "|", "XOR": "^",
}  # fmt: skip

#: 3.12+'s one-operand intrinsics this translator writes (CALL_INTRINSIC_1's argrepr -> template).
_INTRINSIC_1 = {"INTRINSIC_LIST_TO_TUPLE": "(*{},)", "INTRINSIC_UNARY_POSITIVE": "+{}"}

#: FORMAT_VALUE's and CONVERT_VALUE's conversions (`!s`, `!r`, `!a`)
_CONVERSIONS = {1: "str", 2: "repr", 3: "ascii"}

#: where the NULL of a call goes: below the callable up to 3.12, above it from 3.13 on.
_NULL_BELOW = sys.version_info < (3, 13)


class Instructions(SymbolicStack):
    """`step` runs one instruction's handler on the stack."""

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
        elif op.startswith(("BINARY_", "INPLACE_")) and op.split("_", 1)[1] in _BINARY_310:
            symbol = _BINARY_310[op.split("_", 1)[1]]
            self.binary(stack, symbol + "=" if op.startswith("INPLACE_") else symbol)
        elif op.startswith("BUILD_"):
            self.build(ins, stack)
        else:
            raise Untranslatable(f"instruction {op} (offset {ins.offset})")

    def op_LOAD_CLOSURE(self, ins: dis.Instruction, stack: list[Val]) -> None:
        raise Untranslatable(
            f"it makes a function at run time (a closure over {ins.argval}, offset {ins.offset})"
        )

    def op_PUSH_NULL(self, ins: dis.Instruction, stack: list[Val]) -> None:
        stack.append(NULL)

    def op_LOAD_CONST(self, ins: dis.Instruction, stack: list[Val]) -> None:
        """A constant; from 3.14 on, where `a[1:2]` compiles to a slice constant, a slice of literals
        as BUILD_SLICE writes it (up to 3.13, a slice constant is Dynamo's own: named, as before)."""
        value = ins.argval
        if isinstance(value, slice) and sys.version_info >= (3, 14):
            parts = [value.start, value.stop] + ([] if value.step is None else [value.step])
            texts = [literal(p) for p in parts]
            if None not in texts:
                self.lazy(stack, f"slice({', '.join(texts)})", free=True)
                stack[-1].subscript = ":".join("" if t == "None" else t for t in texts)
                return
        stack.append(Val(self.constant(value), "pure"))

    def op_RETURN_CONST(self, ins: dis.Instruction, stack: list[Val]) -> None:
        self.flush(stack)
        self.emit(f"return {self.constant(ins.argval)}")

    def constant(self, value: object) -> str:
        text = literal(value)
        if text is not None:
            return text
        if isinstance(value, types.CodeType):
            raise Untranslatable(f"it makes a function at run time (code object {value.co_name})")
        index = next(
            (i for i, c in enumerate(self.code.co_consts) if c is value),
            len(self.constants),
        )
        name = f"{self.const_prefix}{index}"
        self.constants[name] = value
        return name

    def op_LOAD_SMALL_INT(self, ins: dis.Instruction, stack: list[Val]) -> None:
        """3.14+: a small int constant, from the argument rather than `co_consts`."""
        stack.append(Val(self.constant(ins.argval), "pure"))

    def op_LOAD_COMMON_CONSTANT(self, ins: dis.Instruction, stack: list[Val]) -> None:
        """3.14+: the AssertionError an `assert` raises (3.13: LOAD_ASSERTION_ERROR), or
        NotImplementedError. CPython's other common constants (`tuple`, `all`, `any`, which it
        loads for a generator inlined into a call) are refused by name."""
        if ins.argrepr not in ("AssertionError", "NotImplementedError"):
            raise Untranslatable(
                f"instruction LOAD_COMMON_CONSTANT {ins.argrepr} (offset {ins.offset})"
            )
        stack.append(Val(ins.argrepr, "pure"))

    def op_LOAD_FAST(self, ins: dis.Instruction, stack: list[Val]) -> None:
        stack.append(Val(ins.argval, "local", local=ins.argval))

    def op_LOAD_FAST_LOAD_FAST(self, ins: dis.Instruction, stack: list[Val]) -> None:
        for name in ins.argval:
            stack.append(Val(name, "local", local=name))

    def op_LOAD_DEREF(self, ins: dis.Instruction, stack: list[Val]) -> None:
        stack.append(Val(ins.argval, "local", local=ins.argval))

    def op_STORE_FAST(self, ins: dis.Instruction, stack: list[Val]) -> None:
        self.store(stack, ins.argval)

    def op_STORE_DEREF(self, ins: dis.Instruction, stack: list[Val]) -> None:
        if ins.argval in self.code.co_freevars:
            self.nonlocals.add(ins.argval)
        self.store(stack, ins.argval)

    def op_STORE_FAST_STORE_FAST(self, ins: dis.Instruction, stack: list[Val]) -> None:
        for name in ins.argval:
            self.store(stack, name)

    def store(self, stack: list[Val], name: str) -> None:
        (value,) = self.take(stack, 1)
        self.invalidate(stack, name)
        self.flush(stack)
        self.emit(f"{name} = {value.expr}")

    def op_DELETE_FAST(self, ins: dis.Instruction, stack: list[Val]) -> None:
        self.invalidate(stack, ins.argval)
        self.flush(stack)
        self.emit(f"del {ins.argval}")

    def op_LOAD_GLOBAL(self, ins: dis.Instruction, stack: list[Val]) -> None:
        """3.11+: the low bit of the argument pushes a NULL for the call that follows (3.10: never)."""
        with_null = sys.version_info >= (3, 11) and bool(ins.arg and ins.arg & 1)
        if with_null and _NULL_BELOW:
            stack.append(NULL)
        name = ins.argval
        self.globals_read.add(name)
        if name.startswith(STABLE_GLOBALS):
            stack.append(Val(name, "pure"))
        else:
            self.lazy(stack, name)
        if with_null and not _NULL_BELOW:
            stack.append(NULL)

    def op_LOAD_ATTR(self, ins: dis.Instruction, stack: list[Val]) -> None:
        """3.12+: the low bit of the argument loads a method for a call, as LOAD_METHOD did (its NULL
        stands for the self argument CPython may pass; the attribute is read either way)."""
        (obj,) = self.take(stack, 1)
        method = sys.version_info >= (3, 12) and bool(ins.arg and ins.arg & 1)
        if method and _NULL_BELOW:
            stack.append(NULL)
        self.lazy(stack, f"{_operand(obj)}.{_attr(ins.argval)}")
        if method and not _NULL_BELOW:
            stack.append(NULL)

    def op_LOAD_SUPER_ATTR(self, ins: dis.Instruction, stack: list[Val]) -> None:
        """`super().name` (3.12+): the global `super` called, then the attribute read."""
        function, cls, obj = self.take(stack, 3)
        if ins.arg and ins.arg & 1 and _NULL_BELOW:
            stack.append(NULL)
        # CPython calls `super` with the class and self only for the two-argument form (arg bit 2);
        # the zero-argument form finds them in the frame, as the translation's `super()` does
        arguments = f"{cls.expr}, {obj.expr}" if ins.arg and ins.arg & 2 else ""
        self.statement(stack, f"{_operand(function)}({arguments})")
        (proxy,) = self.take(stack, 1)
        self.lazy(stack, f"{proxy.expr}.{_attr(ins.argval)}")
        if ins.arg and ins.arg & 1 and not _NULL_BELOW:
            stack.append(NULL)

    def op_LOAD_METHOD(self, ins: dis.Instruction, stack: list[Val]) -> None:
        """3.10 and 3.11: a method for CALL_METHOD / CALL (a NULL below it)."""
        (obj,) = self.take(stack, 1)
        stack.append(NULL)
        self.lazy(stack, f"{_operand(obj)}.{_attr(ins.argval)}")

    def op_STORE_ATTR(self, ins: dis.Instruction, stack: list[Val]) -> None:
        value, obj = self.take(stack, 2)
        self.statement(stack, f"{_operand(obj)}.{_attr(ins.argval)} = {value.expr}", push=False)

    def op_DELETE_ATTR(self, ins: dis.Instruction, stack: list[Val]) -> None:
        (obj,) = self.take(stack, 1)
        self.statement(stack, f"del {_operand(obj)}.{_attr(ins.argval)}", push=False)

    def op_BINARY_SUBSCR(self, ins: dis.Instruction, stack: list[Val]) -> None:
        obj, key = self.take(stack, 2)
        self.lazy(stack, f"{_operand(obj)}[{_key(key)}]")

    def op_BINARY_SLICE(self, ins: dis.Instruction, stack: list[Val]) -> None:
        obj, lo, hi = self.take(stack, 3)
        self.lazy(stack, f"{_operand(obj)}[{_bound(lo)}:{_bound(hi)}]")

    def op_STORE_SLICE(self, ins: dis.Instruction, stack: list[Val]) -> None:
        """`obj[lo:hi] = value` (3.12+; Dynamo writes it to rebuild the stack after a graph break)."""
        value, obj, lo, hi = self.take(stack, 4)
        self.statement(
            stack, f"{_operand(obj)}[{_bound(lo)}:{_bound(hi)}] = {value.expr}", push=False
        )

    def op_STORE_SUBSCR(self, ins: dis.Instruction, stack: list[Val]) -> None:
        value, obj, key = self.take(stack, 3)
        self.statement(stack, f"{_operand(obj)}[{_key(key)}] = {value.expr}", push=False)

    def op_DELETE_SUBSCR(self, ins: dis.Instruction, stack: list[Val]) -> None:
        obj, key = self.take(stack, 2)
        self.statement(stack, f"del {_operand(obj)}[{_key(key)}]", push=False)

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
            self.lazy(stack, "{" + ", ".join(pairs) + "}", _free(items))
        elif op == "BUILD_CONST_KEY_MAP":
            items = self.take(stack, count + 1)
            keys = ast.literal_eval(items[-1].expr)
            self.lazy(
                stack,
                "{" + ", ".join(f"{literal(k)}: {v.expr}" for k, v in zip(keys, items[:-1])) + "}",
                _free(items),
            )
        elif op == "BUILD_SLICE":
            parts = self.take(stack, count)
            bounds = [("" if p.expr == "None" else p.expr) for p in parts]
            self.lazy(stack, "slice(" + ", ".join(p.expr for p in parts) + ")", _free(parts))
            stack[-1].subscript = ":".join(bounds)
        elif (
            op == "BUILD_STRING"
        ):  # an f-string's parts, each a str by now: joined, no method called
            vals = self.take(stack, count)
            self.lazy(stack, "''.join((" + "".join(f"{v.expr}, " for v in vals) + "))", _free(vals))
        elif op in ("BUILD_TUPLE", "BUILD_LIST", "BUILD_SET"):
            vals = self.take(stack, count)
            items = [v.expr for v in vals]
            if op == "BUILD_TUPLE":
                self.lazy(
                    stack,
                    "(" + ", ".join(items) + ("," if count == 1 else "") + ")",
                    _free(vals),
                )
            elif op == "BUILD_LIST":
                self.lazy(stack, "[" + ", ".join(items) + "]", _free(vals))
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
        self.statement(stack, f"(*{_operand(value)},)")

    def op_CALL_INTRINSIC_1(self, ins: dis.Instruction, stack: list[Val]) -> None:
        template = _INTRINSIC_1.get(ins.argrepr)
        if template is None:
            raise Untranslatable(
                f"instruction CALL_INTRINSIC_1 {ins.argrepr} (offset {ins.offset})"
            )
        (value,) = self.take(stack, 1)
        self.statement(stack, template.format(_operand(value)))

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
        """The iterator stays implicit: the `for` statement that consumes it calls iter() itself."""
        if stack[-1].kind not in ("pure", "local"):
            self.materialize(stack, [len(stack) - 1])
        (value,) = self.take(stack, 1)
        stack.append(Val(value.expr, "iter"))

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
        self.call(stack, ins.arg or 0, _names(names, ins), with_null=True)

    def op_CALL_FUNCTION(self, ins: dis.Instruction, stack: list[Val]) -> None:
        """3.10: the callable, then the arguments (no NULL)."""
        self.call(stack, ins.arg or 0, (), with_null=False)

    def op_CALL_FUNCTION_KW(self, ins: dis.Instruction, stack: list[Val]) -> None:
        """3.10: as CALL_FUNCTION, the keyword arguments' names a tuple on top of the stack."""
        (names,) = self.take(stack, 1)
        self.call(stack, ins.arg or 0, _names(names, ins), with_null=False)

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
        self.statement(stack, f"{_operand(function)}({', '.join(parts)})")

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
        self.statement(stack, f"{_operand(function)}(*{_operand(args)}{star})")

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
        stack.append(Val(loaded, "local", local=loaded))

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
        self.statement(stack, f"{module}.{_attr(ins.argval)}")

    op_MAKE_FUNCTION = op_LOAD_CLOSURE

    op_LOAD_FAST_CHECK = op_LOAD_FAST

    #: 3.14: a LOAD_FAST whose reference the frame keeps alive (borrowed): the same value
    op_LOAD_FAST_BORROW = op_LOAD_FAST

    op_LOAD_FAST_BORROW_LOAD_FAST_BORROW = op_LOAD_FAST_LOAD_FAST

    op_DELETE_DEREF = op_DELETE_FAST


def _operand(val: Val) -> str:
    """The value as the operand of an attribute, call, subscript or operator.

    Every expression on the stack is a primary (a name, a literal, a call,
    an attribute, a subscript or a display), so only a number needs
    parentheses (`(1).real`, not `1.real`).
    """
    return f"({val.expr})" if val.expr[:1].isdigit() else val.expr


def _bound(val: Val) -> str:
    """A slice bound as written between brackets (`a[:2]`, not `a[None:2]`)."""
    return "" if val.expr == "None" else val.expr


def _names(names: Val, ins: dis.Instruction) -> tuple[str, ...]:
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


def _key(val: Val) -> str:
    """A subscript's key: a slice as `a:b` (no call to `slice`), anything else as is."""
    return val.subscript if val.subscript is not None else val.expr


def _free(vals: list[Val]) -> bool:
    """A display of these values evaluates nothing new (no attribute, call or global read)."""
    return all(v.kind != "lazy" or v.free for v in vals)


def _attr(name: str) -> str:
    if not name.isidentifier() or keyword.iskeyword(name):
        raise Untranslatable(f"an attribute whose name is not a Python identifier ({name!r})")
    return name
