"""A function the code makes as it runs (`def` or `lambda` in a library's function), written as a `def`.

MAKE_FUNCTION takes a code constant and, by its flags, the defaults, the
keyword defaults and the closure below it (3.13 moves the flags to
SET_FUNCTION_ATTRIBUTE instructions after it). The translation writes the
inner code, itself translated (and proved by `checked` with the outer code), as a `def` on a
temporary name where the function is made, then sets what MAKE_FUNCTION
sets: its defaults, its keyword defaults, its name and qualified name
(only where the caller asks: code that runs as plain Python). Its
free variables are the outer function's variables of the same names, as
CPython's compiler closed over them (the closure tuple is checked to hold
exactly those cells, in order). Annotations are refused by name.
"""

from __future__ import annotations

import dis
import sys
import types

from .symbolic import Untranslatable, Val

#: MAKE_FUNCTION's flags (3.13: SET_FUNCTION_ATTRIBUTE's argument)
_DEFAULTS, _KWDEFAULTS, _ANNOTATIONS, _CLOSURE = 0x01, 0x02, 0x04, 0x08

#: the codes of functions over an iterator `.0`: 3.11's comprehensions (3.12 and later inline
#: them) and every generator expression
_COMPREHENSIONS = ("<listcomp>", "<setcomp>", "<dictcomp>", "<genexpr>")


class NestedFunctions:
    """`op_MAKE_FUNCTION` and 3.13's `op_SET_FUNCTION_ATTRIBUTE` for the translator."""

    def op_MAKE_FUNCTION(self, ins: dis.Instruction, stack: list[Val]) -> None:
        if not self.functions:  # type: ignore[attr-defined]
            raise Untranslatable(f"it makes a function at run time (offset {ins.offset})")
        (code_val,) = self.take(stack, 1)  # type: ignore[attr-defined]
        code = self._code_constant(code_val, ins)
        self.constants.pop(code_val.expr, None)  # type: ignore[attr-defined]  # written as a def, not bound
        if sys.version_info >= (3, 13):
            flags, attributes = self._set_attributes(ins, stack)
        else:
            flags = ins.arg or 0
            present = [f for f in (_DEFAULTS, _KWDEFAULTS, _ANNOTATIONS, _CLOSURE) if flags & f]
            values = self.take(stack, len(present))  # type: ignore[attr-defined]
            attributes = dict(zip(present, values))
        if flags & _ANNOTATIONS:
            raise Untranslatable(f"a function made with annotations (offset {ins.offset})")
        self._check_closure(code, attributes.get(_CLOSURE), ins)
        self.flush(stack)  # type: ignore[attr-defined]
        name = self._write_def(code, ins)
        if code.co_name in _COMPREHENSIONS:
            self.comprehensions[name] = code.co_name  # type: ignore[attr-defined]
        for flag, attribute in ((_DEFAULTS, "__defaults__"), (_KWDEFAULTS, "__kwdefaults__")):
            if flag in attributes:
                self.emit(f"{name}.{attribute} = {attributes[flag].expr}")  # type: ignore[attr-defined]
        stack.append(Val(name, "pure"))

    def op_SET_FUNCTION_ATTRIBUTE(self, ins: dis.Instruction, stack: list[Val]) -> None:
        """3.13: taken with the MAKE_FUNCTION before it (`_set_attributes`)."""
        if ins.offset not in self.function_attributes:  # type: ignore[attr-defined]
            raise Untranslatable(
                f"SET_FUNCTION_ATTRIBUTE after no MAKE_FUNCTION (offset {ins.offset})"
            )

    def _code_constant(self, code_val: Val, ins: dis.Instruction) -> types.CodeType:
        before = self.ins[self.at[ins.offset] - 1]  # type: ignore[attr-defined]
        code = before.argval if before.opname == "LOAD_CONST" else None
        if not isinstance(code, types.CodeType) or sys.version_info < (3, 11):
            raise Untranslatable(f"it makes a function at run time (offset {ins.offset})")
        return code  # a comprehension (3.11) or a generator expression: a def over `_iterator`

    def _set_attributes(self, ins: dis.Instruction, stack: list[Val]) -> tuple[int, dict[int, Val]]:
        """3.13: the SET_FUNCTION_ATTRIBUTE instructions right after, each taking the value below
        the function."""
        flags, attributes = 0, {}
        index = self.at[ins.offset] + 1  # type: ignore[attr-defined]
        while self.ins[index].opname == "SET_FUNCTION_ATTRIBUTE":  # type: ignore[attr-defined]
            flag = self.ins[index].arg or 0  # type: ignore[attr-defined]
            (attributes[flag],) = self.take(stack, 1)  # type: ignore[attr-defined]
            flags |= flag
            self.function_attributes.add(self.ins[index].offset)  # type: ignore[attr-defined]
            index += 1
        return flags, attributes

    def _check_closure(
        self, code: types.CodeType, closure: Val | None, ins: dis.Instruction
    ) -> None:
        """The closure must be the outer function's cells of the inner code's free variables, in
        order (a `def` closes over exactly those)."""
        cells = [f"(lambda: {name}).__closure__[0]" for name in code.co_freevars]
        expected = "(" + ", ".join(cells) + ("," if len(cells) == 1 else "") + ")"
        if (closure.expr if closure is not None else "()") != (expected if cells else "()"):
            raise Untranslatable(
                f"a function made over a closure other than its free variables' cells (offset {ins.offset})"
            )

    def _write_def(self, code: types.CodeType, ins: dis.Instruction) -> str:
        """The inner code as a proved `def` on a temporary name, named as MAKE_FUNCTION names it."""
        name = self.temp()  # type: ignore[attr-defined]
        prefix = f"{self.const_prefix}f{ins.offset}_"  # type: ignore[attr-defined]
        inner = self.inner_translation(code, name, prefix)  # type: ignore[attr-defined]
        self.constants.update(inner.constants)  # type: ignore[attr-defined]
        self.globals_read.update(inner.globals_read)  # type: ignore[attr-defined]
        for line in inner.source.rstrip("\n").splitlines():
            self.emit(line)  # type: ignore[attr-defined]
        self.emit(f"{name}.__name__, {name}.__qualname__ = {code.co_name!r}, {code.co_qualname!r}")  # type: ignore[attr-defined]
        return name
