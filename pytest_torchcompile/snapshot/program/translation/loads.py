"""The translator's handlers for loads and stores: constants, names, attributes, subscripts.

The first layer of `Instructions` (`instructions.py`, over `operations.py`
over this): each handler pops its operands
from the symbolic stack (`symbolic.py`) and pushes its result, writing a
statement where the operation can have an effect (a store, a delete).
"""

from __future__ import annotations

import dis
import sys

from ...emit.values import literal
from .operands import as_attr, as_bound, as_key, as_operand
from .symbolic import NULL, STABLE_GLOBALS, SymbolicStack, Untranslatable, Val

#: where the NULL of a call goes: below the callable up to 3.12, above it from 3.13 on.
_NULL_BELOW = sys.version_info < (3, 13)


def saved_marker(name: str) -> str:
    """What LOAD_FAST_AND_CLEAR leaves on the stack for `name`: restored into it, nothing is written."""
    return f"<the value {name} had before the comprehension>"


class LoadsAndStores(SymbolicStack):
    """Handlers that read or write a name, an attribute or a subscript."""

    def op_LOAD_CLOSURE(self, ins: dis.Instruction, stack: list[Val]) -> None:
        """The cell of a free or cell variable itself (Dynamo hands a resume function its frame's
        cells): in source, the one cell a lambda reading the variable closes over."""
        self.closed.add(ins.argval)
        stack.append(Val(f"(lambda: {ins.argval}).__closure__[0]", "pure"))

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
        index = next((i for i, c in enumerate(self.code.co_consts) if c is value), None)
        # a value the translation adds (the builtin `iter` a generator expression is given) gets
        # a name of its own: an index of its would be some other constant's name
        name = (
            f"{self.const_prefix}{index}"
            if index is not None
            else f"{self.const_prefix}x{len(self.constants)}"
        )
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
        self.load_fast(ins.argval, ins, stack)

    def op_LOAD_FAST_LOAD_FAST(self, ins: dis.Instruction, stack: list[Val]) -> None:
        for name in ins.argval:
            self.load_fast(name, ins, stack)

    def load_fast(self, name: str, ins: dis.Instruction, stack: list[Val]) -> None:
        """A local's value; LOAD_FAST of a cell or free variable is the cell itself (from 3.11 on a
        cell lives in the frame's fast locals; 3.13's assembler writes LOAD_CLOSURE so, and
        LOAD_DEREF reads the contents)."""
        if sys.version_info >= (3, 11) and name in self.cells:
            self.op_LOAD_CLOSURE(ins._replace(argval=name), stack)
        else:
            name = self.renames.get(name, name)  # an inlined comprehension's variable: its own
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
        if value.expr == saved_marker(name):  # an inlined comprehension ends: its variable is gone
            del self.renames[name]
            return
        name = self.renames.get(name, name)
        self.invalidate(stack, name)
        self.flush(stack)
        self.emit(f"{name} = {value.expr}")

    def op_DELETE_FAST(self, ins: dis.Instruction, stack: list[Val]) -> None:
        name = self.renames.get(ins.argval, ins.argval)
        self.invalidate(stack, name)
        self.flush(stack)
        self.emit(f"del {name}")

    def op_LOAD_FAST_AND_CLEAR(self, ins: dis.Instruction, stack: list[Val]) -> None:
        """3.12+: an inlined comprehension saves its variable's outer value (restored by the
        STORE_FAST after the loop); the translation gives the variable a name of its own instead,
        so the outer one is never touched."""
        name = ins.argval
        if name in self.cells or name in self.renames:
            raise Untranslatable(
                f"a comprehension over a variable a closure or another comprehension holds (offset {ins.offset})"
            )
        self.renames[name] = self.temp()
        stack.append(Val(saved_marker(name), "pure"))

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
        self.lazy(stack, f"{as_operand(obj)}.{as_attr(ins.argval)}")
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
        self.statement(stack, f"{as_operand(function)}({arguments})")
        (proxy,) = self.take(stack, 1)
        self.lazy(stack, f"{proxy.expr}.{as_attr(ins.argval)}")
        if ins.arg and ins.arg & 1 and not _NULL_BELOW:
            stack.append(NULL)

    def op_LOAD_METHOD(self, ins: dis.Instruction, stack: list[Val]) -> None:
        """3.10 and 3.11: a method for CALL_METHOD / CALL (a NULL below it)."""
        (obj,) = self.take(stack, 1)
        stack.append(NULL)
        self.lazy(stack, f"{as_operand(obj)}.{as_attr(ins.argval)}")

    def op_STORE_ATTR(self, ins: dis.Instruction, stack: list[Val]) -> None:
        value, obj = self.take(stack, 2)
        self.statement(stack, f"{as_operand(obj)}.{as_attr(ins.argval)} = {value.expr}", push=False)

    def op_DELETE_ATTR(self, ins: dis.Instruction, stack: list[Val]) -> None:
        (obj,) = self.take(stack, 1)
        self.statement(stack, f"del {as_operand(obj)}.{as_attr(ins.argval)}", push=False)

    def op_BINARY_SUBSCR(self, ins: dis.Instruction, stack: list[Val]) -> None:
        obj, key = self.take(stack, 2)
        self.lazy(stack, f"{as_operand(obj)}[{as_key(key)}]")

    def op_BINARY_SLICE(self, ins: dis.Instruction, stack: list[Val]) -> None:
        obj, lo, hi = self.take(stack, 3)
        self.lazy(stack, f"{as_operand(obj)}[{as_bound(lo)}:{as_bound(hi)}]")

    def op_STORE_SLICE(self, ins: dis.Instruction, stack: list[Val]) -> None:
        """`obj[lo:hi] = value` (3.12+; Dynamo writes it to rebuild the stack after a graph break)."""
        value, obj, lo, hi = self.take(stack, 4)
        self.statement(
            stack, f"{as_operand(obj)}[{as_bound(lo)}:{as_bound(hi)}] = {value.expr}", push=False
        )

    def op_STORE_SUBSCR(self, ins: dis.Instruction, stack: list[Val]) -> None:
        value, obj, key = self.take(stack, 3)
        self.statement(stack, f"{as_operand(obj)}[{as_key(key)}] = {value.expr}", push=False)

    def op_DELETE_SUBSCR(self, ins: dis.Instruction, stack: list[Val]) -> None:
        obj, key = self.take(stack, 2)
        self.statement(stack, f"del {as_operand(obj)}[{as_key(key)}]", push=False)

    op_LOAD_FAST_CHECK = op_LOAD_FAST

    #: 3.14: a LOAD_FAST whose reference the frame keeps alive (borrowed): the same value
    op_LOAD_FAST_BORROW = op_LOAD_FAST

    op_LOAD_FAST_BORROW_LOAD_FAST_BORROW = op_LOAD_FAST_LOAD_FAST

    op_DELETE_DEREF = op_DELETE_FAST
