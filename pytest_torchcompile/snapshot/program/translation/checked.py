"""A translation proved against its bytecode: what the program file and `transformed_code` both use.

`translate` writes the code as Python; `checked` also runs both on
recording stand-ins (`equivalence.py`) and raises `Untranslatable` naming
the first difference, so no caller can take a translation that does
something else than the bytecode. A code object is proved once: the
program file is written again after every call of a `run_program` case,
with the same frames each time, and the answer (a translation, or why
there is none) depends on the code alone. The answers live as long as
their code object (a weak key), never past it.
"""

from __future__ import annotations

import types
import weakref

from .bytecode import Translation, Untranslatable, translate
from .equivalence import difference


class NotEquivalent(Untranslatable):
    """The translation was written but does not do what the bytecode does; the message says where."""


#: code -> (name, prefix, functions) -> its translation, or the refusal (its type and message)
_PROVED: weakref.WeakKeyDictionary[
    types.CodeType, dict[tuple[str, str, bool], Translation | tuple[type[Untranslatable], str]]
] = weakref.WeakKeyDictionary()


def checked(
    code: types.CodeType,
    name: str | None = None,
    prefix: str = "__const_",
    functions: bool = False,
) -> Translation:
    """The code as Python (`def <name>`), proved to do what the bytecode does; Untranslatable
    otherwise. `functions`: as `translate`'s (code that runs as plain Python)."""
    name = name or code.co_name
    try:
        answers = _PROVED.setdefault(code, {})
    except TypeError:  # a code object hashes its constants: a slice Dynamo wrote there cannot be
        answers = {}
    key = (name, prefix, functions)
    if key not in answers:
        try:
            answers[key] = _proved(code, name, prefix, functions)
        except Untranslatable as exc:
            answers[key] = (type(exc), str(exc))
    answer = answers[key]
    if isinstance(answer, tuple):
        refusal, why = answer
        raise refusal(why)
    return answer


def _proved(code: types.CodeType, name: str, prefix: str, functions: bool) -> Translation:
    translation = translate(code, name, prefix, functions)
    try:
        compiled = compile(with_closure(translation.source, code, name), f"<{name}>", "exec")
    except SyntaxError as exc:  # a name the bytecode may hold and a def may not (`.0`)
        raise Untranslatable(f"its translation is not valid Python ({exc.msg})") from None
    why = difference(code, _find_code(compiled, name), translation.constants)
    if why is not None:
        raise NotEquivalent(why)
    for inner, inner_name, inner_prefix in translation.inner:  # the defs it writes, each on its own
        checked(inner, inner_name, inner_prefix, functions=True)
    return translation


def with_closure(source: str, code: types.CodeType, name: str) -> str:
    """A function with free variables is written inside a maker that holds them (bound at load)."""
    if not code.co_freevars:
        return source
    cells = "\n".join(
        f"    {v} = None  # a free variable of the frame, bound from its function's closure at load"
        for v in code.co_freevars
    )
    body = "\n".join("    " + line if line else line for line in source.rstrip("\n").splitlines())
    return f"def _make_{name}():\n{cells}\n\n{body}\n\n    return {name}\n\n\n{name} = _make_{name}()\n"


def _find_code(module: types.CodeType, name: str) -> types.CodeType:
    for const in module.co_consts:
        if isinstance(const, types.CodeType):
            if const.co_name == name:
                return const
            try:
                return _find_code(const, name)
            except LookupError:
                continue
    raise LookupError(name)
