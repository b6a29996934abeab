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

A jump out of the loop from inside it (the test's, a `break`) is a `break`.
A `continue` jumps back to the loop's start (`while True:`) or to the first
test (`while <test>:`), which a written `continue` would skip: there the
test's code is written again before it, as the jump runs it,

        <the test again>
        if not <it>: break
        continue
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
        self.continue_tests: dict[int, int] = {}  # the first test's start -> its loop's start
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
        for start in sorted(heads):
            loop = self._tested_loop(start, heads)
            if loop is not None:  # jumps to the first test are a `continue` of the loop after it
                self.continue_tests[start] = loop
                del heads[start]
        return heads

    def _tested_loop(self, start: int, heads: dict[int, int]) -> int | None:
        """The loop whose first test begins at `start`, where the jumps back to `start` are that
        loop's `continue`s: the test is plain (no jump but its last, a conditional jump to the
        loop's end, right before the loop's start) or there is none (3.11's NOP for the line of
        `while True:`), and the jumps all lie inside the loop."""
        ins = self.ins  # type: ignore[attr-defined]
        loop = next((b for b in sorted(heads) if b > start), None)
        if loop is None:
            return None
        test = ins[start:loop]
        if (
            not all(i.opname == "NOP" for i in test)
            and (
                test[-1].opname not in BREAK_IF
                or self.at.get(test[-1].argval) != heads[loop] + 1  # type: ignore[attr-defined]
                or any("JUMP" in i.opname or i.opname == "FOR_ITER" for i in test[:-1])
            )
        ):
            return None
        back_jumps = [
            j
            for j, i in enumerate(ins)
            if i.opname in _BACK and self.at.get(i.argval) == start  # type: ignore[attr-defined]
        ]
        return loop if all(loop < j <= heads[loop] for j in back_jumps) else None

    def continues_while(self, index: int) -> bool:
        """Whether the jump at `index` goes back to the innermost loop, a `while` loop, from
        inside it: to its start, or to its first test."""
        ins = self.ins[index]  # type: ignore[attr-defined]
        if not self.whiles or ins.opname not in ("JUMP_BACKWARD", "JUMP_BACKWARD_NO_INTERRUPT"):  # type: ignore[attr-defined]
            return False
        start = self.at[self.whiles[-1][0]]  # type: ignore[attr-defined]
        loops = self.loops  # type: ignore[attr-defined]
        if loops and loops[-1][0] > self.whiles[-1][0]:  # type: ignore[attr-defined]
            return False  # a for loop inside it is the innermost
        target = self.at.get(ins.argval)  # type: ignore[attr-defined]
        return target == start or self.continue_tests.get(target) == start

    def continue_while(self, index: int, stack: list[Val]) -> None:
        """`continue`, after the loop's first test written again where the jump goes to it."""
        ins = self.ins[index]  # type: ignore[attr-defined]
        _, _, depth, withs = self.whiles[-1]  # type: ignore[attr-defined]
        if len(stack) != depth or self.with_depth != withs:  # type: ignore[attr-defined]
            raise Untranslatable(
                f"a continue that leaves values or a with block (offset {ins.offset})"
            )
        self.flush(stack)  # type: ignore[attr-defined]
        target = self.at[ins.argval]  # type: ignore[attr-defined]
        if target in self.continue_tests:
            out = self._block(target, self.continue_tests[target], list(stack))  # type: ignore[attr-defined]
            if out is None or len(out) != depth:
                raise Untranslatable(
                    f"a loop's first test this translator cannot repeat (offset {ins.offset})"
                )
            self.flush(out)  # type: ignore[attr-defined]
        self.emit("continue")  # type: ignore[attr-defined]

    def _while(self, i: int, stop: int, stack: list[Val]) -> list[Val] | None:
        back = self.whiles_at[i]  # type: ignore[attr-defined]
        if back >= stop:
            raise Untranslatable(
                f"a while loop that ends out of its block (offset {self.ins[i].offset})"  # type: ignore[attr-defined]
            )
        self.flush(stack)  # type: ignore[attr-defined]
        before = [v.expr for v in stack]
        self.emit("while True:")  # type: ignore[attr-defined]
        self.whiles.append((self.ins[i].offset, back + 1, len(stack), self.with_depth))  # type: ignore[attr-defined]
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
        if back + 1 == len(self.ins):  # type: ignore[attr-defined]
            return (
                None  # nothing after it to break to: every way out returns (3.12+ copies them in)
            )
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
