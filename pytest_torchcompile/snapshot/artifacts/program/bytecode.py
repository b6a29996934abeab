"""Python bytecode as Python source, one operation a line: how the program file holds Dynamo's code.

Dynamo rewrites a frame's bytecode and never writes it as source; depyf
decompiles it into idiomatic Python but cannot follow the stack shuffles of
a graph break and writes non-literal constants as strings. This translator
is deliberately plain instead: it walks the instructions with a symbolic
stack and writes every operation that can have an effect (a call, an
operator, a store) as its own statement, in the order the bytecode runs it,
on fresh temporaries (`_s<N>`). Pure values (locals, constants, Dynamo's
module aliases) and side-effect-free attribute and subscript chains are
folded into the statement that uses them when that keeps the order of
evaluation. Structured control flow is rebuilt where it nests: forward
conditional jumps as `if`/`else`, `for` loops; anything else (exception
tables, `while` loops, closures made at run time, unknown instructions)
raises `Untranslatable` naming the instruction, never a guess.

Constants without a literal form (a `torch.device` in `co_consts`) become
names `__const_<i>` whose values the caller binds. Tested on CPython 3.11;
the 3.12/3.13 instructions it knows are handled the same way.
"""

from __future__ import annotations

import ast
import dis
import itertools
import keyword
import sys
import types
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Translation", "Untranslatable", "literal", "translate"]

#: prefixes of globals Dynamo installs once and never rebinds (read lazily: their value cannot change).
STABLE_GLOBALS = (
    "__compiled_fn",
    "__resume_at",
    "__import_",
    "___module_",
    "__builtins_dict",
    "__const_",
)
_TERMINATORS = {"RETURN_VALUE", "RETURN_CONST", "RAISE_VARARGS", "RERAISE"}
_COND_JUMPS = {
    "POP_JUMP_FORWARD_IF_FALSE": "{}",
    "POP_JUMP_IF_FALSE": "{}",
    "POP_JUMP_FORWARD_IF_TRUE": "not {}",
    "POP_JUMP_IF_TRUE": "not {}",
    "POP_JUMP_FORWARD_IF_NONE": "{} is not None",
    "POP_JUMP_IF_NONE": "{} is not None",
    "POP_JUMP_FORWARD_IF_NOT_NONE": "{} is None",
    "POP_JUMP_IF_NOT_NONE": "{} is None",
}
_SKIP = {
    "NOP",
    "RESUME",
    "CACHE",
    "PRECALL",
    "EXTENDED_ARG",
    "MAKE_CELL",
    "COPY_FREE_VARS",
    "END_FOR",
}
_UNARY = {
    "UNARY_NEGATIVE": "-{}",
    "UNARY_POSITIVE": "+{}",
    "UNARY_NOT": "not {}",
    "UNARY_INVERT": "~{}",
    "TO_BOOL": "bool({})",
}
_CO_VARARGS, _CO_VARKEYWORDS = 0x04, 0x08


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
    constants: dict[str, Any] = field(default_factory=dict)
    globals_read: tuple[str, ...] = ()


def literal(value: Any) -> str | None:
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


def translate(
    code: types.CodeType, name: str | None = None, const_prefix: str = "__const_"
) -> Translation:
    """`def <name>(<the code's parameters>): ...` with the code's behaviour, or Untranslatable.

    Non-literal constants are named `<const_prefix><index in co_consts>`.
    """
    if getattr(code, "co_exceptiontable", b""):
        raise Untranslatable("it has an exception table (a try, with or finally block)")
    translator = _Translator(code, const_prefix)
    translator.run()
    return Translation(
        translator.source(name or code.co_name),
        dict(translator.constants),
        tuple(sorted(translator.globals_read)),
    )


