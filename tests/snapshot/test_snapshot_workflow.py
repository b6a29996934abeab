"""Snapshots driven as a user drives them: write, re-run, change, see the diff."""

from __future__ import annotations

import pytest

from tests.conftest import model_test, tree_digest


def test_write_rerun_then_changed_graph_fails_with_diff(
    pytester: pytest.Pytester, snapshot_files
) -> None:
    pytester.makepyfile(test_m=model_test("relu"))
    pytester.runpytest("--update-snapshots").assert_outcomes(passed=1)
    assert "test_m/test_m/dynamo_graph.fx.txt" in snapshot_files()
    assert "test_m/test_m/summary.txt" in snapshot_files()
    pytester.runpytest().assert_outcomes(passed=1)

    pytester.makepyfile(test_m=model_test("sigmoid"))
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*snapshot snapshots/test_m/test_m/dynamo_graph.fx.txt differs:*",  # the earliest stage; the others: --torchcompile-full-diff
            "*--- snapshot*",
            "*+++ this run*",
            "*-*torch.relu*",
            "*+*torch.sigmoid*",
        ]
    )


@pytest.mark.torch_independent
def test_snapshot_syrupy_flag_is_an_alias(pytester: pytest.Pytester, snapshot_files) -> None:
    pytester.makepyfile(test_m=model_test("relu"))
    pytester.runpytest("--snapshot-update").assert_outcomes(passed=1)
    assert snapshot_files()


@pytest.mark.torch_independent
def test_run_without_update_never_writes(pytester: pytest.Pytester, snapshot_files) -> None:
    pytester.makepyfile(test_m=model_test("relu"))
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*summary.txt does not exist yet: run `pytest --update-snapshots`*"]
    )
    assert snapshot_files() == []

    pytester.runpytest("--update-snapshots").assert_outcomes(passed=1)
    before = tree_digest(pytester.path / "snapshots")
    pytester.makepyfile(test_m=model_test("tanh"))
    pytester.runpytest().assert_outcomes(failed=1)
    assert tree_digest(pytester.path / "snapshots") == before


def test_artifacts_keyword_limits_files_and_layout_per_case(
    pytester: pytest.Pytester, snapshot_files
) -> None:
    pytester.makepyfile(
        test_m="""
        import pytest, torch

        @pytest.mark.compile_snapshot(backend="eager", artifacts=("summary", "guards"))
        def test_two(compile_model):
            compile_model(torch.sin, torch.randn(3))
            compile_model.case("wide")(torch.cos, torch.randn(5))
        """
    )
    pytester.runpytest("--update-snapshots").assert_outcomes(passed=1)
    assert snapshot_files() == [
        "test_m/test_two/case_0/guards.guards.txt",
        "test_m/test_two/case_0/summary.txt",
        "test_m/test_two/wide/guards.guards.txt",
        "test_m/test_two/wide/summary.txt",
    ]


@pytest.mark.torch_independent
def test_unused_snapshots_reported_then_deleted_on_update(
    pytester: pytest.Pytester, snapshot_files
) -> None:
    pytester.makepyfile(test_m=model_test("relu", extra=', artifacts=("summary", "dynamo_graph")'))
    pytester.runpytest("--update-snapshots").assert_outcomes(passed=1)
    pytester.makepyfile(test_m=model_test("relu", extra=', artifacts=("summary",)'))
    result = pytester.runpytest()
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        ["*not used by this run*", "unused: snapshots/test_m/test_m/dynamo_graph.fx.txt"]
    )
    assert "test_m/test_m/dynamo_graph.fx.txt" in snapshot_files()
    result = pytester.runpytest("--update-snapshots")
    result.stdout.fnmatch_lines(["deleted: snapshots/test_m/test_m/dynamo_graph.fx.txt"])
    assert snapshot_files() == ["test_m/test_m/summary.txt"]


@pytest.mark.torch_independent
@pytest.mark.parametrize(
    "damage, expected",
    [
        (lambda text: text.replace("graphs: 1", "graphs: 7"), ["*-graphs: 7*", "*+graphs: 1*"]),
        (lambda text: text[: len(text) // 2], ["*summary.txt differs:*", "*+frames:*"]),
        (None, ["*summary.txt is not valid UTF-8 (byte 0xff at offset 0)*--update-snapshots*"]),
    ],
    ids=["hand-edited", "truncated", "not-utf8"],
)
def test_damaged_snapshot_gives_diff_or_message_and_is_kept(
    pytester: pytest.Pytester, damage, expected
) -> None:
    pytester.makepyfile(test_m=model_test("relu", extra=', artifacts=("summary",)'))
    pytester.runpytest("--update-snapshots").assert_outcomes(passed=1)
    path = pytester.path / "snapshots/test_m/test_m/summary.txt"
    good = path.read_text()
    if damage is None:
        path.write_bytes(b"\xff\xfe" + good.encode())
    else:
        path.write_text(damage(good))
    damaged = path.read_bytes()
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(expected)
    assert path.read_bytes() == damaged
    pytester.runpytest("--update-snapshots").assert_outcomes(passed=1)
    assert path.read_text() == good


def test_unmarked_test_compiles_but_asserts_and_writes_nothing(
    pytester: pytest.Pytester, snapshot_files
) -> None:
    pytester.makepyfile(
        test_m="""
        import torch

        def test_plain(compile_model):
            result = compile_model(torch.sin, torch.randn(3))
            assert result.graph_count == 1 and "dynamo_graph" in result.artifacts
        """
    )
    pytester.runpytest("--update-snapshots").assert_outcomes(passed=1)
    assert snapshot_files() == []


@pytest.mark.torch_independent
def test_snapshot_dir_ini_and_flag(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\ntorchcompile_snapshot_dir = golden\n")
    pytester.makepyfile(test_m=model_test("relu", extra=', artifacts=("summary",)'))
    pytester.runpytest("--update-snapshots").assert_outcomes(passed=1)
    assert (pytester.path / "golden/test_m/test_m/summary.txt").is_file()
    pytester.runpytest("--update-snapshots", "--torchcompile-snapshot-dir=other").assert_outcomes(
        passed=1
    )
    assert (pytester.path / "other/test_m/test_m/summary.txt").is_file()


def test_session_summary_table(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_m=model_test("relu"))
    result = pytester.runpytest("--update-snapshots")
    result.stdout.fnmatch_lines(
        [
            "*torch.compile cases*",
            "case*graphs*breaks*recompiles*kernels*compile s",
            "test_m.py::test_m*1*0*0*0*",
            "compile s: Dynamo's own compile time of the case's frames *; a progress line's "
            "`done in` is the whole first call by the wall clock *",
        ]
    )
