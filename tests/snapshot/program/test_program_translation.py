"""Dynamo's transformed code written as Python: the translation does what the bytecode does, or is refused.

Every frame of every committed case (the zoo and the real models, compiled
here with the `eager` backend: Dynamo writes the same code whatever backend
runs the graph) translates and runs the same operations as its bytecode on
recording stand-ins (`equivalence.py`), or is refused with a reason; never
a translation that does something else. Plain functions cover the shapes the
translator structures (branches, loops, imports, closures) and the ones it
refuses by name.
"""

from __future__ import annotations

import sys
import types

import pytest
import torch

from fixtures import real_models, zoo
from pytest_torchcompile._torch import dynamo
from pytest_torchcompile.snapshot.artifacts.transformed import depyf_source
from pytest_torchcompile.snapshot.program.translation.bytecode import Untranslatable, translate
from pytest_torchcompile.snapshot.program.translation.checked import checked
from pytest_torchcompile.snapshot.program.translation.equivalence import difference


def _function_code(source: str, name: str) -> types.CodeType:
    module = compile(source, "<translated>", "exec")
    return next(c for c in module.co_consts if isinstance(c, types.CodeType) and c.co_name == name)


def same_behaviour(code: types.CodeType) -> str | None:
    translation = translate(code)
    return difference(code, _function_code(translation.source, code.co_name))


def branches(x, y):
    z = x.foo[0] + y
    if z > 1:
        w = 1
    else:
        w = 2
    if y is None:
        return [w, z]
    return (w, x.bar)


def loop_and_import(a, b, *args, k=1, **kw):
    for i in iter(a.items()):
        x, y = i
        b[x] = y
    import torch

    return a(b, *args, k=k, **kw).c, torch


def shuffles(a, b):
    a, b = b, a
    a[b:1] = [b.x, a.y]
    del a[0]
    return {"a": a, "b": -b}


def slices_and_keywords(a, b):
    a[1:2] = b  # 3.12+: STORE_SLICE
    c = a[:3]  # 3.12+: BINARY_SLICE
    return (
        a.foo(1, k=2),
        c,
        b.bar(x=c),
    )  # 3.13: CALL_KW; 3.11, 3.12: KW_NAMES; 3.10: CALL_FUNCTION_KW


def loop_then_more(a, xs):
    for x in xs:  # 3.12: END_FOR; 3.13: END_FOR, POP_TOP
        a.append(x)
    total = a.total
    for y in a.items():
        total = total + y
    return total


def truth(a, b):
    if not a:  # 3.13: TO_BOOL before the jump
        b = -b
    c = not b  # 3.13: TO_BOOL, UNARY_NOT
    return bool(c), a and b  # 3.10, 3.11: JUMP_IF_FALSE_OR_POP; 3.12+: COPY, a conditional jump


# compiled from text: pytest rewrites the asserts of a test module into code of its own
asserts_and_stars = types.FunctionType(
    _function_code(
        "def asserts_and_stars(a, args):\n"
        "    assert a.ok\n"  # 3.14: LOAD_COMMON_CONSTANT; up to 3.13: LOAD_ASSERTION_ERROR
        "    b = a(*args)\n"  # 3.14: CALL_FUNCTION_EX with a NULL for the absent **kwargs
        "    return b[1:2:3], b[::2], b[-1:]\n",  # 3.14: constant slices, BINARY_OP's subscript
        "asserts_and_stars",
    ),
    globals(),
)


class _Base:
    def f(self, x):
        return x


class _Child(_Base):
    def f(self, x):
        return super().f(x) + 1  # 3.12+: LOAD_SUPER_ATTR


def f_strings(x, n):
    if x:  # a library's error message (torch_geometric's remove_self_loops, after its graph break)
        raise ValueError(f"expected {x!r} of {n:>{x}} and {n!s}, {n!a}")
    return f"{x}"


@pytest.mark.parametrize(
    "function",
    [
        branches,
        loop_and_import,
        shuffles,
        slices_and_keywords,
        loop_then_more,
        truth,
        asserts_and_stars,
        _Child.f,
        f_strings,
    ],
)
def test_plain_functions_translate_to_the_same_behaviour(function) -> None:
    """On every Python: each version's own instructions for the same source, proved alike."""
    assert same_behaviour(function.__code__) is None


