"""`TORCH_TRACE=dir` and the plugin coexist: torch writes its trace files while the plugin captures."""

from __future__ import annotations

import pytest

from tests.conftest import model_test


def test_torch_trace_files_are_written_and_snapshots_still_match(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(test_m=model_test())
    pytester.runpytest("--update-snapshots").assert_outcomes(passed=1)
    trace_dir = pytester.path / "torch_trace"
    monkeypatch.setenv("TORCH_TRACE", str(trace_dir))
    result = pytester.runpytest()
    result.assert_outcomes(passed=1)  # the same snapshots, captured beside torch's own handler
    result.stdout.no_fnmatch_line("*torch.__trace*")  # pytest's log capture still gets none of it
    logs = sorted(trace_dir.rglob("*.log")) if trace_dir.is_dir() else []  # one folder per test
    assert logs, f"no trace file in {trace_dir}"
    text = "".join(p.read_text() for p in logs)
    assert '"dynamo_output_graph"' in text and '"aot_forward_graph"' in text
