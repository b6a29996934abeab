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
conditional jumps as `if`/`else`, `for` loops, `try`/`except` and `with`
from the exception table (`handlers.py`), `while` loops (`whiles.py`), and a
function made as the code runs as a `def` (`nested.py`); anything else
(`finally` blocks, unknown instructions) raises
`Untranslatable` naming the instruction, never a guess.

Constants without a literal form (a `torch.device` in `co_consts`) become
names `__const_<i>` whose values the caller binds. Each Python from 3.10 to
3.14 has instructions of its own (the handlers say which, in `instructions.py` and the
layers below it); the same
source reads the same from 3.11 on.
"""

from __future__ import annotations

import dis
import sys
import types

from ...emit.values import literal
from .handlers import Handlers, WithBlocks, exception_table
from .instructions import Instructions
from .nested import NestedFunctions
from .symbolic import NULL, Translation, Untranslatable, Val
from .whiles import WhileLoops

__all__ = ["NULL", "Translation", "Untranslatable", "literal", "translate"]

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

#: jumps that go forward (3.10 writes JUMP_ABSOLUTE either way; dis gives its target as an offset).
_FORWARD_JUMPS = ("JUMP_FORWARD", "JUMP", "JUMP_ABSOLUTE")

#: jumps back, to a `for` loop's FOR_ITER from inside its body a `continue`
_BACKWARD_JUMPS = ("JUMP_BACKWARD", "JUMP_BACKWARD_NO_INTERRUPT", "JUMP_ABSOLUTE")
#: 3.11's conditional jumps back, by the condition under which they jump (`if <it>: continue`)
_CONTINUE_IF = {
    "POP_JUMP_BACKWARD_IF_TRUE": "{}",
    "POP_JUMP_BACKWARD_IF_FALSE": "not ({})",
    "POP_JUMP_BACKWARD_IF_NONE": "({}) is None",
    "POP_JUMP_BACKWARD_IF_NOT_NONE": "({}) is not None",
}

#: up to 3.11, `a and b` / `a or b` as a value: jump keeping the value, or drop it and go on.
_OR_POP = {"JUMP_IF_FALSE_OR_POP": "POP_JUMP_IF_FALSE", "JUMP_IF_TRUE_OR_POP": "POP_JUMP_IF_TRUE"}

_CO_VARARGS, _CO_VARKEYWORDS = 0x04, 0x08

#: the name the translation gives the iterator `.0` of 3.11's comprehension or a generator expression
_ITERATOR = "_iterator"


def translate(
    code: types.CodeType,
    name: str | None = None,
    const_prefix: str = "__const_",
    functions: bool = False,
) -> Translation:
    """`def <name>(<the code's parameters>): ...` with the code's behaviour, or Untranslatable.

    Non-literal constants are named `<const_prefix><index in co_consts>`. `functions`: a
    function the code makes is written as a `def` of its code translated in turn, for code that
    runs as plain Python (a library's, a resume function Dynamo skipped); Dynamo's transformed
    code makes resume functions and the user's closures, whose code objects later guards compare,
    so there it is refused.
    """
    translator = _Translator(code, const_prefix, functions)
    try:
        translator.run()
    except IndexError as exc:
        # the stack, as the translator models it, ran out: a shape it does not know
        raise Untranslatable(f"a stack shape this translator does not follow ({exc})") from None
    return Translation(
        translator.source(name or code.co_name),
        dict(translator.constants),
        tuple(sorted(translator.globals_read)),
        tuple(translator.inner),
    )


class _Translator(Handlers, WithBlocks, WhileLoops, NestedFunctions, Instructions):
    """Structured control flow over the instructions: blocks, `if`/`else`, `for` (3.12's inlined
    comprehensions too), `while` (`whiles.py`), `try` and `with` (`handlers.py`); a function
    made as the code runs (`nested.py`)."""

    def __init__(self, code: types.CodeType, const_prefix: str, functions: bool = False) -> None:
        super().__init__(code, const_prefix)
        self.functions = functions
        self.table = exception_table(code, self.at)
        self.tries = self.try_statements()
        self.handler_code = self._handler_code() | self.with_handler_code()
        # the enclosing for loops, innermost last: the offset their jump back goes to, the jump's
        # index, the index after the loop, the stack's depth in the body (the iterator on top)
        # and how many with blocks were open when it began
        self.loops: list[tuple[int, int, int, int, int]] = []
        self.with_depth = 0  # the with blocks open where the translation is
        # the instructions a jump skipped that nothing else reaches (the original code before a
        # resume function's resume point, then a branch only that code jumped to)
        self.dead: set[int] = set()
        self.entered: set[object] = set()  # the try statements begun (their bodies start alike)
        self.function_attributes: set[int] = set()  # 3.13's SET_FUNCTION_ATTRIBUTE, taken
        self.whiles_at = self.while_heads()
        # the enclosing while loops: their first offset, the index after them, the stack's depth,
        # and how many with blocks were open when it began
        self.whiles: list[tuple[int, int, int, int]] = []
        #: the names the functions over `.0` it makes got (3.11's comprehensions, generator
        #: expressions), and their codes' names
        self.comprehensions: dict[str, str] = {}
        if ".0" in code.co_varnames[: code.co_argcount]:  # a function over an iterator `.0`
            self.renames[".0"] = _ITERATOR

    def _restore_handler(self, start: int) -> range:
        """3.12+: the handler of an inlined comprehension (it puts its variables' outer values back,
        one STORE_FAST each, `for k, v in ...` two, and raises on), which the translation needs
        none of: each variable has a name of its own."""
        swap = self.ins[start + 2] if start + 2 < len(self.ins) else None
        count = (swap.arg or 0) - 1 if swap is not None and swap.opname == "SWAP" else 0
        names = [ins.opname for ins in self.ins[start : start + 4 + count]]
        if count < 1 or names != ["SWAP", "POP_TOP", "SWAP", *["STORE_FAST"] * count, "RERAISE"]:
            raise Untranslatable(
                f"a handler this translator does not know (offset {self.ins[start].offset})"
            )
        return range(start, start + 4 + count)

    def inner_translation(self, code: types.CodeType, name: str, prefix: str) -> Translation:
        """A function the code makes, as a def (`nested.py`); `checked` proves it with the code."""
        self.inner.append((code, name, prefix))
        return translate(code, name, prefix, functions=True)

    def _handler_code(self) -> set[int]:
        """The instructions of every handler, from PUSH_EXC_INFO to its cleanup's RERAISE, and of
        every inlined comprehension's restoring handler."""
        code: set[int] = set()
        for entry in self.table:
            if entry.lasti:
                continue
            if self.ins[entry.target].opname != "PUSH_EXC_INFO":
                code.update(self._restore_handler(entry.target))
                continue
            cleanup = next(
                (e.target for e in self.table if e.lasti and e.start == entry.target), None
            )
            if cleanup is None:
                raise Untranslatable(
                    f"a handler without a cleanup (offset {self.ins[entry.target].offset})"
                )
            code.update(range(entry.target, cleanup + 3))
        return code

    def source(self, name: str) -> str:
        header = f"def {name}({_parameters(self.code, self.renames)}):"
        body = [f"    nonlocal {', '.join(sorted(self.nonlocals))}"] if self.nonlocals else []
        unbound = sorted(
            self.closed & set(self.code.co_cellvars) - set(_parameter_names(self.code))
        )
        if unbound:  # a cell handed on before it is set must still be this function's own
            body += [
                "    if False:  # cells of the frame, unbound until set: this function's own, as in its bytecode",
                f"        {' = '.join(unbound)} = None",
            ]
        return "\n".join([header, *body, *self.lines]) + "\n"

    def run(self) -> None:
        end = self._block(0, len(self.ins), [])
        if end is not None:
            raise Untranslatable("the code falls off its end without a return")

    def _block(self, start: int, stop: int, stack: list[Val]) -> list[Val] | None:
        """Translate instructions [start, stop); the stack at `stop`, or None when every path returned or raised."""
        i = start
        while i < stop:
            ins = self.ins[i]
            op = ins.opname
            if i in self.whiles_at and not (self.whiles and self.whiles[-1][0] == ins.offset):
                return self._while(i, stop, stack)
            if self.tries and self.try_at(i) is not None:
                return self._try(i, stop, stack)
            if op == "BEFORE_WITH" and self.table:
                return self._with(i, stop, stack)
            if self.breaks(ins):
                if not self._break(ins, stack):
                    return None
                i += 1
                continue
            if self._leaves_for(i, stack):
                if not self._continue_or_break(i, stack):
                    return None
                i += 2 if op == "POP_TOP" else 1
                continue
            if self.continues_while(i):
                self.continue_while(i, stack)
                return None
            if op == "POP_TOP" and stack and stack[-1].kind == "iter":
                stack.pop()  # a loop's iterator dropped on the way out: a `return` inside the loop
                i += 1
                continue
            if op in _COND_JUMPS:
                return self._conditional(i, stop, stack)
            if op in _OR_POP:
                self.copy(stack, 1)  # `a and b` up to 3.11: the value stays where the jump goes
                return self._conditional(i, stop, stack, pop_then=True)
            if op == "FOR_ITER":
                i = self._loop(i, stack)
                continue
            if op in _FORWARD_JUMPS and ins.argval > ins.offset:
                i = self._skip(i, stop)
                continue
            if op in (
                "JUMP_FORWARD",
                "JUMP_BACKWARD",
                "JUMP_ABSOLUTE",
                "JUMP",
                "JUMP_BACKWARD_NO_INTERRUPT",
            ):
                raise Untranslatable(
                    f"a jump this translator cannot structure, such as a while loop ({op} at offset {ins.offset})"
                )
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
                and other not in self.dead  # a jump nothing reaches (in code skipped before)
                and jump.opcode in dis.hasjrel + dis.hasjabs
                and self.at.get(jump.argval, -1) in skipped
            ):
                raise Untranslatable(f"a jump into code another jump skips (offset {jump.offset})")
        self.dead.update(skipped)
        return target

    def _target(self, ins: dis.Instruction) -> int:
        target = self.at.get(ins.argval)
        if target is None or ins.argval <= ins.offset:
            raise Untranslatable(
                f"a jump this translator cannot structure ({ins.opname} at offset {ins.offset})"
            )
        return target

    def _conditional(
        self, i: int, stop: int, stack: list[Val], pop_then: bool = False
    ) -> list[Val] | None:
        """`if`/`else` from a forward conditional jump (`pop_then`: the branch that does not jump
        starts by dropping the value tested, as JUMP_IF_FALSE_OR_POP does)."""
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
        if (
            last is not None
            and last.opname in _FORWARD_JUMPS
            and last.argval > last.offset
            and not self.breaks(last)  # a `break` ends the branch; it skips no else
            and not (
                self.ins[target - 2].opname == "POP_TOP" and self._leaves_for(target - 2, None)
            )
        ):
            merge, then_stop = self._target(last), target - 1
            if merge > stop:
                raise Untranslatable(
                    f"an else branch that jumps out of its block (offset {last.offset})"
                )
        test = _COND_JUMPS[_OR_POP.get(ins.opname, ins.opname)]
        self.emit(f"if {test.format(cond.expr)}:")
        then_out, then_lines = self._branch(
            i + 1, then_stop, list(stack[:-1] if pop_then else stack)
        )
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
        while back > i and back in self.handler_code:  # 3.11 puts a try's handler inside the loop
            back -= 1
        head = self.loop_head(i)
        stop = back
        if not self._jumps_to(back, head):
            # 3.12 and later put a block that leaves the loop (a `return`) after the jump back: the
            # body runs on to the loop's end, and the jump back inside it is a `continue`
            back = next(
                (j for j in range(back - 1, i, -1) if self._jumps_to(j, head)),
                None,
            )
            if back is None or sys.version_info < (3, 12):
                raise Untranslatable(
                    f"a loop that does not end by jumping back to its FOR_ITER (offset {ins.offset})"
                )
            stop += 1
        iterator = stack[-1]
        if iterator.kind != "iter" and iterator.expr != _ITERATOR:
            raise Untranslatable(
                f"a FOR_ITER over a value GET_ITER did not make (offset {ins.offset})"
            )
        self.flush(stack)  # a comprehension's list below the iterator: one list, filled by the body
        item = self.temp()
        self.emit(f"for {item} in {iterator.expr}:")
        before = [v.expr for v in stack]
        after = self._loop_end(exit_index)
        past = self._past_else(i + 1, stop, after)
        self.loops.append((head, back, past, len(stack), self.with_depth))
        out, lines = self._branch(i + 1, stop, [*stack, Val(item, "pure")])
        self.loops.pop()
        if out is not None and [v.expr for v in out] != before:
            raise Untranslatable(f"a loop body that changes the stack (offset {ins.offset})")
        self.lines.extend(lines or ["    " * (self.indent + 1) + "pass"])
        stack.pop()  # the iterator, gone after the loop
        if past == after:
            return after
        out, lines = self._branch(after, past, list(stack))  # the loop's `else:`
        if out is None or [v.expr for v in out] != [v.expr for v in stack]:
            raise Untranslatable(f"a loop's else that changes the stack (offset {ins.offset})")
        self.emit("else:")
        self.lines.extend(lines or ["    " * (self.indent + 1) + "pass"])
        return past

    def _past_else(self, start: int, stop: int, after: int) -> int:
        """Where a `break` in the loop's body goes: past the loop's `else:` block where it has one
        (the iterator dropped, then a jump beyond the loop's end), else the loop's end. Every
        `break` must go to the same place."""
        targets = {
            self.at.get(self.ins[j + 1].argval)
            for j in range(start, stop)
            if self.ins[j].opname == "POP_TOP"
            and self.ins[j + 1].opname in _FORWARD_JUMPS
            and self.ins[j + 1].argval > self.ins[j + 1].offset
            and (self.at.get(self.ins[j + 1].argval) or 0) > after
        }
        if not targets:
            return after
        if len(targets) != 1 or None in targets:
            raise Untranslatable(
                f"breaks out of a loop to different places (offset {self.ins[start].offset})"
            )
        return targets.pop()  # type: ignore[return-value]

    def _leaves_for(self, i: int, stack: list[Val] | None) -> bool:
        """Whether the instruction at `i` continues or breaks the innermost loop, a `for` loop: a
        jump back to its FOR_ITER, or the iterator dropped (POP_TOP) before a jump past its end.
        Where the stack is known (`stack`), the iterator dropped must be the loop's."""
        if not self.loops:
            return False
        head, _, after, depth, _ = self.loops[-1]
        if self.whiles and self.whiles[-1][0] > head:  # a while loop inside it is the innermost
            return False
        ins = self.ins[i]
        if ins.opname in _BACKWARD_JUMPS or ins.opname in _CONTINUE_IF:
            return ins.argval == head
        if ins.opname == "POP_TOP" and i + 1 < len(self.ins):
            jump = self.ins[i + 1]
            known = stack is None or (len(stack) == depth and stack[-1].kind == "iter")
            return (
                known
                and jump.opname in _FORWARD_JUMPS
                and jump.argval > jump.offset
                and self.at.get(jump.argval) == after
            )
        return False

    def _continue_or_break(self, i: int, stack: list[Val]) -> bool:
        """`continue`, `if <test>: continue` or `break` for the innermost `for` loop; whether the
        block goes on after it. Out of a with block opened inside the loop it is refused: CPython
        calls `__exit__` before the jump, which a written `with` would call again."""
        ins = self.ins[i]
        _, _, _, depth, withs = self.loops[-1]
        kind = "break" if ins.opname == "POP_TOP" else "continue"
        if self.with_depth != withs:
            raise Untranslatable(f"a {kind} out of a with block (offset {ins.offset})")
        if ins.opname in _CONTINUE_IF:
            (cond,) = self.take(stack, 1)
        if len(stack) != depth:
            raise Untranslatable(f"a {kind} that leaves values on the stack (offset {ins.offset})")
        self.flush(stack)
        if ins.opname in _CONTINUE_IF:
            self.emit(f"if {_CONTINUE_IF[ins.opname].format(cond.expr)}:")
            self.emit("    continue")
            return True
        self.emit(kind)
        return False

    def _jumps_to(self, index: int, head: int) -> bool:
        """Whether the instruction at `index` jumps back to `head` unconditionally, outside handlers."""
        ins = self.ins[index]
        return (
            ins.opname in ("JUMP_BACKWARD", "JUMP_ABSOLUTE")
            and ins.argval == head
            and index not in self.handler_code
        )

    def loop_head(self, i: int) -> int:
        """The offset a jump back to the FOR_ITER at `i` goes to: its EXTENDED_ARG prefix, where a
        long loop's FOR_ITER has one."""
        while i > 0 and self.ins[i - 1].opname == "EXTENDED_ARG":
            i -= 1
        return self.ins[i].offset

    def _loop_end(self, index: int) -> int:
        """The index after a loop's own ending: 3.12's END_FOR, 3.13's END_FOR and POP_TOP, 3.14's
        END_FOR and POP_ITER (which an exhausted FOR_ITER jumps over; up to 3.11 it pops the
        iterator itself)."""
        ending = (
            ["END_FOR", "POP_ITER"]
            if sys.version_info >= (3, 14)
            else ["END_FOR", "POP_TOP"]
            if sys.version_info >= (3, 13)
            else ["END_FOR"]
        )
        names = [ins.opname for ins in self.ins[index : index + len(ending)]]
        if sys.version_info >= (3, 12) and names == ending:
            return index + len(ending)
        if sys.version_info >= (3, 12):
            raise Untranslatable(
                f"a loop that does not end with {' '.join(ending)} (offset {self.ins[index].offset})"
            )
        return index


def _parameters(code: types.CodeType, renames: dict[str, str] | None = None) -> str:
    """The parameter list of the code's function, without defaults (bound from the original at load);
    a parameter Python cannot name (3.11's comprehension's `.0`) under the name it is renamed to."""
    names = [(renames or {}).get(n, n) for n in code.co_varnames]
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


def _parameter_names(code: types.CodeType) -> list[str]:
    """Every parameter's name, `*args` and `**kwargs` included."""
    count = code.co_argcount + code.co_kwonlyargcount
    count += bool(code.co_flags & _CO_VARARGS) + bool(code.co_flags & _CO_VARKEYWORDS)
    return list(code.co_varnames[:count])
