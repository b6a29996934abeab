"""The program file's guard evaluation (`_torch/program/runtime*.py`): a guard that raised is named with
what it raised, and Dynamo's SET_CONTAINS code runs on the frozenset Dynamo's own C check accepts."""

from __future__ import annotations

import keyword

import pytest

from pytest_torchcompile._torch.program.runtime import first_failing
from pytest_torchcompile._torch.program.runtime_guards import ___set_contains


def test_a_false_guard_is_named_by_its_line() -> None:
    failed = first_failing(
        lambda: True,
        lambda: 1 + 1 == 3,
    )
    assert failed == "1 + 1 == 3"


def test_a_guard_that_raised_says_what_it_raised() -> None:
    registry: dict[str, int] = {}
    failed = first_failing(
        lambda: True,
        lambda: list(registry)[0] == "torch",
    )
    assert failed == 'list(registry)[0] == "torch"  (raised IndexError: list index out of range)'


def test_an_error_that_is_no_missing_value_is_not_taken_for_a_failed_guard() -> None:
    with pytest.raises(ZeroDivisionError):
        first_failing(lambda: 1 / 0 == 1)


@pytest.mark.parametrize("container", [keyword.iskeyword.__self__, set(keyword.kwlist)])
def test_set_contains_takes_a_set_and_a_frozenset(container: set[str] | frozenset[str]) -> None:
    assert ___set_contains(container, "lambda") and not ___set_contains(container, "n")
    if isinstance(container, frozenset):
        with pytest.raises(TypeError, match="doesn't apply to a 'frozenset' object"):
            set.__contains__(container, "n")  # what Dynamo's guard code prints
