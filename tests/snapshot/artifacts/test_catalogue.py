"""The artifact catalogue: one declaration per artifact, consistent with torch's record streams."""

from __future__ import annotations

import pytest_torchcompile
from pytest_torchcompile._torch.formats import TRACE_RECORDS
from pytest_torchcompile.common.capture_log import BytecodeRecord, CaptureLog, FrameKey, TraceRecord
from pytest_torchcompile.snapshot.artifacts.catalogue import (
    ARTIFACT_EXTENSIONS,
    ARTIFACTS,
    BYTECODE,
    CATALOGUE,
    FRAME_ARTIFACTS,
    GUARD_TREE,
    CaseCapture,
)
from pytest_torchcompile.snapshot.artifacts.normalize import Normalizer


def test_each_artifact_is_declared_once_with_a_file_pytest_will_not_import() -> None:
    assert len(ARTIFACTS) == len(CATALOGUE)
    assert all(not a.filename.endswith(".py") for a in CATALOGUE)
    assert (
        pytest_torchcompile.ARTIFACT_EXTENSIONS
        == ARTIFACT_EXTENSIONS
        == {a.name: a.extension for a in CATALOGUE}
    )


def test_every_source_is_a_stream_torch_emits_or_a_hook_the_capture_has() -> None:
    streams = set(TRACE_RECORDS.values()) | {BYTECODE, GUARD_TREE}
    for artifact in CATALOGUE:
        assert set(artifact.sources) <= streams, artifact.name
        assert artifact.produced_if is None or artifact.produced_if in artifact.sources, (
            artifact.name
        )


def test_frame_artifacts_are_the_streams_laid_out_frame_by_frame() -> None:
    assert [a.name for a in FRAME_ARTIFACTS] == [
        "dynamo_graph",
        "guards",
        "ddp_split",
        "aot_forward",
        "aot_backward",
        "aot_inference",
        "post_grad_graph",
        "output_code",
        "runtime_wrapper",
    ]


def _log() -> CaptureLog:
    key = FrameKey(0, 0)
    code = compile("def f(x):\n    return x\n", "m.py", "exec").co_consts[0]
    return CaptureLog(
        [TraceRecord(key, "dynamo_graph", "def forward(self, x):\n    y = x + 1\n")],
        [BytecodeRecord(key, code, code)],
    )


def test_produced_follows_the_declared_source() -> None:
    log = _log()
    produced = [a.name for a in CATALOGUE if a.produced(log)]
    assert produced == ["summary", "dynamo_graph", "transformed_code", "program"]
    assert ARTIFACTS["summary"].produced(CaptureLog()) and not ARTIFACTS["program"].produced(
        CaptureLog()
    )


def test_text_says_when_the_backend_did_not_produce_it_and_applies_its_own_rules() -> None:
    normalizer = Normalizer.for_paths("/nowhere", None)
    assert (
        ARTIFACTS["output_code"].text(CaseCapture(_log()), "eager", normalizer)
        == "# output_code was not produced by backend eager\n"
    )
    program = ARTIFACTS["program"].text(CaseCapture(_log()), "eager", normalizer)
    assert "resume_in_f_at_<N>" not in ARTIFACTS["program"].normalize(
        normalizer, "def resume_in_f_at_12(): pass"
    )
    assert program.startswith("# What torch.compile ran for this case")
