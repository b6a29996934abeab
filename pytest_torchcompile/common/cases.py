"""What both fixtures share about cases: their names, and how a failing one fails the test.

Each call of `compile_model` or `compile_benchmark` is one case, named
`case_0`, `case_1`, ... or by `fixture.case("name")`. A case that cannot
run raises `CaseFailure`; the fixture turns it into a `FixtureFailure`
carrying the case's name, and the plugin's entry point (`plugin.py`) turns
that into a test failure with the message alone, no traceback. Nothing here
depends on pytest or torch.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar, Generic, TypeVar

ResultT = TypeVar("ResultT")


class CaseFailure(Exception):
    """A case could not run (eager failed, compile failed, numerics differ)."""


class FixtureFailure(BaseException):
    """Fail the test with this message alone (a usage error, or a failed case).

    A `BaseException`, as pytest's own failure is, so a test's `except
    Exception` around a fixture call does not swallow it.
    """


class NamedCases(Generic[ResultT]):
    """A fixture object whose every call is one case: `case_0`, `case_1`, ...

    `fixture.case("small")(model, x)` chooses the name instead (a snapshot
    folder, a baseline key). Subclasses keep `cases` and implement `_run`.
    """

    fixture_name: ClassVar[str]
    cases: list[Any]

    def _run(self, name: str, model: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> ResultT:
        raise NotImplementedError

    def __call__(self, model: Any, *args: Any, **kwargs: Any) -> ResultT:
        return self._run(f"case_{len(self.cases)}", model, args, kwargs)

    def case(self, name: str) -> Callable[..., ResultT]:
        """A case with a chosen name; each name once per test."""
        if any(c.name == name for c in self.cases):
            raise FixtureFailure(f"{self.fixture_name}.case({name!r}) is used twice in this test; give each case its own name")
        return lambda model, *args, **kwargs: self._run(name, model, args, kwargs)


def fail_test_on_case_failure(name: str, run: Callable[[], ResultT]) -> ResultT:
    """A failing case (first call, `CompileResult.call`, a benchmark) fails the test with its message alone."""
    try:
        return run()
    except CaseFailure as exc:
        failure = f"[{name}] {exc}"
    raise FixtureFailure(failure)  # outside `except`: no chained traceback
