"""Normalization on real GPU output: torch 2.11 on an NVIDIA H100, cold and warm.

`tests/data/h100-torch2.11-raw*.json.xz` hold the structured-trace payloads
the plugin's handler received on an H100 (torch 2.11.0+cu130, triton 3.6.0),
before normalization, for each case run in a fresh process twice: with an
empty Inductor cache ("cold") and with the cache the first run filled
("warm"). Copied from `../shared/samples/h100-torch2.11/raw{,-hf}-{cold,warm}.json.gz`
(cold and warm in one file, which xz compresses to little more than one).

Laid out as the plugin lays them out (`artifacts.build`, one text per
artifact) and normalized with the plugin's rules, cold and warm must give
the same text for every case and artifact, while the text that says what
runs (Triton kernel bodies, ops, shapes, dtypes, strides) stays as torch
printed it. `transformed_code` and `program` need Dynamo's bytecode, which
the samples do not hold; their guard comments are checked on rows below.
"""

from __future__ import annotations

import json
import lzma
import re
from functools import cache
from typing import Any

import pytest

from pytest_torchcompile.common.capture import CaptureLog, FrameKey, TraceRecord
from pytest_torchcompile.snapshot.artifacts.catalogue import ARTIFACTS as CATALOGUE
from pytest_torchcompile.snapshot.artifacts.catalogue import (
    FRAME_ARTIFACTS,
    CaseCapture,
    normalize_artifact,
)
from pytest_torchcompile.snapshot.artifacts.compact import drop_fx_frees
from pytest_torchcompile.snapshot.artifacts.normalize import Normalizer
from pytest_torchcompile.snapshot.artifacts.sections import split_sections
from pytest_torchcompile.snapshot.compare.reading.wrapper import parse_output_code
from tests.conftest import DATA

#: where the samples were recorded (their `meta`): the rootdir and torch's install dir.
NORMALIZE = Normalizer.for_paths(
    "/home/ci/proj", "/opt/torch/.venv/lib/python3.12/site-packages/torch"
)
ARTIFACTS = (*(a.name for a in FRAME_ARTIFACTS), "summary")
SETS = {"zoo-like": "h100-torch2.11-raw.json.xz", "transformers": "h100-torch2.11-raw-hf.json.xz"}


@cache
def samples(name: str) -> dict[str, Any]:
    with lzma.open(DATA / SETS[name], "rt") as handle:
        return json.load(handle)


def laid_out(records: list[dict[str, Any]]) -> dict[str, str]:
    """Raw artifact texts of one case, as the plugin builds them from its capture."""
    log = CaptureLog(
        [TraceRecord(FrameKey(r["frame"], r["compile"]), r["name"], r["payload"]) for r in records]
    )
    return {name: CATALOGUE[name].build(CaseCapture(log), "inductor") for name in ARTIFACTS}


def pairs() -> list[Any]:
    found = []
    for name in SETS:
        for case in samples(name)["cold"]:
            for artifact in ARTIFACTS:
                found.append(pytest.param(name, case, artifact, id=f"{case}-{artifact}"))
    return found


@pytest.mark.parametrize(("name", "case", "artifact"), pairs())
def test_cold_and_warm_agree_after_normalization(name: str, case: str, artifact: str) -> None:
    data = samples(name)
    cold, warm = laid_out(data["cold"][case])[artifact], laid_out(data["warm"][case])[artifact]
    assert normalize_artifact(NORMALIZE, artifact, cold) == normalize_artifact(
        NORMALIZE, artifact, warm
    )


@pytest.mark.parametrize("name", SETS)
@pytest.mark.parametrize("artifact", ["wrapper_code", "output_code"])
def test_compacting_first_stores_what_compacting_last_did(name: str, artifact: str) -> None:
    """An artifact's `first` rules run before the common ones only where the stored text is the
    same as with them after: they drop lines the common rules would mask for nothing."""
    entry = CATALOGUE[artifact]
    assert entry.first, "nothing to check: the artifact has no first rules"
    for phase in ("cold", "warm"):
        for case, records in samples(name)[phase].items():
            log = CaptureLog(
                [
                    TraceRecord(FrameKey(r["frame"], r["compile"]), r["name"], r["payload"])
                    for r in records
                ]
            )
            raw = entry.build(CaseCapture(log), "inductor")
            last = NORMALIZE(raw)
            for rule in (*entry.first, *entry.rules):
                last = rule(last)
            assert entry.normalize(NORMALIZE, raw) == last, (phase, case)


def test_the_samples_differ_before_normalization() -> None:
    """The agreement above is earned: raw, cold and warm differ in these artifacts."""
    differ = set()
    for name in SETS:
        data = samples(name)
        for case in data["cold"]:
            cold, warm = laid_out(data["cold"][case]), laid_out(data["warm"][case])
            differ |= {(case, a) for a in ARTIFACTS if cold[a] != warm[a]}
    guards = {(case, "guards") for name in SETS for case in samples(name)["cold"]}
    assert differ == guards | {("hf_llama_bf16_dynamic", "aot_inference")}


