"""Does the translated source do what the bytecode does? Both are run on recording stand-ins.

Every argument, free variable, global and builtin the code reads is replaced
by a `_Recorder` that logs each operation done to it (attribute reads, calls,
subscripts, stores, operators, iteration, truth tests, conversions to text)
and answers with a new recorder (a fresh string for a conversion to text). Both codes run on fresh stand-ins; the logs and the outcomes must
be equal. A truth test answers from a script, and the scripts are explored so
that every branch both codes can take is taken (up to `MAX_PATHS`). Iteration
yields two items. Where the code has `try` blocks, each operation done
inside one (by the exception table of the code that runs) is also made to
raise, once per run: each builtin exception class the code names and one it
does not, so that every handler path is taken too. This proves the two codes
do the same operations on the same values in the same order, which is all
the transformed code of a frame does: the values themselves (tensors,
modules) never matter to its shape.
"""

from __future__ import annotations

import builtins
import dis
import inspect
import itertools
import sys
import types
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

MAX_PATHS = 64
#: the runs a code with `try` blocks may take: each raise is a path of its own
MAX_PATHS_WITH_HANDLERS = 512
_ITEMS = 2


class _Injected(Exception):
    """The exception no clause names: raised to see that it goes on through every handler."""


class _Endless(BaseException):
    """A run past `_OPERATIONS` operations (a loop the script never ends): both runs stop alike."""


#: the truth tests answered True past a script, in a code with `while` loops; the most operations a run does
_LOOP_TURNS, _OPERATIONS = 3, 20_000


@dataclass
class _Run:
    """One execution: the operations logged, the truth-test script and the answers given; where
    the code has `try` blocks, the operations done inside one (`protected`), and the one made to
    raise (`inject`: its number and the exception's class)."""

    script: list[bool]
    log: list[tuple[object, ...]] = field(default_factory=list)
    asked: int = 0
    names: itertools.count = field(default_factory=itertools.count)
    others: dict[int, str] = field(default_factory=dict)
    kept: list[object] = field(default_factory=list)
    inject: tuple[int, type[BaseException]] | None = None
    code: types.CodeType | None = None
    covered: tuple[tuple[int, int], ...] = ()
    protected: list[int] = field(default_factory=list)
    operations: int = 0
    loops: bool = False

    def event(self, entry: tuple[object, ...]) -> None:
        """Log one operation; inside a `try` block, note it, and raise there when it is the one."""
        self.log.append(entry)
        self.operations += 1
        if self.operations > _OPERATIONS:
            raise _Endless("a run of the proof that does not end")
        if not self.covered or not self._inside_try():
            return
        self.protected.append(self.operations)
        if self.inject is not None and self.inject[0] == self.operations:
            self.log.append(("raised", self.inject[1].__name__))
            raise self.inject[1]("raised by the equivalence proof")

    def _inside_try(self) -> bool:
        frame = sys._getframe(1)
        while frame is not None and frame.f_code is not self.code:
            frame = frame.f_back
        return frame is not None and any(a <= frame.f_lasti < b for a, b in self.covered)

    def label(self, value: object) -> str | tuple[object, ...]:
        if id(value) in self.others:
            return self.others[id(value)]
        if isinstance(value, _Recorder):
            return object.__getattribute__(value, "_name")
        if isinstance(value, (int, float, str, bytes, bool, type(None))):
            return repr(value)
        if isinstance(value, (tuple, list)):
            return (type(value).__name__, *map(self.label, value))
        if isinstance(value, dict):
            return ("dict", *((self.label(k), self.label(v)) for k, v in value.items()))
        if isinstance(value, types.CellType):  # a closure's cell handed on: what it holds
            try:
                return ("cell", self.label(value.cell_contents))
            except ValueError:
                return ("cell", "<empty>")
        if isinstance(value, slice):
            return (
                "slice",
                self.label(value.start),
                self.label(value.stop),
                self.label(value.step),
            )
        if id(value) not in self.others:
            self.kept.append(value)  # alive while the run lasts: a freed object's id is reused
        return self.others.setdefault(id(value), f"<{type(value).__name__} #{len(self.others)}>")

    def new(self, event: str, *operands: object) -> _Recorder:
        result = _Recorder(self, f"v{next(self.names)}")
        self.event((event, *map(self.label, operands), self.label(result)))
        return result

    def text(self, event: str, *operands: object) -> str:
        """A conversion to text (Python insists on a str): logged, answered with a fresh one."""
        result = f"<text {next(self.names)}>"
        self.event((event, *map(self.label, operands), repr(result)))
        return result

    def truth(self, value: object) -> bool:
        """The script's answer; past it True, but in a code with `while` loops only a few times
        more (then False: each loop ends, and the paths that end it sooner are explored too)."""
        beyond = self.asked - len(self.script)
        answer = self.script[self.asked] if beyond < 0 else (not self.loops or beyond < _LOOP_TURNS)
        self.asked += 1
        self.event(("bool", self.label(value), answer))
        return answer


