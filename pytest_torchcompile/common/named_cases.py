"""What both fixtures share about cases: their names, and how a failing one fails the test.

Each call of `compile_model` or `compile_benchmark` is one case, named
`case_0`, `case_1`, ... or by `fixture.case("name")`. A case that cannot
run raises `CaseFailure`; the fixture turns it into a `FixtureFailure`
carrying the case's name, and the plugin's entry point (`plugin.py`) turns
that into a test failure with the message alone, no traceback. Nothing here
depends on pytest or torch.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, ClassVar, Generic, Protocol, TypeVar

from .hooks.crashes import internal_error

ResultT = TypeVar("ResultT")


class CaseFailure(Exception):
    """A case could not run (eager failed, compile failed, numerics differ)."""


class FixtureFailure(BaseException):
    """Fail the test with this message alone (a usage error, or a failed case).

    A `BaseException`, as pytest's own failure is, so a test's `except
    Exception` around a fixture call does not swallow it.
    """


class NamedCase(Protocol):
    """A case a fixture object keeps: named by the call that made it."""

    @property
    def name(self) -> str: ...


class NamedCases(Generic[ResultT]):
    """A fixture object whose every call is one case: `case_0`, `case_1`, ...

    `fixture.case("small")(model, x)` chooses the name instead (a snapshot
    folder, a baseline key). Subclasses keep `cases` and implement `_run`.
    """

    fixture_name: ClassVar[str]
    cases: Sequence[NamedCase]

    def _run(self, name: str, model: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> ResultT:
        raise NotImplementedError

    def __call__(self, model: Any, /, *args: Any, **kwargs: Any) -> ResultT:
        """`model` is positional-only, so a model may take a keyword argument named `model`."""
        name = f"case_{len(self.cases)}"
        if any(c.name == name for c in self.cases):
            raise FixtureFailure(
                f"usage error: {self.fixture_name}.case({name!r}) takes the name of unnamed call number {len(self.cases) + 1}; name named cases other than case_<n>"
            )
        return self._checked_run(name, model, args, kwargs)

    def case(self, name: str) -> Callable[..., ResultT]:
        """A case with a chosen name (a non-empty str); each name once per test."""
        if not isinstance(name, str) or not name:
            raise FixtureFailure(
                f'usage error: {self.fixture_name}.case(name) takes a non-empty str, not {name!r} ({type(name).__name__}); e.g. {self.fixture_name}.case("small")(model, x)'
            )
        if any(c.name == name for c in self.cases):
            raise FixtureFailure(
                f"{self.fixture_name}.case({name!r}) is used twice in this test; give each case its own name"
            )

        def run(model: Any, /, *args: Any, **kwargs: Any) -> ResultT:
            return self._checked_run(name, model, args, kwargs)

        return run

    def _checked_run(
        self, name: str, model: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> ResultT:
        problem = model_problem(self.fixture_name, model)
        if problem is not None:
            raise FixtureFailure(f"[{name}] {problem}")
        return self._run(name, model, args, kwargs)


def model_problem(fixture: str, model: object) -> str | None:
    """Why `model` cannot be what a fixture compiles (it must be called like the model), or None."""
    if isinstance(model, type):
        return f"usage error: {fixture}(model, ...) got the class {model.__name__} itself; pass an instance, e.g. {model.__name__}()"
    if not callable(model):
        return (
            f"usage error: {fixture}(model, *inputs) takes an nn.Module or a function first, got "
            f"{type(model).__name__} {_short_repr(model)}; pass the model first, then its inputs"
        )
    return None


def _short_repr(value: object) -> str:
    text = repr(value).replace("\n", " ")
    return text if len(text) <= 60 else text[:57] + "..."


def fail_test_on_case_failure(name: str, run: Callable[[], ResultT]) -> ResultT:
    """A failing case (first call, `CompileResult.call`, a benchmark) fails the test with its message alone."""
    try:
        return run()
    except CaseFailure as exc:
        failure = f"[{name}] {exc}"
    except (
        Exception
    ) as exc:  # everything the user's code raises is a CaseFailure by now: this is the plugin's
        failure = f"[{name}] {internal_error(exc, 'the fixture')}"
    raise FixtureFailure(failure)  # outside `except`: no chained traceback