class _Translator:
    def __init__(self, code: types.CodeType, const_prefix: str) -> None:
        self.code, self.const_prefix = code, const_prefix
        self.ins = list(dis.get_instructions(code))
        self.at = {ins.offset: i for i, ins in enumerate(self.ins)}
        self.lines: list[str] = []
        self.indent = 1
        self.seq = itertools.count(1)
        taken = (
            set(code.co_varnames)
            | set(code.co_names)
            | set(code.co_freevars)
            | set(code.co_cellvars)
        )
        self.prefix = next(
            p for p in ("_s", "_s_", "_s__", "_tmp_s") if not any(n.startswith(p) for n in taken)
        )
        self.temps = itertools.count()
        self.constants: dict[str, Any] = {}
        self.globals_read: set[str] = set()
        self.nonlocals: set[str] = set()
        self.kw_names: tuple[str, ...] = ()

    # --- output ---------------------------------------------------------------------

    def source(self, name: str) -> str:
        header = f"def {name}({_parameters(self.code)}):"
        body = [f"    nonlocal {', '.join(sorted(self.nonlocals))}"] if self.nonlocals else []
        return "\n".join([header, *body, *self.lines]) + "\n"

    def emit(self, line: str) -> None:
        self.lines.append("    " * self.indent + line)

    def temp(self) -> str:
        return f"{self.prefix}{next(self.temps)}"

    def run(self) -> None:
        end = self._block(0, len(self.ins), [])
        if end is not None:
            raise Untranslatable("the code falls off its end without a return")

    # --- the symbolic stack ---------------------------------------------------------

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

    # --- blocks and control flow -----------------------------------------------------

    def _block(self, start: int, stop: int, stack: list[Val]) -> list[Val] | None:
        """Translate instructions [start, stop); the stack at `stop`, or None when every path returned or raised."""
        i = start
        while i < stop:
            ins = self.ins[i]
            op = ins.opname
            if op in _COND_JUMPS:
                return self._conditional(i, stop, stack)
            if op == "FOR_ITER":
                i = self._loop(i, stack)
                continue
            if op in ("JUMP_FORWARD", "JUMP") and ins.argval > ins.offset:
                i = self._skip(i, stop)
                continue
            if op in (
                "JUMP_FORWARD",
                "JUMP_BACKWARD",
                "JUMP_ABSOLUTE",
                "JUMP",
                "JUMP_BACKWARD_NO_INTERRUPT",
            ):
                raise Untranslatable(f"an unstructured jump ({op} at offset {ins.offset})")
            self.step(ins, stack)
            if op in _TERMINATORS:
                return None
            i += 1
        return stack

    def _skip(self, i: int, stop: int) -> int:
        """A jump over code nothing else reaches (Dynamo's resume prologue skips the original code): go on after it."""
        ins = self.ins[i]
        target = self._target(ins)
        if target > stop:
            raise Untranslatable(f"a jump out of its block ({ins.opname} at offset {ins.offset})")
        skipped = range(i + 1, target)
        for other, jump in enumerate(self.ins):
            if (
                other not in skipped
                and jump.opcode in dis.hasjrel + dis.hasjabs
                and self.at.get(jump.argval, -1) in skipped
            ):
                raise Untranslatable(f"a jump into code another jump skips (offset {jump.offset})")
        return target

    def _target(self, ins: dis.Instruction) -> int:
        target = self.at.get(ins.argval)
        if target is None or ins.argval <= ins.offset:
            raise Untranslatable(
                f"a jump this translator cannot structure ({ins.opname} at offset {ins.offset})"
            )
        return target

    def _conditional(self, i: int, stop: int, stack: list[Val]) -> list[Val] | None:
        ins = self.ins[i]
        (cond,) = self.take(stack, 1)
        self.flush(stack)
        target = self._target(ins)
        if target > stop:
            raise Untranslatable(
                f"a conditional jump out of its block ({ins.opname} at offset {ins.offset})"
            )
        last = self.ins[target - 1] if target - 1 > i else None
        merge, then_stop = target, target
        if last is not None and last.opname in ("JUMP_FORWARD", "JUMP"):
            merge, then_stop = self._target(last), target - 1
            if merge > stop:
                raise Untranslatable(
                    f"an else branch that jumps out of its block (offset {last.offset})"
                )
        self.emit(f"if {_COND_JUMPS[ins.opname].format(cond.expr)}:")
        then_out, then_lines = self._branch(i + 1, then_stop, list(stack))
        else_out, else_lines = (
            self._branch(target, merge, list(stack)) if merge != target else (list(stack), [])
        )
        return self._join(then_out, then_lines, else_out, else_lines, merge, stop)

    def _branch(
        self, start: int, stop: int, stack: list[Val]
    ) -> tuple[list[Val] | None, list[str]]:
        """A nested block's end stack and its lines (indented one level deeper)."""
        mark, self.indent = len(self.lines), self.indent + 1
        out = self._block(start, stop, stack)
        if out is not None:
            self.flush(out)
        self.indent -= 1
        lines = self.lines[mark:]
        del self.lines[mark:]
        return out, lines

    def _join(
        self,
        then_out: list[Val] | None,
        then_lines: list[str],
        else_out: list[Val] | None,
        else_lines: list[str],
        merge: int,
        stop: int,
    ) -> list[Val] | None:
        pad = "    " * (self.indent + 1)
        if then_out is not None and else_out is not None:
            if len(then_out) != len(else_out):
                raise Untranslatable(
                    "the two branches of a conditional leave stacks of different depth"
                )
            for index, (a, b) in enumerate(zip(then_out, else_out)):
                if a.expr != b.expr:
                    name = self.temp()
                    then_lines.append(f"{pad}{name} = {a.expr}")
                    else_lines.append(f"{pad}{name} = {b.expr}")
                    then_out[index] = Val(name, "pure")
        self.lines.extend(then_lines or [f"{pad}pass"])
        if else_lines:
            self.lines.append("    " * self.indent + "else:")
            self.lines.extend(else_lines)
        out = then_out if then_out is not None else else_out
        if out is None:
            return None
        return self._block(merge, stop, out)

    def _loop(self, i: int, stack: list[Val]) -> int:
        """`for <item> in <iterator>:` over the body that jumps back to FOR_ITER; the index after the loop."""
        ins = self.ins[i]
        exit_index = self._target(ins)
        back = exit_index - 1
        if (
            self.ins[back].opname not in ("JUMP_BACKWARD", "JUMP_ABSOLUTE")
            or self.ins[back].argval != ins.offset
        ):
            raise Untranslatable(
                f"a loop that does not end by jumping back to its FOR_ITER (offset {ins.offset})"
            )
        iterator = stack[-1]
        if iterator.kind != "iter":
            raise Untranslatable(
                f"a FOR_ITER over a value GET_ITER did not make (offset {ins.offset})"
            )
        item = self.temp()
        self.emit(f"for {item} in {iterator.expr}:")
        before = [v.expr for v in stack]
        out, lines = self._branch(i + 1, back, [*stack, Val(item, "pure")])
        if out is not None and [v.expr for v in out] != before:
            raise Untranslatable(f"a loop body that changes the stack (offset {ins.offset})")
        self.lines.extend(lines or ["    " * (self.indent + 1) + "pass"])
        if sys.version_info < (
            3,
            13,
        ):  # 3.13 pops the iterator with an instruction of its own
            stack.pop()
        return exit_index

    # --- instructions ------------------------------------------------------------------

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
        elif op.startswith("BUILD_"):
            self.build(ins, stack)
        else:
            raise Untranslatable(f"instruction {op} (offset {ins.offset})")

    def op_LOAD_CLOSURE(self, ins: dis.Instruction, stack: list[Val]) -> None:
        raise Untranslatable(
            f"it makes a function at run time (a closure over {ins.argval}, offset {ins.offset})"
        )

    op_MAKE_FUNCTION = op_LOAD_CLOSURE

    def op_PUSH_NULL(self, ins: dis.Instruction, stack: list[Val]) -> None:
        stack.append(NULL)

    def op_LOAD_CONST(self, ins: dis.Instruction, stack: list[Val]) -> None:
        stack.append(Val(self.constant(ins.argval), "pure"))

    def op_RETURN_CONST(self, ins: dis.Instruction, stack: list[Val]) -> None:
        self.flush(stack)
        self.emit(f"return {self.constant(ins.argval)}")

    def constant(self, value: Any) -> str:
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

    def op_LOAD_FAST(self, ins: dis.Instruction, stack: list[Val]) -> None:
        stack.append(Val(ins.argval, "local", local=ins.argval))

    op_LOAD_FAST_CHECK = op_LOAD_FAST

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

    op_DELETE_DEREF = op_DELETE_FAST

    def op_LOAD_GLOBAL(self, ins: dis.Instruction, stack: list[Val]) -> None:
        null_first = sys.version_info < (3, 12)
        with_null = bool(ins.arg and ins.arg & 1)
        if with_null and null_first:
            stack.append(NULL)
        name = ins.argval
        self.globals_read.add(name)
        if name.startswith(STABLE_GLOBALS):
            stack.append(Val(name, "pure"))
        else:
            self.lazy(stack, name)
        if with_null and not null_first:
            stack.append(NULL)

    def op_LOAD_ATTR(self, ins: dis.Instruction, stack: list[Val]) -> None:
        (obj,) = self.take(stack, 1)
        method = sys.version_info >= (3, 12) and bool(ins.arg and ins.arg & 1)
        self.lazy(stack, f"{_operand(obj)}.{_attr(ins.argval)}")
        if method:
            stack.append(NULL)

    def op_LOAD_METHOD(self, ins: dis.Instruction, stack: list[Val]) -> None:
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
        self.lazy(stack, f"{_operand(obj)}[{lo.expr}:{hi.expr}]")

    def op_STORE_SUBSCR(self, ins: dis.Instruction, stack: list[Val]) -> None:
        value, obj, key = self.take(stack, 3)
        self.statement(stack, f"{_operand(obj)}[{_key(key)}] = {value.expr}", push=False)

    def op_DELETE_SUBSCR(self, ins: dis.Instruction, stack: list[Val]) -> None:
        obj, key = self.take(stack, 2)
        self.statement(stack, f"del {_operand(obj)}[{_key(key)}]", push=False)

    def op_BINARY_OP(self, ins: dis.Instruction, stack: list[Val]) -> None:
        left, right = self.take(stack, 2)
        symbol = ins.argrepr
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
        if ins.argrepr != "INTRINSIC_LIST_TO_TUPLE":
            raise Untranslatable(
                f"instruction CALL_INTRINSIC_1 {ins.argrepr} (offset {ins.offset})"
            )
        self.op_LIST_TO_TUPLE(ins, stack)

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
        argc, names = ins.arg or 0, self.kw_names
        self.kw_names = ()
        operands = self.take(stack, argc + 2)
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
        with_kwargs = bool(ins.arg and ins.arg & 1)
        operands = self.take(stack, 4 if with_kwargs else 3)
        first, second, args = operands[0], operands[1], operands[2]
        function = second if first is NULL else first
        if first is not NULL and second is not NULL:
            raise Untranslatable(f"CALL_FUNCTION_EX on a method with self (offset {ins.offset})")
        star = f", **{operands[3].expr}" if with_kwargs else ""
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
        index = len(stack) - ins.arg
        if stack[index].kind == "lazy":
            self.materialize(stack, [index])
        stack.append(stack[index])

    def op_SWAP(self, ins: dis.Instruction, stack: list[Val]) -> None:
        stack[-1], stack[-ins.arg] = stack[-ins.arg], stack[-1]

    def op_IMPORT_NAME(self, ins: dis.Instruction, stack: list[Val]) -> None:
        level, fromlist = self.take(stack, 2)
        self.statement(
            stack,
            f"__import__({ins.argval!r}, globals(), None, {fromlist.expr}, {level.expr})",
        )

    def op_IMPORT_FROM(self, ins: dis.Instruction, stack: list[Val]) -> None:
        module = self.container(stack, 1)
        self.statement(stack, f"{module}.{_attr(ins.argval)}")


def _operand(val: Val) -> str:
    """The value as the operand of an attribute, call, subscript or operator.

    Every expression on the stack is a primary (a name, a literal, a call,
    an attribute, a subscript or a display), so only a number needs
    parentheses (`(1).real`, not `1.real`).
    """
    return f"({val.expr})" if val.expr[:1].isdigit() else val.expr


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


def _parameters(code: types.CodeType) -> str:
    """The parameter list of the code's function, without defaults (bound from the original at load)."""
    names = list(code.co_varnames)
    posonly, count, kwonly = (
        code.co_posonlyargcount,
        code.co_argcount,
        code.co_kwonlyargcount,
    )
    parts = names[:posonly] + (["/"] if posonly else []) + names[posonly:count]
    cursor = count + kwonly
    if code.co_flags & _CO_VARARGS:
        parts.append("*" + names[cursor])
        cursor += 1
    elif kwonly:
        parts.append("*")
    parts += names[count : count + kwonly]
    if code.co_flags & _CO_VARKEYWORDS:
        parts.append("**" + names[cursor])
    return ", ".join(parts)
