"""The committed snapshots of the other libraries' models' suite, byte-identical at another path, cold and warm,
in another order, under xdist and alone (the checks: `tests/stability/committed.py`)."""

from __future__ import annotations

from tests.stability.committed import (  # noqa: F401 - collected here, for this suite
    checkout_fixture,
    test_committed_snapshots_match_at_another_path_with_a_cold_cache,
    test_one_test_alone,
    test_reversed_order_with_hash_randomisation_off,
    test_shuffled_after_the_same_libraries_ran_eagerly,
    test_xdist_two_workers_after_a_dozen_unrelated_compiles,
)

checkout = checkout_fixture("other_libraries")
