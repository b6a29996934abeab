"""`try`/`except` statements and `with` blocks from the exception table (CPython 3.11 to 3.13).

From 3.11 on a `try` leaves no instruction of its own: the exception table
says which instructions a handler covers. A `try` body is a range the table
sends to a handler that starts with PUSH_EXC_INFO; the handler tests each
`except` clause in turn (the exception's class loaded, CHECK_EXC_MATCH, a
jump to the next clause), binds it (`as name`) or drops it, runs the
clause's body, leaves with POP_EXCEPT (a named clause then unbinds the name)
and goes on: to where the statement ends, back to the loop it is in
(the statement is the loop body's last), or on its own to a return (3.12 and
later copy a short ending into each way out). RERAISE 0 ends the clauses
(nothing matched), `COPY 3; POP_EXCEPT; RERAISE 1` cleans up after a clause
that raised. The instructions after the body that the table does not cover
run only when the body raised nothing: the statement's `else`.

What is structured: `except <names>[ as name]:` clauses over builtin
exception classes (the equivalence proof raises them, `equivalence.py`) and
bare `except:`, each clause body left by one POP_EXCEPT; and `with` blocks
(BEFORE_WITH leaves `__exit__` under the value of `__enter__`; the body ends
by calling `__exit__(None, None, None)`; the handler, WITH_EXCEPT_START,
asks `__exit__` whether to suppress), whose body ends where it began.
A handler that runs straight-line code over the exception and raises it
again (RERAISE 0) is `except BaseException: <code>; raise`: a `finally`
block's copy for an exception (the body's way on runs the other copy, as
`else:`), and what Dynamo writes around a call it runs inside a context
manager after a graph break (`__enter__()`; the call in a try whose handler
calls `__exit__(None, None, None)` and raises again; the values under the
call's own on the stack are not the handler's). Anything else with a
handler (a `finally` block with a branch or a loop in it, `except*`, a `try`
inside a `try` or inside a clause, an exception class of a module, a
`return` out of a `with`) raises `Untranslatable` naming it.
"""

from __future__ import annotations

import builtins
import dis
import sys
from dataclasses import dataclass

from .symbolic import Untranslatable, Val

_JUMP_IF_FALSE = ("POP_JUMP_FORWARD_IF_FALSE", "POP_JUMP_IF_FALSE")
_FORWARD = ("JUMP_FORWARD", "JUMP")
_BACKWARD = ("JUMP_BACKWARD", "JUMP_BACKWARD_NO_INTERRUPT")
#: what a named clause does after POP_EXCEPT: `name = None; del name`
_UNBIND = ("LOAD_CONST", "STORE_FAST", "DELETE_FAST")


#: the exception PUSH_EXC_INFO saves under the one raised, as the clause's stack holds it
EXC_INFO = Val("<the saved exception>", "pure")
#: the exception raised, on top of the saved one while a handler that raises it again runs
RAISED = Val("<the exception raised>", "pure")
#: what a handler that only runs code and raises again does not do
_HANDLER_FLOW = (
    "CHECK_EXC_MATCH",
    "CHECK_EG_MATCH",
    "WITH_EXCEPT_START",
    "POP_EXCEPT",
    "PUSH_EXC_INFO",
    "RAISE_VARARGS",
)


@dataclass(frozen=True)
class Entry:
    """One row of the exception table, as instruction indices."""

    start: int
    end: int
    target: int
    depth: int
    lasti: bool


@dataclass
class Clause:
    """One `except` clause: its test, the name it binds, its body's range and where it goes after."""

    test: str | None  # None: a bare `except:`
    name: str | None
    body: tuple[int, int]
    #: ("merge", index) to where the statement ends, ("loop", 0) back to its loop, ("end", index)
    #: on to a return from `index`, ("raise", index) the exception raised again by RERAISE there
    leaves: tuple[str, int]


def exception_table(code, at: dict[int, int]) -> list[Entry]:
    """The code's exception table (empty before 3.11)."""
    if not getattr(code, "co_exceptiontable", b""):
        return []
    if not (3, 11) <= sys.version_info < (3, 14):
        raise Untranslatable(
            "it has an exception table (a try, with or finally block), which this translator "
            "structures on Python 3.11 to 3.13 only"
        )
    rows = dis._parse_exception_table(code)  # type: ignore[attr-defined]
    end_of_code = len(at)
    return [
        Entry(at[r.start], at.get(r.end, end_of_code), at[r.target], r.depth, r.lasti) for r in rows
    ]