# --- nothing semantic is masked --------------------------------------------------------

#: lines that say what runs: Triton ops and loads, FX nodes with their
#: `dtype[shape][stride]device` annotations, size/stride asserts, kernel signatures.
SEMANTIC_LINE = re.compile(
    r"\btl\.\w+\(|\"[a-z0-9]+\[[^\]\"]*\]\[[^\]\"]*\]cuda:\d\"|assert_size_stride\(|'signature': \{"
)


#: an FX node's number (`mul_2`, `primals_1`): the stored form renumbers nodes in order of
#: appearance (compact.py), which changes names, never ops, shapes or strides.
FX_NUMBER = re.compile(r"\b([A-Za-z_]\w*?)(?:_\d+)?\b")


def semantic_lines(text: str) -> list[str]:
    """The lines that say what runs, names without numbers (see FX_NUMBER), frees dropped."""
    return [
        FX_NUMBER.sub(r"\1", drop_fx_frees(line.strip()))
        for line in text.splitlines()
        if SEMANTIC_LINE.search(line) and "DeviceProperties" not in line
    ]


@pytest.mark.parametrize("name", SETS)
def test_kernel_bodies_ops_shapes_dtypes_and_strides_pass_unchanged(name: str) -> None:
    checked = 0
    for case, records in samples(name)["cold"].items():
        raw = laid_out(records)
        for artifact in (
            "output_code",
            "post_grad_graph",
            "aot_forward",
            "aot_backward",
            "aot_inference",
        ):
            before = semantic_lines(raw[artifact])
            assert (
                semantic_lines(normalize_artifact(NORMALIZE, artifact, raw[artifact])) == before
            ), (case, artifact)
            checked += len(before)
    assert checked > 500


def test_triton_metadata_keeps_device_type_and_index_and_masks_the_gpu_model() -> None:
    raw = laid_out(samples("zoo-like")["cold"]["gated_mlp_train"])["output_code"]
    assert "multi_processor_count=132, cc=90" in raw and re.search(
        r"'backend_hash': '[0-9A-F]{64}'", raw
    )
    text = normalize_artifact(NORMALIZE, "output_code", raw)
    assert (
        "DeviceProperties(type='cuda', index=0, multi_processor_count=<N>, cc=<N>, major=<N>, regs_per_multiprocessor=<N>, "
        in text
    )
    assert "'backend_hash': '<hash>'" in text
    assert not re.search(r"multi_processor_count=\d|cc=\d|'backend_hash': '[0-9A-F]", text)
    assert (
        "'signature': {'in_out_ptr0': '*fp32', 'in_ptr0': '*fp32'" in text
    )  # kernel signature kept


# --- guard comments in the program artifact (rows, not trace payloads) -------------------

PROGRAM_GUARD = "            and 64*L['x'].size()[0] <= 2147483647  # EPILOGUE  # ({})\n"


@pytest.mark.parametrize(
    "provenance",
    [
        "_functorch/_aot_autograd/autograd_cache.py:970 in evaluate_guards",
        "_functorch/_aot_autograd/aot_autograd_result.py:571 in wrap_post_compile",
    ],
)
def test_program_guard_comment_is_the_same_on_a_cache_hit(provenance: str) -> None:
    miss = PROGRAM_GUARD.format("_inductor/codegen/simd.py:1877 in can_use_32bit_indexing")
    expected = "            and 64*L['x'].size()[0] <= 2147483647  # EPILOGUE\n"
    assert (
        normalize_artifact(NORMALIZE, "program", miss)
        == normalize_artifact(NORMALIZE, "program", PROGRAM_GUARD.format(provenance))
        == expected
    )


# --- the wrapper read as steps, on a GPU's code ------------------------------------------


@pytest.mark.parametrize("name", SETS)
def test_a_triton_wrapper_reads_as_steps_and_an_argument_moved_is_another_step(name: str) -> None:
    """Triton kernels declare no argument types in the wrapper: each buffer a `.run(` is given may
    be written. The same code read twice is the same steps; a launch's argument changed is not."""
    for case, records in samples(name)["cold"].items():
        log = CaptureLog(
            [
                TraceRecord(FrameKey(r["frame"], r["compile"]), r["name"], r["payload"])
                for r in records
            ]
        )
        raw = CATALOGUE["wrapper_code"].build(CaseCapture(log), "inductor")
        text = normalize_artifact(NORMALIZE, "wrapper_code", raw)
        for section in split_sections(text).values():
            program = parse_output_code(section)
            runs = [s for s in program.shown.values() if ".run(" in s]
            if not runs:
                continue
            assert parse_output_code(section).steps == program.steps, case
            first = runs[0]
            moved = (
                first.replace("(", "(buf0, ", 1)
                if "buf0" not in first
                else first.replace("buf0", "arg0_1", 1)
            )
            assert parse_output_code(section.replace(first, moved, 1)).steps != program.steps, case