def _binary(name: str) -> Callable[[_Recorder, object], _Recorder]:
    def method(self: _Recorder, other: object) -> _Recorder:
        return object.__getattribute__(self, "_run").new(name, self, other)

    return method


class _Recorder:
    """A stand-in that records whatever is done to it."""

    def __init__(self, run: _Run, name: str, iterator: bool = False) -> None:
        object.__setattr__(self, "_run", run)
        object.__setattr__(self, "_name", name)
        object.__setattr__(self, "_left", _ITEMS if iterator else -1)

    def __getattr__(self, name: str) -> _Recorder:
        return object.__getattribute__(self, "_run").new("getattr", self, name)

    def __setattr__(self, name: str, value: object) -> None:
        object.__getattribute__(self, "_run").event(
            ("setattr", self._label(), name, self._label(value))
        )

    def __delattr__(self, name: str) -> None:
        object.__getattribute__(self, "_run").event(("delattr", self._label(), name))

    def _label(self, value: object = None) -> str | tuple[object, ...]:
        run = object.__getattribute__(self, "_run")
        return run.label(self if value is None else value)

    def __call__(self, *args: object, **kwargs: object) -> _Recorder:
        return object.__getattribute__(self, "_run").new(
            "call", self, args, dict(sorted(kwargs.items()))
        )

    def __getitem__(self, key: object) -> _Recorder:
        return object.__getattribute__(self, "_run").new("getitem", self, key)

    def __setitem__(self, key: object, value: object) -> None:
        object.__getattribute__(self, "_run").event(
            ("setitem", self._label(), self._label(key), self._label(value))
        )

    def __delitem__(self, key: object) -> None:
        object.__getattribute__(self, "_run").event(("delitem", self._label(), self._label(key)))

    def __bool__(self) -> bool:
        return object.__getattribute__(self, "_run").truth(self)

    def __iter__(self) -> _Recorder:
        if object.__getattribute__(self, "_left") >= 0:
            return self  # an iterator is its own iterator, as Python's protocol says
        run = object.__getattribute__(self, "_run")
        iterator = _Recorder(run, f"v{next(run.names)}", iterator=True)
        run.event(("iter", self._label(), self._label(iterator)))
        return iterator

    def __next__(self) -> _Recorder:
        left = object.__getattribute__(self, "_left")
        if left <= 0:
            raise StopIteration
        object.__setattr__(self, "_left", left - 1)
        return object.__getattribute__(self, "_run").new("next", self)

    def __len__(self) -> int:
        return _ITEMS

    def __enter__(self) -> _Recorder:
        return object.__getattribute__(self, "_run").new("enter", self)

    def __exit__(self, kind: object, value: object, traceback: object) -> _Recorder:
        """Its result's truth (from the script) says whether the exception is suppressed."""
        name = None if kind is None else getattr(kind, "__name__", "?")
        return object.__getattribute__(self, "_run").new("exit", self, name)

    def __format__(self, spec: str) -> str:  # an f-string's `{x}`, `format(x, spec)`
        return object.__getattribute__(self, "_run").text("format", self, spec)

    def __repr__(self) -> str:  # `{x!r}`, `repr(x)`
        return object.__getattribute__(self, "_run").text("repr", self)

    def __str__(self) -> str:  # `{x!s}`, `str(x)`
        return object.__getattribute__(self, "_run").text("str", self)

    def __hash__(self) -> int:
        return hash(object.__getattribute__(self, "_name"))

    def __eq__(self, other: object) -> _Recorder:  # type: ignore[override]
        return object.__getattribute__(self, "_run").new("==", self, other)

    def __ne__(self, other: object) -> _Recorder:  # type: ignore[override]
        return object.__getattribute__(self, "_run").new("!=", self, other)

    __add__, __radd__, __sub__, __rsub__ = (
        _binary("+"),
        _binary("r+"),
        _binary("-"),
        _binary("r-"),
    )
    __mul__, __rmul__, __truediv__, __rtruediv__ = (
        _binary("*"),
        _binary("r*"),
        _binary("/"),
        _binary("r/"),
    )
    __floordiv__, __mod__, __pow__, __matmul__ = (
        _binary("//"),
        _binary("%"),
        _binary("**"),
        _binary("@"),
    )
    __and__, __or__, __xor__, __lshift__, __rshift__ = (
        _binary("&"),
        _binary("|"),
        _binary("^"),
        _binary("<<"),
        _binary(">>"),
    )
    __lt__, __le__, __gt__, __ge__, __contains__ = (
        _binary("<"),
        _binary("<="),
        _binary(">"),
        _binary(">="),
        _binary("in"),
    )
    __iadd__, __isub__, __imul__, __itruediv__ = (
        _binary("+="),
        _binary("-="),
        _binary("*="),
        _binary("/="),
    )
    __neg__ = __pos__ = __invert__ = lambda self: object.__getattribute__(self, "_run").new(
        "unary", self
    )  # noqa: E731


