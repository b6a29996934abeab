"""A committed suite's own tests are deselected only where its stability module's cold run runs
them all (tests/stability/committed.py, `run_here_instead`; the root conftest.py applies it)."""

from __future__ import annotations

from dataclasses import dataclass

from tests.stability.committed import COLD_RUN, SUITES, committed_set, run_here_instead


@dataclass(frozen=True)
class Collected:
    """What `run_here_instead` reads of a collected item: its node id."""

    nodeid: str


ZOO_TEST = Collected("fixtures/test_zoo.py::test_mlp_training")
ZOO_COLD_RUN = Collected(f"tests/stability/test_committed_zoo_stable.py::{COLD_RUN}")
OTHER_TEST = Collected("fixtures/test_vision.py::test_vit_training_step")


def test_a_suites_tests_go_to_its_cold_run_when_both_are_collected() -> None:
    items = [ZOO_TEST, ZOO_COLD_RUN, OTHER_TEST]
    expected = [ZOO_TEST] if committed_set(SUITES["zoo"]).is_dir() else []
    assert run_here_instead(items, updating=False) == expected  # type: ignore[arg-type]


def test_they_stay_without_the_cold_run_or_when_snapshots_are_written() -> None:
    assert run_here_instead([ZOO_TEST, OTHER_TEST], updating=False) == []  # type: ignore[arg-type]
    assert run_here_instead([ZOO_TEST, ZOO_COLD_RUN], updating=True) == []  # type: ignore[arg-type]


def test_a_suite_whose_cold_run_checks_part_of_it_keeps_its_own_tests() -> None:
    real = Collected("fixtures/test_real_models.py::test_opt_lm")
    cold = Collected(f"tests/stability/test_committed_real_models_stable.py::{COLD_RUN}")
    kept = (
        SUITES["real_models"].select is not None
        or not committed_set(SUITES["real_models"]).is_dir()
    )
    assert (run_here_instead([real, cold], updating=False) == []) == kept  # type: ignore[arg-type]