def test_each_python_writes_the_same_python_for_the_same_source() -> None:
    """The translation reads alike on 3.10 to 3.14 here (and for all of Dynamo's code on 3.11 to 3.14:
    the committed transformed_code and program snapshots are the same on each)."""
    assert translate(slices_and_keywords.__code__).source == (
        "def slices_and_keywords(a, b):\n"
        "    a[1:2] = b\n"
        "    c = a[:3]\n"
        "    _s0 = a.foo(1, k=2)\n"
        "    _s1 = b.bar(x=c)\n"
        "    return (_s0, c, _s1)\n"
    )
    # 3.14 compiles the slices to constants and the assert to LOAD_COMMON_CONSTANT: the same text
    assert translate(asserts_and_stars.__code__).source == (
        "def asserts_and_stars(a, args):\n"
        "    if not a.ok:\n"
        "        raise AssertionError\n"
        "    _s0 = a(*args)\n"
        "    b = _s0\n"
        "    return (b[1:2:3], b[::2], b[(-1):])\n"
    )


def test_a_wrong_translation_is_caught() -> None:
    translation = translate(branches.__code__)
    wrong = translation.source.replace("x.foo[0] + y", "y + x.foo[0]")
    assert wrong != translation.source
    assert "operation" in difference(branches.__code__, _function_code(wrong, "branches"))


def for_else(xs, y):
    for x in xs:
        if x > y:
            found = x
            break
    else:
        found = y
    return found * 2


def for_else_in_a_loop(rows, y):
    out = []
    for row in rows:
        for x in row:
            if x == y:
                out.append(x)
                break
        else:
            out.append(None)
        out.append(len(out))
    return out


@pytest.mark.parametrize("function", [for_else, for_else_in_a_loop], ids=lambda f: f.__name__)
def test_a_for_loops_else_is_written_as_else_and_proved(function) -> None:
    """A `break` jumps past the loop's `else:` block (the iterator dropped first); the file writes
    `for ...: ... break` then `else:` (3.12 and later may copy a short ending into the break)."""
    translation = checked(function.__code__)
    assert same_behaviour(function.__code__) is None
    namespace: dict = {}
    exec(compile(translation.source, "<translated>", "exec"), namespace)
    for args in (([1, 5, 2], 2), ([1, 2], 7)) if function is for_else else (([[1, 2], [3]], 2),):
        assert namespace[function.__name__](*args) == function(*args)


def with_a_return_inside(x):
    with x:
        return x.a


@pytest.mark.parametrize(
    ("function", "reason"),
    [(with_a_return_inside, "with block|LOAD_SPECIAL|exception table")],
)
def test_what_cannot_be_structured_is_refused_naming_it(function, reason: str) -> None:
    with pytest.raises(Untranslatable, match=reason):
        translate(function.__code__)


def finally_returns(x):
    try:
        return x.a
    finally:
        x.close()


def finally_cleanup(x):
    try:
        y = x.a
    finally:
        x.close()
    return y


def finally_in_a_loop(xs):
    total = 0
    for x in xs:
        try:
            total = total + x.a
        finally:
            x.close()
    return total


@pytest.mark.skipif(
    not (3, 11) <= sys.version_info < (3, 14),
    reason="finally blocks are structured from 3.11's exception table up to 3.13's",
)
@pytest.mark.parametrize(
    "function", [finally_returns, finally_cleanup, finally_in_a_loop], ids=lambda f: f.__name__
)
def test_a_finally_block_is_an_except_that_raises_again_and_is_proved(function) -> None:
    """CPython copies a `finally` block: one copy where the body goes on, one in a handler that
    raises the exception again. The file writes `except BaseException: <copy>; raise` and `else:`."""
    source = checked(function.__code__).source
    assert "    except BaseException:" in source and "        raise" in source
    assert same_behaviour(function.__code__) is None