def _run(
    code: types.CodeType,
    script: list[bool],
    constants: Mapping[str, object] | None = None,
    inject: tuple[int, type[BaseException]] | None = None,
) -> _Run:
    """Run `code` on recorders for its arguments, free variables, globals and builtins;
    `constants` are globals bound to their values (a translation's named constants); the builtin
    exception classes it names are themselves (its `except` clauses test them); `inject`: the
    operation made to raise."""
    run = _Run(script, inject=inject, code=code, covered=_covered(code), loops=_has_while(code))
    names = _names_within(code) | {
        "iter",
        "type",
        "len",
        "isinstance",
        "dict",
        "tuple",
        "list",
        "__import__",
    }
    fake_builtins = {name: _Recorder(run, f"builtin {name}") for name in names}
    fake_builtins.update(
        globals=builtins.globals,
        slice=slice,
        set=set,  # `set()`: the translation of an empty set display (BUILD_SET 0)
        format=format,  # text conversions run for real: each logs on the stand-in it converts
        repr=repr,
        str=str,
        ascii=ascii,
        AssertionError=AssertionError,
        StopIteration=StopIteration,
    )
    fake_builtins.setdefault(
        "bool", bool
    )  # the translation's `bool(x)` for 3.13's TO_BOOL: a truth test
    fake_builtins.update({name: getattr(builtins, name) for name in _exception_names(code)})
    scope: dict[str, object] = {
        name: _Recorder(run, f"global {name}")
        for name in _names_within(code)
        if not hasattr(builtins, name)
    }
    scope.update(constants or {})
    scope["__builtins__"] = fake_builtins
    run.others[id(scope)] = "<the frame's globals>"
    closure = tuple(types.CellType(_Recorder(run, f"free {name}")) for name in code.co_freevars)
    function = types.FunctionType(code, scope, code.co_name, None, closure)
    nargs = code.co_argcount + code.co_kwonlyargcount
    params = list(code.co_varnames[:nargs])
    # by position: a parameter the translation renames (`.0`) is the same; a function over `.0`
    # (3.11's comprehension, a generator expression) is given an iterator, renamed `_iterator`
    positional = [
        _Recorder(run, f"arg {i}", iterator=i == 0 and name in (".0", "_iterator"))
        for i, name in enumerate(params[: code.co_argcount])
    ]
    keywords = {name: _Recorder(run, f"arg {name}") for name in params[code.co_argcount :]}
    try:
        result = function(*positional, **keywords)
        if code.co_flags & inspect.CO_GENERATOR:  # a generator expression: its body, as consumed
            for value in result:
                run.log.append(("yield", run.label(value)))
            result = None
        run.log.append(("return", run.label(result)))
    except (
        Exception,
        _Endless,
    ) as exc:  # the same exception at the same point is the same behaviour
        run.log.append(("raise", type(exc).__name__))
    return run