def builtin_exception(name: str) -> bool:
    """Whether `name` is a builtin exception class (the proof raises those for real)."""
    value = getattr(builtins, name, None)
    return isinstance(value, type) and issubclass(value, BaseException)


#: what CPython leaves out of a try body's rows, since it cannot raise: a `continue`'s or a
#: `break`'s jump, and the iterator a `break` drops
_CANNOT_RAISE = (
    "JUMP_BACKWARD",
    "JUMP_FORWARD",
    "JUMP",
    "JUMP_NO_INTERRUPT",
    "EXTENDED_ARG",
    "POP_TOP",
    "NOP",
)


class Handlers:
    """`try` statements for the translator (`bytecode._Translator`): `_try` at a body's start."""

    def try_statements(self) -> list[Entry]:
        """Each `try` as one row: its body from its first row's start to its last row's end (a
        `with` block inside the body splits the body's rows around its own handler, and a
        `continue` or `break` around its jump, which cannot raise)."""
        bodies: dict[int, list[Entry]] = {}
        for entry in self.table:  # type: ignore[attr-defined]
            if not entry.lasti and self.ins[entry.target].opname == "PUSH_EXC_INFO":  # type: ignore[attr-defined]
                bodies.setdefault(entry.target, []).append(entry)  # (else a comprehension's)
        tries = []
        for target, rows in bodies.items():
            rows.sort(key=lambda e: e.start)
            body = rows[0]
            for after in rows[1:]:
                gap = range(body.end, after.start)
                if after.depth == body.depth and all(
                    self._row_at(j) is not None or self.ins[j].opname in _CANNOT_RAISE  # type: ignore[attr-defined]
                    for j in gap
                ):
                    body = Entry(body.start, after.end, target, body.depth, False)
                elif not self._in_with_handler(after.start, body):
                    raise Untranslatable(
                        f"a try body in pieces (offset {self.ins[body.end].offset})"  # type: ignore[attr-defined]
                    )
            tries.append(body)
        return tries

    def _in_with_handler(self, index: int, body: Entry) -> bool:
        """Whether `index` lies past the handler of a `with` block in `body` (3.12 and later put
        that handler after the code; the try covers it, since the handler itself may raise)."""
        handlers = [
            e.target
            for e in self.table  # type: ignore[attr-defined]
            if e.lasti
            and body.start <= e.start < body.end
            and self.ins[e.target].opname == "PUSH_EXC_INFO"  # type: ignore[attr-defined]
        ]
        return any(index >= h for h in handlers)

    def _row_at(self, index: int) -> Entry | None:
        return next((e for e in self.table if e.start <= index < e.end), None)  # type: ignore[attr-defined]

    def try_at(self, index: int) -> Entry | None:
        """The `try` whose body starts at `index`, where one does."""
        for entry in self.tries:  # type: ignore[attr-defined]
            if entry.start == index and entry not in self.entered:
                return entry
        return None

    def _try(self, i: int, stop: int, stack: list[Val]) -> list[Val] | None:
        entry = self.try_at(i)
        assert entry is not None
        others = [
            e
            for e in self.tries  # type: ignore[attr-defined]
            if e is not entry and entry.start <= e.start < entry.end
        ]
        if others:
            raise Untranslatable(f"a try inside a try (offset {self.ins[i].offset})")
        clauses = self._clauses(entry)
        reraises = all(c.leaves[0] == "raise" for c in clauses)
        # a handler that only raises again never goes on: the values under the body's own (the
        # call Dynamo wraps in a context manager's enter and exit) are not its business
        if entry.depth != len(stack) and not (reraises and entry.depth < len(stack)):
            raise Untranslatable(
                f"a try block entered with a value on the stack (offset {self.ins[i].offset})"
            )
        self.flush(stack)
        before = [v.expr for v in stack[: entry.depth]]
        self.emit("try:")
        self.entered.add(entry)  # its body, translated next, starts where it does
        out, lines = self._branch(entry.start, entry.end, list(stack))
        if out is not None and [v.expr for v in out[: len(before)]] != before:
            raise Untranslatable(
                f"a try body that does not end where it began (offset {self.ins[i].offset})"
            )
        self.lines.extend(lines or ["    " * (self.indent + 1) + "pass"])
        merges = {c.leaves for c in clauses if c.leaves[0] not in ("end", "raise")}
        if len(merges) > 1:
            raise Untranslatable(
                f"except clauses that go on to different places (offset {self.ins[i].offset})"
            )
        merge = next(iter(merges), None)
        for clause in clauses:
            self._clause(clause, stack[: entry.depth])
        if out is None:  # the body returned or raised: nothing runs after it but the handler
            return (
                None if merge is None else self._block(self._merge_index(merge, stop), stop, stack)
            )
        return self._else(entry, merge, stop, out, len(stack))

    def _merge_index(self, merge: tuple[str, int], stop: int) -> int:
        return stop if merge[0] == "loop" else merge[1]

    def _clauses(self, entry: Entry) -> list[Clause]:
        """The handler's clauses, read from PUSH_EXC_INFO to the RERAISE 0 that ends them."""
        handler = entry.target
        if self.ins[handler].opname != "PUSH_EXC_INFO":
            raise Untranslatable(
                f"a handler that does not start with PUSH_EXC_INFO (offset {self.ins[handler].offset})"
            )
        reraise = self._reraise_at(handler)
        if reraise is not None:  # `except BaseException: <cleanup>; raise`
            return [Clause("BaseException", None, (handler + 1, reraise), ("raise", reraise))]
        self._refuse_finally_and_with(handler)
        clauses: list[Clause] = []
        i = handler + 1
        while True:
            op = self.ins[i].opname
            if op == "RERAISE" and clauses:  # no clause matched: the exception goes on
                return clauses
            if op == "POP_TOP":  # a bare `except:`, last: it takes every exception
                clause, _ = self._clause_body(None, None, i + 1, len(self.ins))
                return [*clauses, clause]
            clause, i = self._matching_clause(i)
            clauses.append(clause)

    def _reraise_at(self, handler: int) -> int | None:
        """The RERAISE 0 of a handler that runs straight-line code over the exception and raises it
        again: a `finally` block's copy for an exception, or what Dynamo writes around a call it
        runs inside a context manager (`__exit__(None, None, None)`, then RERAISE); None for a
        handler that tests, binds, jumps or is a `with` block's."""
        for j in range(handler + 1, len(self.ins)):
            ins = self.ins[j]
            if ins.opname == "RERAISE":
                return j if ins.arg == 0 and self._row_at(j) is not None else None
            if (
                ins.opname in _HANDLER_FLOW
                or "JUMP" in ins.opname
                or ins.opname in ("RETURN_VALUE", "RETURN_CONST")
                or self.try_at(j) is not None
            ):
                return None
        return None

    def _refuse_finally_and_with(self, handler: int) -> None:
        """A `with` block's handler calls `__exit__` (WITH_EXCEPT_START); a `finally` block's runs
        its body for every exception, testing none: one of straight-line code is a clause that
        raises again (`_reraise_at`, tried first), one with a branch or a loop is refused here."""
        where = self.ins[handler].offset
        ops = []
        for ins in self.ins[handler + 1 :]:
            if ins.opname in ("RERAISE", "POP_EXCEPT"):
                break
            ops.append(ins.opname)
        if "WITH_EXCEPT_START" in ops:
            raise Untranslatable(f"a with block's handler (offset {where})")
        if "CHECK_EXC_MATCH" not in ops and ops[:1] != ["POP_TOP"]:
            raise Untranslatable(f"a finally block's handler (offset {where})")
        if "CHECK_EG_MATCH" in ops:
            raise Untranslatable(f"an except* clause's handler (offset {where})")

    def _matching_clause(self, i: int) -> tuple[Clause, int]:
        """`except <test>[ as name]:` from the class loads at `i`; the index of the next clause."""
        start = i
        names = []
        while self.ins[i].opname in ("LOAD_GLOBAL", "LOAD_NAME", "BUILD_TUPLE"):
            if self.ins[i].opname != "BUILD_TUPLE":
                names.append(self.ins[i].argval)
            i += 1
        match, jump, bind = self.ins[i : i + 3]
        if (
            match.opname != "CHECK_EXC_MATCH"
            or jump.opname not in _JUMP_IF_FALSE
            or not names
            or not all(builtin_exception(n) for n in names)
        ):
            raise Untranslatable(
                "an except clause this translator cannot structure: only builtin exception "
                f"classes are (offset {self.ins[start].offset})"
            )
        if len(names) > 1 and self.ins[i - 1].opname != "BUILD_TUPLE":
            raise Untranslatable(f"an except clause's test (offset {self.ins[start].offset})")
        test = names[0] if len(names) == 1 else "(" + ", ".join(names) + ")"
        following = self.at[jump.argval]
        if bind.opname == "POP_TOP":
            name = None
        elif bind.opname == "STORE_FAST":
            name = bind.argval
        else:
            raise Untranslatable(
                f"an except clause that binds its exception with {bind.opname} (offset {bind.offset})"
            )
        clause, _ = self._clause_body(test, name, i + 3, following)
        for name_read in names:
            self.globals_read.add(name_read)  # type: ignore[attr-defined]
        return clause, following

    def _clause_body(
        self, test: str | None, name: str | None, start: int, limit: int
    ) -> tuple[Clause, int]:
        """The clause's body: up to its one POP_EXCEPT (and a named clause's unbinding), then where
        it goes."""
        exits = [j for j in range(start, limit) if self.ins[j].opname == "POP_EXCEPT"]
        if not exits:
            raise Untranslatable(
                f"an except clause that leaves other than by POP_EXCEPT (offset {self.ins[start].offset})"
            )
        leave = exits[0]
        if any(self.try_at(j) is not None for j in range(start, leave)):
            raise Untranslatable(f"a try inside an except clause (offset {self.ins[start].offset})")
        after = leave + 1
        if name is not None:
            unbind = [ins.opname for ins in self.ins[after : after + 3]]
            if unbind != list(_UNBIND) or self.ins[after + 1].argval != name:
                raise Untranslatable(
                    f"a named except clause that does not unbind its name (offset {self.ins[after].offset})"
                )
            after += 3
        return Clause(test, name, (start, leave), self._leaves(after)), after

    def _leaves(self, index: int) -> tuple[str, int]:
        """Where a clause goes after POP_EXCEPT: on to the statement's end (a jump there, forward, or
        back where 3.12 and later put the handler after it), back to its loop, or a return."""
        while self.ins[index].opname == "EXTENDED_ARG":  # a long jump's prefix
            index += 1
        ins = self.ins[index]
        loop = self.loops[-1] if self.loops else None  # type: ignore[attr-defined]
        if ins.opname in _BACKWARD and loop is not None and ins.argval == loop[0]:
            return ("loop", 0)
        if ins.opname in _FORWARD + _BACKWARD:
            return ("merge", self.at[ins.argval])
        return ("end", index)

    def _clause(self, clause: Clause, stack: list[Val]) -> None:
        """The clause's lines; its body runs over the handler's saved exception (`EXC_INFO`, which
        POP_EXCEPT drops: a value the clause returns is swapped under it)."""
        if clause.leaves[0] == "raise":
            return self._reraise_clause(clause, stack)
        head = "except" if clause.test is None else f"except {clause.test}"
        self.emit(head + (f" as {clause.name}:" if clause.name else ":"))
        out, lines = self._branch(*clause.body, [*stack, EXC_INFO])
        if out is not None:
            if not out or out[-1] is not EXC_INFO:
                raise Untranslatable(
                    f"an except clause that leaves values over the saved exception (offset {self.ins[clause.body[0]].offset})"
                )
            out = out[:-1]
        if out is not None and clause.leaves[0] == "end":
            self._check_returns(clause.leaves[1])
            mark, self.indent = len(self.lines), self.indent + 1
            self.lines.extend(lines)
            end = self._block(clause.leaves[1], len(self.ins), out)
            self.indent -= 1
            if end is not None:
                raise Untranslatable(
                    f"an except clause that falls off the code's end (offset {self.ins[clause.leaves[1]].offset})"
                )
            lines = self.lines[mark:]
            del self.lines[mark:]
        elif out is not None and [v.expr for v in out] != [v.expr for v in stack]:
            raise Untranslatable(
                f"an except clause that changes the stack (offset {self.ins[clause.body[0]].offset})"
            )
        self.lines.extend(lines or ["    " * (self.indent + 1) + "pass"])

    def _reraise_clause(self, clause: Clause, stack: list[Val]) -> None:
        """`except BaseException:`, the handler's code over the exception it raises again, `raise`
        (CPython's cleanup of a handler that raised, COPY 3; POP_EXCEPT; RERAISE 1, is Python's own
        for an exception raised in an except clause)."""
        self.emit("except BaseException:")
        held = [*stack, EXC_INFO, RAISED]
        out, lines = self._branch(*clause.body, list(held))
        if out is None or [v.expr for v in out] != [v.expr for v in held]:
            raise Untranslatable(
                f"a handler that raises again over other values (offset {self.ins[clause.body[0]].offset})"
            )
        self.lines.extend([*lines, "    " * (self.indent + 1) + "raise"])
        return None

    def _check_returns(self, index: int) -> None:
        """A clause that goes on by itself runs a copy of the code's ending: it must return."""
        for ins in self.ins[index:]:
            if ins.opname in ("RETURN_VALUE", "RETURN_CONST"):
                return
            if "JUMP" in ins.opname or ins.opname in ("RERAISE", "RAISE_VARARGS"):
                break
        raise Untranslatable(
            f"an except clause that goes on other than by a jump or a return (offset {self.ins[index].offset})"
        )

    def _else(
        self,
        entry: Entry,
        merge: tuple[str, int] | None,
        stop: int,
        stack: list[Val],
        depth: int,
    ) -> list[Val] | None:
        """The body's way on when it raised nothing (`else:`), then the code after the statement;
        `stack` as the body left it (a value it computed for a `return` on top), `depth` as it began."""
        start, handler = entry.end, entry.target
        where = self.ins[start].offset
        over = self._jump_over_handler(start, handler, stop)
        if merge is not None and merge[0] == "loop":
            if not self.loops or stop != self.loops[-1][1] or over not in (None, "loop", "return"):  # type: ignore[attr-defined]
                raise Untranslatable(
                    f"an except clause that continues its loop early (offset {where})"
                )
            end = stop
        elif merge is not None:
            end = merge[1]
            if over not in (None, "return", end):
                raise Untranslatable(f"a try whose body and handler go on apart (offset {where})")
        else:
            end = over if isinstance(over, int) else stop
        if end > stop:
            raise Untranslatable(f"a try statement that goes on out of its block (offset {where})")
        if over is None:
            end_of_else = end
        else:
            end_of_else = handler if over == "return" else handler - 1
        out, lines = self._branch(start, end_of_else, list(stack))  # type: ignore[attr-defined]
        if lines:
            self.emit("else:")  # type: ignore[attr-defined]
            self.lines.extend(lines)  # type: ignore[attr-defined]
        if merge is not None and merge[0] == "merge":
            if out is not None and [v.expr for v in out] != [v.expr for v in stack[:depth]]:
                raise Untranslatable(
                    f"a try whose body and handler leave different stacks (offset {where})"
                )
            return self._block(end, stop, list(stack[:depth]))  # type: ignore[attr-defined]
        return None if out is None else self._block(end, stop, out)  # type: ignore[attr-defined]

    def _jump_over_handler(self, start: int, handler: int, stop: int) -> int | str | None:
        """Where the body's way on jumps over a handler placed right after it (3.11): the index it
        jumps to, "loop" (back to the loop's head), "return" (it returns instead); None where the
        handler is not there (3.12 and later put it at the code's end)."""
        if not start < handler <= stop:
            return None
        jump = self.ins[handler - 1]
        if jump.opname in _FORWARD and jump.argval > jump.offset:
            return self.at[jump.argval]
        loop = self.loops[-1] if self.loops else None  # type: ignore[attr-defined]
        if jump.opname in _BACKWARD and loop is not None and jump.argval == loop[0]:
            return "loop"
        if jump.opname in ("RETURN_VALUE", "RETURN_CONST"):
            return "return"
        return None  # other handlers' code ends there (3.12 and later): the handler is elsewhere