@pytest.mark.skipif(
    not (3, 11) <= sys.version_info < (3, 14),
    reason="finally blocks are structured from 3.11's exception table up to 3.13's",
)
def test_a_finally_block_left_out_where_the_body_raised_is_caught() -> None:
    lines = translate(finally_cleanup.__code__).source.split("\n")
    at = next(n for n, line in enumerate(lines) if "except BaseException:" in line)
    wrong = "\n".join([*lines[: at + 1], "        pass", *lines[at + 2 :]])
    assert "close" in lines[at + 1] and "close" not in wrong.split("else:")[0]
    found = difference(finally_cleanup.__code__, _function_code(wrong, "finally_cleanup"))
    assert found is not None and "close" in found


def try_else(options, g):
    try:
        c = options["grid"]
    except KeyError:
        pass
    else:
        options["grid"] = g(c)
    return options


def try_in_a_loop(names, func, orig, null):
    for name in names:
        try:
            cb = getattr(orig, name)
        except AttributeError:
            setattr(func, name, null)
        else:
            if cb is not null:
                func.add(cb)
            setattr(func, name, cb)
    return func


def try_mid_loop(x):
    for i in x:
        try:
            i.a()
        except ValueError:
            pass
        i.b()
    return x


def clauses_named_and_bare(x, y):
    try:
        z = x.f()
    except (KeyError, ValueError) as e:
        z = e
    except TypeError:
        return y
    except:  # noqa: E722 - the bare clause is one of the shapes
        z = None
    return z


def returns_in_try(x):
    try:
        return x.f()
    except KeyError as err:
        return err


def makes_functions(options, shapes, is_tuple, callback):
    try:
        grid = options["grid"]
    except KeyError:
        pass
    else:
        options["grid"] = lambda func, y0, t: -grid(func, y0, -t)
    if is_tuple:

        def callback(t0, y0, dt, _callback=callback):
            return _callback(t0, shapes(y0), dt)

    def keyword(a, *, b=shapes):
        return a + b

    return callback, keyword


TRIES = [try_else, try_in_a_loop, try_mid_loop, clauses_named_and_bare, returns_in_try]


def with_blocks(x, m):
    with m.ctx() as c:
        y = c.f(x)
    for a in x:
        with m:
            a.go()
    return y


def with_in_a_try(m, k):
    try:
        with m:
            v = m.read()
    except KeyError:
        v = k
    return v


@pytest.mark.skipif(
    not (3, 11) <= sys.version_info < (3, 14),
    reason="with blocks are structured from 3.11's BEFORE_WITH up to 3.13's",
)
@pytest.mark.parametrize("function", [with_blocks, with_in_a_try], ids=lambda f: f.__name__)
def test_a_with_block_is_written_as_with_and_proved_on_its_exit_paths(function) -> None:
    translation = checked(function.__code__)
    assert "    with " in translation.source
    assert same_behaviour(function.__code__) is None


def test_a_body_moved_out_of_its_with_block_is_caught() -> None:
    source = translate(with_blocks.__code__).source
    wrong = source.replace(
        "    with _s0 as c:\n        _s1 = c.f(x)\n        y = _s1\n",
        "    c = _s0\n    _s1 = c.f(x)\n    y = _s1\n",
    )
    assert wrong != source, source
    found = difference(with_blocks.__code__, _function_code(wrong, "with_blocks"))
    assert found is not None and "operation" in found


def comprehensions(xs, k, f):
    shapes = [x.shape for x in xs]
    by_name = {x: k for x in xs}
    x = k  # the comprehensions' variable is their own: this one stays
    made = f([x.g(y) for y in xs])
    return shapes, by_name, x, made


@pytest.mark.skipif(
    not (3, 12) <= sys.version_info < (3, 14),
    reason="comprehensions are inlined (and written as loops) from 3.12 on; 3.11's are functions",
)
def test_an_inlined_comprehension_is_a_loop_over_a_variable_of_its_own() -> None:
    translation = checked(comprehensions.__code__)
    assert ".append(" in translation.source and "x = k" in translation.source
    assert same_behaviour(comprehensions.__code__) is None
    namespace: dict = {}
    exec(compile(translation.source, "<translated>", "exec"), namespace)
    xs, k = [_Item(1), _Item(2)], _Item(7)
    assert namespace["comprehensions"](xs, k, sum) == comprehensions(xs, k, sum)