def _has_while(code: types.CodeType) -> bool:
    """Whether the code jumps back to anything but a `for` loop's FOR_ITER (a `while` loop)."""
    instructions = list(dis.get_instructions(code))
    starts = {ins.offset: ins.opname for ins in instructions}
    return any(
        "JUMP" in ins.opname
        and isinstance(ins.argval, int)
        and ins.argval < ins.offset
        and starts.get(ins.argval) != "FOR_ITER"
        for ins in instructions
    )


def _covered(code: types.CodeType) -> tuple[tuple[int, int], ...]:
    """The offsets `try` and `with` blocks cover in the code (the exception table's rows that are
    no handler's own cleanup), empty before 3.11."""
    if not getattr(code, "co_exceptiontable", b""):
        return ()
    rows = dis._parse_exception_table(code)  # type: ignore[attr-defined]
    handlers = {ins.offset for ins in dis.get_instructions(code) if ins.opname == "PUSH_EXC_INFO"}
    # a try body's rows and a with block's body's send it to PUSH_EXC_INFO (3.12's inlined
    # comprehensions have rows of their own, which only put their variable back)
    return tuple((r.start, r.end) for r in rows if r.target in handlers)


def _exception_names(code: types.CodeType) -> list[str]:
    """The builtin exception classes the code names."""
    return [
        name
        for name in code.co_names
        if isinstance(getattr(builtins, name, None), type)
        and issubclass(getattr(builtins, name), BaseException)
    ]


def difference(
    original: types.CodeType,
    translated: types.CodeType,
    constants: Mapping[str, object] | None = None,
) -> str | None:
    """None when both codes behave alike on every explored path, else the first difference.

    `constants`: the values of the names the translation writes for constants without a literal
    form (a `torch.Size`), as the file binds them; the bytecode holds the values themselves.
    """
    kinds = [getattr(builtins, n) for n in _exception_names(original)] + [_Injected]
    handlers = bool(_covered(original))
    pending: list[tuple[list[bool], tuple[int, type[BaseException]] | None]] = [([], None)]
    seen = 0
    while pending and seen < (MAX_PATHS_WITH_HANDLERS if handlers else MAX_PATHS):
        script, inject = pending.pop()
        seen += 1
        a = _run(original, script, inject=inject)
        b = _run(translated, script, constants, inject=inject)
        if a.log != b.log:
            return _describe(a.log, b.log)
        for depth in range(len(script), a.asked):  # branch on every truth test this path asked
            pending.append(([*script, *([True] * (depth - len(script))), False], inject))
        if inject is None:  # and raise at every operation done inside a try block
            pending.extend((script, (number, kind)) for number in a.protected for kind in kinds)
    return None


def _names_within(code: types.CodeType) -> set[str]:
    """The names the code and the functions it makes read (3.11's comprehensions run in the
    frame's globals, with its builtins)."""
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _names_within(const)
    return names


def _describe(a: list[tuple[object, ...]], b: list[tuple[object, ...]]) -> str:
    for index, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return f"operation {index + 1}: the bytecode does {x}, the translation {y}"
    shorter, longer = (a, b) if len(a) < len(b) else (b, a)
    who = "translation" if longer is b else "bytecode"
    return f"the {who} goes on after operation {len(shorter)}: {longer[len(shorter)]}"