#: the `__exit__` BEFORE_WITH leaves under a `with` block's body, as the body's stack holds it
WITH_EXIT = Val("<the with block's __exit__>", "pure")
#: what a `with` block does when its body ends: `__exit__(None, None, None)`, its result dropped
_NORMAL_EXIT = ("LOAD_CONST", "LOAD_CONST", "LOAD_CONST", "CALL", "POP_TOP")


class WithBlocks:
    """`with <context>[ as <name>]:` from BEFORE_WITH and its handler (3.11 to 3.13)."""

    def _with(self, i: int, stop: int, stack: list[Val]) -> list[Val] | None:
        where = self.ins[i].offset  # type: ignore[attr-defined]
        entry = next(
            (e for e in self.table if e.lasti and e.start == i + 1),  # type: ignore[attr-defined]
            None,
        )
        handler = entry.target if entry is not None else None
        if (
            entry is None
            or [ins.opname for ins in self.ins[handler : handler + 2]]  # type: ignore[attr-defined]
            != ["PUSH_EXC_INFO", "WITH_EXCEPT_START"]
        ):
            raise Untranslatable(f"a with block without its handler (offset {where})")
        (context,) = self.take(stack, 1)  # type: ignore[attr-defined]
        self.flush(stack)  # type: ignore[attr-defined]
        target = self.ins[i + 1]  # type: ignore[attr-defined]
        if target.opname == "STORE_FAST":
            head = f"with {context.expr} as {target.argval}:"
        elif target.opname == "POP_TOP":
            head = f"with {context.expr}:"
        else:
            raise Untranslatable(
                f"a with block's target stored by {target.opname} (offset {where})"
            )
        if entry.depth != len(stack) + 1:
            raise Untranslatable(f"a with block entered with values on the stack (offset {where})")
        self.emit(head)  # type: ignore[attr-defined]
        body = [*stack, WITH_EXIT]
        self.with_depth += 1  # type: ignore[attr-defined]
        out, lines = self._branch(i + 2, entry.end, body)  # type: ignore[attr-defined]
        self.with_depth -= 1  # type: ignore[attr-defined]
        if out is None or [v.expr for v in out] != [v.expr for v in body]:
            raise Untranslatable(
                f"a with block whose body returns, raises or jumps out (offset {where})"
            )
        self.lines.extend(lines or ["    " * (self.indent + 1) + "pass"])  # type: ignore[attr-defined]
        after = self._normal_exit(entry.end)
        return self._block(after, stop, stack)  # type: ignore[attr-defined]

    def with_handler_code(self) -> set[int]:
        """The instructions of every `with` block's handler: PUSH_EXC_INFO, WITH_EXCEPT_START and
        the test of its result, the path that suppresses the exception (and its jump on, where
        3.12 and later put the handler after the code), the cleanup."""
        code: set[int] = set()
        for entry in self.table:  # type: ignore[attr-defined]
            handler = entry.target
            if not entry.lasti or self.ins[handler + 1].opname != "WITH_EXCEPT_START":  # type: ignore[attr-defined]
                continue
            jump = next(
                j
                for j in range(handler, len(self.ins))  # type: ignore[attr-defined]
                if self.ins[j].opname.startswith("POP_JUMP")  # type: ignore[attr-defined]
            )
            suppress = self.at[self.ins[jump].argval]  # type: ignore[attr-defined]
            end = suppress + 4  # POP_TOP, POP_EXCEPT, POP_TOP, POP_TOP
            if sys.version_info >= (3, 12) and "JUMP" in self.ins[end].opname:  # type: ignore[attr-defined]
                end += 1  # 3.11 falls through into the code after the block instead
            code.update(range(handler, end))
            cleanup = next(
                (e.target for e in self.table if e.lasti and e.start == handler),  # type: ignore[attr-defined]
                None,
            )
            if cleanup is not None:
                code.update(range(cleanup, cleanup + 3))
        return code

    def _normal_exit(self, index: int) -> int:
        """The index after the body's own `__exit__(None, None, None)` (3.11's PRECALL skipped)."""
        names = [ins.opname for ins in self.ins[index : index + 6] if ins.opname != "PRECALL"]  # type: ignore[attr-defined]
        if tuple(names[:5]) != _NORMAL_EXIT:
            raise Untranslatable(
                f"a with block that does not end by calling __exit__ (offset {self.ins[index].offset})"  # type: ignore[attr-defined]
            )
        count = 6 if self.ins[index + 3].opname == "PRECALL" else 5  # type: ignore[attr-defined]
        return index + count