def filtered_comprehensions(xs, options):
    kept = [x.shape for x in xs if x.v > 1]
    chosen = {name: value for name, value in options.items() if value}
    pairs = [x.g(y) for x in xs for y in xs if y.v != x.v]
    return kept, chosen, pairs


@pytest.mark.skipif(
    not (3, 12) <= sys.version_info < (3, 14),
    reason="comprehensions are inlined (and written as loops) from 3.12 on; 3.11's are functions",
)
def test_a_comprehension_with_an_if_two_fors_or_two_variables_is_written_as_loops() -> None:
    """`if` is a `continue` in the loop, a second `for` a loop inside; `for k, v in` saves and puts
    back two variables, its handler one STORE_FAST for each."""
    translation = checked(filtered_comprehensions.__code__)
    assert "continue" in translation.source
    assert same_behaviour(filtered_comprehensions.__code__) is None
    namespace: dict = {}
    exec(compile(translation.source, "<translated>", "exec"), namespace)
    xs, options = [_Item(1), _Item(2), _Item(3)], {"a": 0, "b": 2, "c": None, "d": "x"}
    expected = filtered_comprehensions(xs, options)
    assert namespace["filtered_comprehensions"](xs, options) == expected


class _Item:
    """A value with a shape and a method, for running a translated comprehension for real."""

    def __init__(self, v: int) -> None:
        self.shape, self.v = (v,), v

    def g(self, other: _Item) -> int:
        return self.v * 10 + other.v


@pytest.mark.skipif(sys.version_info[:2] != (3, 11), reason="3.11 makes a comprehension a function")
def test_a_comprehension_of_python_3_11_is_a_function_written_over_its_iterator() -> None:
    """3.11 makes each comprehension a function over an iterator it names `.0` (torchsde's solver
    has one in a resume function): written as a `def` over `_iterator`, called on the iterable,
    proved with the bytecode, and run for real; a translation that fills the list otherwise is
    caught."""
    xs, k = [_Item(1), _Item(2), _Item(3)], _Item(7)
    options = {"a": 0, "b": 2, "c": None, "d": "x"}
    for function, args in (
        (comprehensions, (xs, k, sum)),
        (filtered_comprehensions, (xs, options)),
    ):
        source = checked(function.__code__, functions=True).source
        assert "(_iterator):" in source and ".append(" in source
        namespace: dict = {}
        exec(compile(source, "<translated>", "exec"), namespace)
        assert namespace[function.__name__](*args) == function(*args)
    source = checked(comprehensions.__code__, functions=True).source
    wrong = source.replace(".append(", ".insert(0, ", 1)
    assert wrong != source
    found = difference(comprehensions.__code__, _function_code(wrong, "comprehensions"))
    assert found is not None and "operation" in found


def generator_expressions(xs, y):
    return sum(x.v * y for x in xs if x.v), tuple(x.shape for x in xs), any(x.v > y for x in xs)


def test_a_generator_expression_is_a_generator_def_over_its_iterator() -> None:
    """A generator expression is a function over an iterator `.0` on every Python: written as a
    generator `def` over `_iterator`, given `iter(...)` of the iterable where the bytecode makes
    it (its body runs only as it is consumed), proved with the bytecode as it is consumed, and run
    for real; a translation that yields another value is caught."""
    translation = checked(generator_expressions.__code__, functions=True)
    assert "yield" in translation.source and "(_iterator):" in translation.source
    namespace: dict = dict(translation.constants)
    exec(compile(translation.source, "<translated>", "exec"), namespace)
    xs = [_Item(0), _Item(2), _Item(3)]
    assert namespace["generator_expressions"](xs, 2) == generator_expressions(xs, 2)
    inner = next(c for c in generator_expressions.__code__.co_consts if hasattr(c, "co_name"))
    first = next(line for line in translation.source.splitlines() if "yield" in line)
    wrong = translation.source.replace(first, first.split("= yield")[0] + "= yield y", 1)
    outer = _function_code(wrong, "generator_expressions")
    made = next(c for c in outer.co_consts if hasattr(c, "co_flags") and c.co_flags & 0x20)
    found = difference(inner, made)
    assert found is not None and "yield" in found


