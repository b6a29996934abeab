"""`while` loops (CPython 3.11 to 3.13), written as `while True:` with the exits as `break`.

CPython compiles `while <test>: <body>` as the test, jumping past the loop
when it fails, then the body, then the test again, whose success jumps back
to the body's start (3.11's POP_JUMP_BACKWARD_IF_TRUE; 3.12 and later a
forward jump out and a JUMP_BACKWARD). The translation keeps that shape
rather than guessing that both tests are the same: the first test is an
ordinary `if` around the loop, and the loop is

    while True:
        <body>
        <the test again>
        if not <it>: break

A jump out of the loop from inside it (the test's, a `break`) is a `break`;
a jump back to its start from elsewhere than its end (a `continue`) is
refused by name.
"""

from __future__ import annotations

import dis
import sys

from .symbolic import Untranslatable, Val

#: the jumps back from a loop's end, by the condition that ends the loop instead (3.11)
_BACK_IF = {
    "POP_JUMP_BACKWARD_IF_TRUE": "not ({})",
    "POP_JUMP_BACKWARD_IF_FALSE": "{}",
    "POP_JUMP_BACKWARD_IF_NONE": "({}) is not None",
    "POP_JUMP_BACKWARD_IF_NOT_NONE": "({}) is None",
}
_BACK = ("JUMP_BACKWARD", "JUMP_BACKWARD_NO_INTERRUPT", *_BACK_IF)
#: a forward conditional jump out of the loop, by the condition that breaks
BREAK_IF = {
    "POP_JUMP_FORWARD_IF_FALSE": "not ({})",
    "POP_JUMP_IF_FALSE": "not ({})",
    "POP_JUMP_FORWARD_IF_TRUE": "{}",
    "POP_JUMP_IF_TRUE": "{}",
    "POP_JUMP_FORWARD_IF_NONE": "({}) is None",
    "POP_JUMP_IF_NONE": "({}) is None",
    "POP_JUMP_FORWARD_IF_NOT_NONE": "({}) is not None",
    "POP_JUMP_IF_NOT_NONE": "({}) is not None",
}


class WhileLoops:
    """`_while` at a loop's start, `_break` at a jump out of it, for the translator."""

    def while_heads(self) -> dict[int, int]:
        """Each `while` loop's first instruction -> its jump back (the last one to it); none outside
        3.11 to 3.13 (a `while` is refused there, at its jump back)."""
        heads: dict[int, int] = {}
        if not (3, 11) <= sys.version_info < (3, 14):  # 3.10's and 3.14's jumps: not checked yet
            return heads
        for index, ins in enumerate(self.ins):  # type: ignore[attr-defined]
            if ins.opname not in _BACK or index in self.handler_code:  # type: ignore[attr-defined]
                continue
            start = self.at[ins.argval]  # type: ignore[attr-defined]
            first = start
            while self.ins[first].opname == "EXTENDED_ARG":  # type: ignore[attr-defined]
                first += 1  # a long jump's prefix: the loop starts with the instruction after
            if self.ins[first].opname != "FOR_ITER":  # type: ignore[attr-defined]
                heads[start] = max(heads.get(start, index), index)
        return heads

    def _while(self, i: int, stop: int, stack: list[Val]) -> list[Val] | None:
        back = self.whiles_at[i]  # type: ignore[attr-defined]
        if back >= stop:
            raise Untranslatable(
                f"a while loop that ends out of its block (offset {self.ins[i].offset})"  # type: ignore[attr-defined]
            )
        self.flush(stack)  # type: ignore[attr-defined]
        before = [v.expr for v in stack]
        self.emit("while True:")  # type: ignore[attr-defined]
        self.whiles.append((self.ins[i].offset, back + 1, len(stack)))  # type: ignore[attr-defined]
        mark, self.indent = len(self.lines), self.indent + 1  # type: ignore[attr-defined]
        out = self._block(i, back, list(stack))  # type: ignore[attr-defined]
        if out is not None:
            self._loop_back(self.ins[back], out)  # type: ignore[attr-defined]
        self.indent -= 1  # type: ignore[attr-defined]
        self.whiles.pop()  # type: ignore[attr-defined]
        if out is not None and [v.expr for v in out] != before:
            raise Untranslatable(
                f"a while loop body that changes the stack (offset {self.ins[i].offset})"  # type: ignore[attr-defined]
            )
        if len(self.lines) == mark:  # type: ignore[attr-defined]
            self.emit("    pass")  # type: ignore[attr-defined]
        return self._block(back + 1, stop, stack)  # type: ignore[attr-defined]

    def _loop_back(self, ins: dis.Instruction, stack: list[Val]) -> None:
        """The loop's last instruction: back to the start, or (3.11) back only when its test holds."""
        if ins.opname in _BACK_IF:
            (cond,) = self.take(stack, 1)  # type: ignore[attr-defined]
            self.flush(stack)  # type: ignore[attr-defined]
            self.emit(f"if {_BACK_IF[ins.opname].format(cond.expr)}:")  # type: ignore[attr-defined]
            self.emit("    break")  # type: ignore[attr-defined]
        self.flush(stack)  # type: ignore[attr-defined]

    def breaks(self, ins: dis.Instruction) -> bool:
        """Whether the jump leaves the innermost `while` loop (to its end)."""
        if not self.whiles or not ("JUMP" in ins.opname and ins.argval > ins.offset):  # type: ignore[attr-defined]
            return False
        return self.at.get(ins.argval) == self.whiles[-1][1]  # type: ignore[attr-defined]

    def _break(self, ins: dis.Instruction, stack: list[Val]) -> bool:
        """`break`, or `if <test>: break`; whether the block goes on after it."""
        depth = self.whiles[-1][2] + (ins.opname in BREAK_IF)  # type: ignore[attr-defined]
        if len(stack) != depth:
            raise Untranslatable(
                f"a jump out of a while loop that leaves values (offset {ins.offset})"
            )
        if ins.opname in BREAK_IF:
            (cond,) = self.take(stack, 1)  # type: ignore[attr-defined]
            self.flush(stack)  # type: ignore[attr-defined]
            self.emit(f"if {BREAK_IF[ins.opname].format(cond.expr)}:")  # type: ignore[attr-defined]
            self.emit("    break")  # type: ignore[attr-defined]
            return True
        if ins.opname in ("JUMP_FORWARD", "JUMP"):
            self.flush(stack)  # type: ignore[attr-defined]
            self.emit("break")  # type: ignore[attr-defined]
            return False
        raise Untranslatable(f"a jump out of a while loop by {ins.opname} (offset {ins.offset})")