def while_in_a_for(t, t1, j, interp, solution):
    for a in t:
        while j < len(t) and t1 >= t[j]:
            if interp.kind == "linear":
                solution[j] = interp(a)
            else:
                raise ValueError(f"Unknown interpolation {interp.kind}")
            j += 1
        a.done()
    return solution


def while_with_continue(x):
    while x.more():
        x = x.next
        if x.skip:
            continue
        x.visit()
    return x


def while_true_with_continue(x):
    n = 0
    while True:
        n = n + x.step()
        if n < 3:
            continue
        if n > 10:
            break
        x.log(n)
    return n


def while_true_with_break(x):
    n = 0
    while True:
        n = n + x.step()
        if n > 10:
            break
    while x.more():
        x.go()
    return n


@pytest.mark.skipif(
    not (3, 11) <= sys.version_info < (3, 14),
    reason="while loops are structured from 3.11's jumps up to 3.13's",
)
@pytest.mark.parametrize(
    "function",
    [while_in_a_for, while_true_with_break, while_with_continue, while_true_with_continue],
    ids=lambda f: f.__name__,
)
def test_a_while_loop_is_written_as_while_true_with_breaks_and_proved(function) -> None:
    """3.12 and later copy a short ending into the loop where a `break` would go to it."""
    translation = checked(function.__code__)
    assert "while True:" in translation.source
    assert "break" in translation.source or "continue" in translation.source
    assert same_behaviour(function.__code__) is None


@pytest.mark.skipif(
    not (3, 11) <= sys.version_info < (3, 14),
    reason="while loops are structured from 3.11's jumps up to 3.13's",
)
def test_a_continue_to_a_while_loops_test_writes_the_test_again_and_a_skipped_test_is_caught() -> (
    None
):
    """`continue` in `while <test>:` jumps to the test, which a written `continue` (to the top of
    `while True:`) would skip: the test is written again before it."""
    source = translate(while_with_continue.__code__).source
    repeated = (
        "                _s1 = x.more()\n"
        "                if not (_s1):\n"
        "                    break\n"
        "                continue\n"
    )
    assert repeated in source, source
    wrong = source.replace(repeated, "                continue\n")
    found = difference(while_with_continue.__code__, _function_code(wrong, "while_with_continue"))
    assert found is not None and "operation" in found, found


def test_a_wrong_while_loop_is_caught() -> None:
    source = translate(while_true_with_break.__code__).source
    wrong = source.replace("        if _s2:\n            break\n", "        break\n", 1)
    assert wrong != source, source
    found = difference(
        while_true_with_break.__code__, _function_code(wrong, "while_true_with_break")
    )
    assert found is not None and "operation" in found


def continue_and_break(xs, ys):
    total = 0
    for x in xs:
        if x.skip:
            continue
        for y in ys:
            if y.stop:
                break
            total = total + y.v
        if x.last:
            break
        x.done()
    return total


def returns_from_a_loop(xs):
    for x in xs:
        if x.a:
            return x.b
    return None


def continue_in_a_try(xs):
    for x in xs:
        try:
            if x.a:
                continue
            x.b()
        except ValueError:
            x.c()
    return xs


def continue_in_a_with(xs, m):
    for x in xs:
        with m:
            if x.a:
                continue
            x.b()
    return xs


@pytest.mark.skipif(
    not (3, 11) <= sys.version_info < (3, 14),
    reason="a for loop left early is structured from 3.11's jumps up to 3.13's",
)
@pytest.mark.parametrize(
    "function",
    [continue_and_break, returns_from_a_loop, continue_in_a_try],
    ids=lambda f: f.__name__,
)
def test_a_for_loop_left_early_is_written_with_continue_break_or_return_and_proved(
    function,
) -> None:
    """3.12 and later put the `return` after the loop's jump back (the body then ends with a
    `continue`) and copy a short ending after a `break` into the loop; 3.11 leaves a `continue`'s
    jump out of the try's rows."""
    translation = checked(function.__code__)
    assert "for " in translation.source
    assert same_behaviour(function.__code__) is None


@pytest.mark.skipif(
    not (3, 11) <= sys.version_info < (3, 14),
    reason="a for loop left early is structured from 3.11's jumps up to 3.13's",
)
@pytest.mark.parametrize(
    ("change", "difference_found"),
    [
        (("            continue\n", "            pass\n"), "operation"),
        (("                break\n", "                continue\n"), "operation"),
    ],
    ids=["a continue dropped", "a break that continues"],
)
def test_a_wrong_continue_or_break_is_caught(change, difference_found) -> None:
    source = translate(continue_and_break.__code__).source
    wrong = source.replace(*change, 1)
    assert wrong != source, source
    found = difference(continue_and_break.__code__, _function_code(wrong, "continue_and_break"))
    assert found is not None and difference_found in found, found


def test_a_continue_out_of_a_with_block_is_refused() -> None:
    """CPython calls `__exit__` before the jump; a written `with` would call it again."""
    with pytest.raises(Untranslatable, match="with block|jump out of its block|exception table"):
        checked(continue_in_a_with.__code__)


@pytest.mark.skipif(
    not (3, 11) <= sys.version_info < (3, 14),
    reason="try statements are structured from 3.11's exception table up to 3.13's handlers",
)
@pytest.mark.parametrize("function", TRIES, ids=lambda f: f.__name__)
def test_try_except_is_written_as_try_except_and_proved_on_every_handler_path(function) -> None:
    translation = checked(function.__code__)  # raises where the proof finds a difference
    assert "try:" in translation.source and "except" in translation.source
    assert same_behaviour(function.__code__) is None


@pytest.mark.skipif(
    not (3, 11) <= sys.version_info < (3, 14),
    reason="try statements are structured from 3.11's exception table up to 3.13's handlers",
)
@pytest.mark.parametrize(
    ("change", "difference_found"),
    [
        (("except KeyError:\n", "except KeyError:\n        options['x'] = 1\n"), "setitem"),
        (("except KeyError:", "except AttributeError:"), "'raise', 'KeyError'"),
        (
            ("try:\n        c = options['grid']", "c = options['grid']\n    try:\n        pass"),
            "raised",
        ),
    ],
    ids=["another handler body", "another exception class", "outside the try"],
)
def test_a_wrong_handler_is_caught_by_raising_inside_the_try(change, difference_found) -> None:
    translation = translate(try_else.__code__).source
    wrong = translation.replace(*change)
    assert wrong != translation, translation
    found = difference(try_else.__code__, _function_code(wrong, "try_else"))
    assert found is not None and difference_found in found, found


@pytest.mark.skipif(
    not (3, 11) <= sys.version_info < (3, 14),
    reason="functions made at run time are written as defs from 3.11's code objects up to 3.13's",
)
def test_a_function_made_as_the_code_runs_is_a_def_with_its_defaults_closure_and_names() -> None:
    with pytest.raises(Untranslatable, match="makes a function at run time"):
        translate(
            makes_functions.__code__
        )  # Dynamo's transformed code: its guards compare code objects
    translation = checked(makes_functions.__code__, functions=True)  # the inner codes proved too
    source = translation.source
    assert ".__defaults__ = (callback,)" in source
    assert ".__kwdefaults__ = {'b': shapes}" in source
    assert "'<lambda>', 'makes_functions.<locals>.<lambda>'" in source
    namespace: dict = {}
    exec(compile(source, "<translated>", "exec"), namespace)
    made, keyword = namespace["makes_functions"]({}, lambda y: y * 2, True, lambda *a: a)
    assert made(1, 2, 3) == (1, 4, 3) and made.__defaults__[0](5) == (5,)
    assert keyword(1, b=2) == 3 and keyword.__qualname__ == "makes_functions.<locals>.keyword"


def test_a_non_literal_constant_is_named_for_the_caller_to_bind() -> None:
    def f():
        return "PLACEHOLDER"

    code = f.__code__.replace(
        co_consts=tuple(
            torch.device("cpu") if c == "PLACEHOLDER" else c for c in f.__code__.co_consts
        )
    )
    translation = translate(code, const_prefix="__const_f_")
    assert list(translation.constants.values()) == [torch.device("cpu")]
    assert "return __const_f_" in translation.source


def test_a_code_object_that_cannot_be_hashed_is_proved_all_the_same() -> None:
    """Dynamo writes slices into its code's constants (`x[:, 1:3]` in a graph-break resume), and a
    code object hashes its constants: before Python 3.12 a slice has no hash, so the proof is not
    cached for that code, and still made (torch_geometric's pooling hit this)."""

    def f(x):
        return x[None]

    code = f.__code__.replace(
        co_consts=tuple(slice(1, 3) if c is None else c for c in f.__code__.co_consts)
    )
    translation = checked(code, "f")
    assert "return x[__const_0]" in translation.source
    assert translation.constants == {"__const_0": slice(1, 3)}


@pytest.mark.skipif(
    sys.version_info >= (3, 14),
    reason="depyf 0.20 decompiles no 3.14 code (LOAD_FAST_BORROW); the translator writes it there",
)
def test_depyf_constants_are_written_as_the_values_they_stand_for() -> None:
    def f(obj):
        obj.device = "PLACEHOLDER"

    code = f.__code__.replace(
        co_consts=tuple(
            torch.device("cpu") if c == "PLACEHOLDER" else c for c in f.__code__.co_consts
        )
    )
    source, _ = depyf_source(code)
    assert "torch.device('cpu')" in source and "__co_consts" not in source


def _transformed_codes(model, args, kwargs, *more_calls) -> list[types.CodeType]:
    codes: list[types.CodeType] = []
    dynamo.reset()
    compiled = torch.compile(model, backend="eager")
    with (
        dynamo.bytecode_hook(lambda original, transformed: codes.append(transformed)),
        torch.no_grad(),
    ):
        compiled(*args, **kwargs)
        for call in more_calls:
            compiled(**call) if isinstance(call, dict) else compiled(*call)
    resumes = (
        getattr(model, "forward", model).__globals__.get(n)
        for c in codes
        for n in c.co_names
        if n.startswith("__resume_at")
    )
    dynamo.reset()
    return codes + [r.__code__ for r in resumes if isinstance(r, types.FunctionType)]


ZOO = [
    "mlp_training",
    "graph_break",
    "convbn_inference",
    "transformer_block",
    "buffer_mutation",
    "custom_autograd",
    "function_with_kwargs",
    "nested_outputs",
    "dynamic_shapes",
]


def outcomes(codes: list[types.CodeType]) -> list[tuple[str, str]]:
    """Per code: "same" (translated, same behaviour), "refused: <why>", or the difference found."""
    found = []
    for code in codes:
        try:
            found.append((code.co_name, same_behaviour(code) or "same"))
        except Untranslatable as exc:
            found.append((code.co_name, f"refused: {exc}"))
    return found


def assert_same_or_refused(codes: list[types.CodeType]) -> None:
    found = outcomes(codes)
    assert codes and all(o == "same" or o.startswith("refused: ") for _, o in found), found


@pytest.mark.parametrize("name", ZOO + ["two_shapes"])
def test_every_zoo_frame_translates_to_the_same_behaviour(name: str) -> None:
    case = getattr(zoo, name)()
    codes = (
        _transformed_codes(*case[0], case[1], case[2])
        if name == "two_shapes"
        else _transformed_codes(*case)
    )
    assert [o for _, o in outcomes(codes)] == ["same"] * len(
        codes
    )  # the zoo: every frame, on every torch


REAL = [
    "opt_lm",
    "qwen2_lm",
    "phi_lm",
    "gpt_neox_lm",
    "roberta_training",
    "bart_seq2seq",
    "convnext_vision",
    "deit_vision",
    "wav2vec2_audio",
    "mixtral_moe",
]


@pytest.mark.parametrize("name", REAL)
def test_every_real_model_frame_translates_or_is_refused(name: str) -> None:
    """On 2.13 and 2.15 every frame translates (docs/program.md); 2.11's BART makes a closure: refused."""
    pytest.importorskip("transformers")
    more = [real_models.qwen2_second_length()] if name == "qwen2_lm" else []
    assert_same_or_refused(_transformed_codes(*getattr(real_models, name)(), *more))
