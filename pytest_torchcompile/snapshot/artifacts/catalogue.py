"""The artifact catalogue: every artifact the snapshot wing writes, declared once.

Name, file extension, sources, builder, extra normalization rules, its stage
in the pipeline and how a comparison reads it; everything else reads this
table. A builder reads a `CaseCapture`: the trace records and bytecode, and
the program's facts. No torch import (the plugin loads it through the spec).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from ..._torch.patterns.distributed import name_ddp_buckets
from ...common.capture_log import CaptureLog
from ...common.counters import Counters, counters
from ..program.facts.data import ProgramFacts
from ..program.layout.snapshot_rules import fold_copied_parts, mask_python_version
from . import summary
from .compact import (
    compact_guards,
    compact_output_code,
    drop_fx_blank_lines,
    drop_fx_frees,
    drop_fx_input_aliases,
    drop_fx_provenance,
    outline_output_code,
    renumber_fx_names,
)
from .normalize import Normalizer, Rule, unmask_names
from .sections import record_artifact
from .transformed import transformed_code

#: sources beside the trace streams: Dynamo's rewritten code, and the guards read from its cache.
BYTECODE, GUARD_TREE = "bytecode hook", "guard tree"


@dataclass(frozen=True)
class CaseCapture:
    """What a case's artifacts are built from, as of one call.

    `log` holds the trace records, the rewritten bytecode and the guards;
    `program` what the program file needs from live objects, read right
    after each call (`program/facts/`): only the `program` artifact reads it.
    """

    log: CaptureLog
    program: ProgramFacts = field(default_factory=ProgramFacts)
    #: the log's counters where the case already counted them (the summary does not count them again)
    counted: Counters | None = None
    #: (label, value) lines the summary states after its counters (a distributed case's buckets)
    facts: tuple[tuple[str, str], ...] = ()


#: (what the case captured, backend name) -> the artifact's raw text
Builder = Callable[[CaseCapture, str], str]

#: how a comparison reads an artifact: the counters, FX graphs as dataflow, guards as
#: checks, generated code as kernels and calls, or plain text (no behaviour read).
READINGS = ("counters", "graph", "guards", "generated code", "text")


@dataclass(frozen=True)
class Artifact:
    """One artifact: its file, its sources, how it is built and normalized.

    `produced_if` is the source whose presence means the artifact was
    produced (None: always); `per_frame` artifacts are one trace stream laid
    out frame by frame, and also appear in each `FrameResult`. `opt_in`
    artifacts are built only when a test names them in `artifacts=`.
    `stage` orders artifacts as the compiler produces them (a failure shows
    the earliest changed one first); `reading` is how a comparison reads the
    text for behaviour (`READINGS`). `first` runs on the raw text before the
    common rules: it only drops lines they would read for nothing (the
    output code's imports and scaffolding, a quarter to a half of its text).
    """

    name: str
    extension: str
    sources: tuple[str, ...]
    build: Builder
    produced_if: str | None
    stage: int
    reading: str
    rules: tuple[Rule, ...] = ()
    per_frame: bool = False
    opt_in: bool = False
    first: tuple[Rule, ...] = ()

    @property
    def filename(self) -> str:
        return f"{self.name}.{self.extension}"

    def produced(self, log: CaptureLog) -> bool:
        if self.produced_if is None:
            return True
        if self.produced_if == BYTECODE:
            return bool(log.bytecode)
        return bool(log.payloads(self.produced_if))

    def normalize(self, normalizer: Normalizer, raw: str) -> str:
        """Its `first` rules, the common rules, then its own."""
        for rule in self.first:
            raw = rule(raw)
        text = normalizer(raw)
        for rule in self.rules:
            text = rule(text)
        return text

    def text(self, capture: CaseCapture, backend: str, normalizer: Normalizer) -> str:
        """The normalized text as snapshotted; a line saying so when the backend did not produce it."""
        if not self.produced(capture.log):
            return f"# {self.name} was not produced by backend {backend}\n"
        return self.normalize(normalizer, self.build(capture, backend))


def _frame_by_frame(
    name: str,
    extension: str,
    stage: int,
    reading: str,
    rules: tuple[Rule, ...] = (),
    opt_in: bool = False,
    first: tuple[Rule, ...] = (),
) -> Artifact:
    """An artifact that is one trace stream of its own name, frame by frame."""
    return Artifact(
        name,
        extension,
        (name,),
        lambda capture, backend: record_artifact(capture.log, name),
        name,
        stage,
        reading,
        rules,
        per_frame=True,
        opt_in=opt_in,
        first=first,
    )


def _summary(capture: CaseCapture, backend: str) -> str:
    return summary.write(backend, capture.counted or counters(capture.log), capture.facts)


def _transformed_code(capture: CaseCapture, backend: str) -> str:
    return transformed_code(capture.log)


def _program(capture: CaseCapture, backend: str) -> str:
    """The program file's text (the program room writes it), or why it was refused."""
    from ..program.layout.writer import program_artifact  # late: torch; the plugin loads this first

    return program_artifact(capture.log, capture.program, backend)


#: the stored form of an FX graph (compact.py): no frees, names numbered in order, no blank
#: lines; Dynamo's graph without input aliases, the AOT graphs without the `# File:` comments
#: Dynamo's graph already has.
FX_FORM: tuple[Rule, ...] = (drop_fx_frees, renumber_fx_names, drop_fx_blank_lines)
DYNAMO_FORM: tuple[Rule, ...] = (drop_fx_input_aliases, *FX_FORM)
AOT_FORM: tuple[Rule, ...] = (drop_fx_provenance, *FX_FORM)


def _wrapper_code(capture: CaseCapture, backend: str) -> str:
    return record_artifact(capture.log, "output_code")


CATALOGUE: tuple[Artifact, ...] = (
    Artifact(
        "summary",
        "txt",
        ("dynamo_graph", "output_code", "graph_break_reason", "recompile_reasons", BYTECODE),
        _summary,
        None,
        stage=-1,  # the counters of every stage, read first
        reading="counters",
    ),
    _frame_by_frame("dynamo_graph", "fx.txt", 0, "graph", DYNAMO_FORM),
    _frame_by_frame("guards", "guards.txt", 1, "guards", (compact_guards,)),
    # DDP's graph split at its buckets (compile_distributed has it by default where DDP splits)
    _frame_by_frame(
        "ddp_split", "fx.txt", 2, "graph", (*DYNAMO_FORM, name_ddp_buckets), opt_in=True
    ),
    _frame_by_frame("aot_forward", "fx.txt", 3, "graph", AOT_FORM),
    _frame_by_frame("aot_backward", "fx.txt", 5, "graph", AOT_FORM),
    _frame_by_frame("aot_inference", "fx.txt", 4, "graph", AOT_FORM),
    # the AOT graph after Inductor's graph passes, whose effect shows in output_code
    _frame_by_frame("post_grad_graph", "fx.txt", 7, "graph", AOT_FORM, opt_in=True),
    # Inductor's wrapper with each kernel as a digest: a kernel fused otherwise or with
    # other code shows here; output_code, opt-in, holds the kernels' full source
    Artifact(
        "wrapper_code",
        "code.txt",
        ("output_code",),
        _wrapper_code,
        "output_code",
        stage=8,
        reading="generated code",
        rules=(outline_output_code,),
        first=(compact_output_code,),
    ),
    _frame_by_frame(
        "output_code", "code.txt", 8, "generated code", opt_in=True, first=(compact_output_code,)
    ),
    # text only (never read for behaviour): opt-in
    _frame_by_frame("runtime_wrapper", "code.txt", 6, "text", opt_in=True),
    Artifact(
        "transformed_code",
        "code.txt",
        (BYTECODE,),
        _transformed_code,
        BYTECODE,
        2,
        "text",
        opt_in=True,
    ),
    Artifact(
        "program",
        "py.txt",
        (
            BYTECODE,
            GUARD_TREE,
            "aot_metadata",
            "output_code",
            "aot_forward",
            "aot_backward",
            "aot_inference",
            "dynamo_graph",
        ),
        _program,
        BYTECODE,
        stage=9,
        reading="text",
        rules=(unmask_names, mask_python_version, fold_copied_parts),  # it must parse as Python
        opt_in=True,  # it holds the other artifacts again, as the file that runs them
    ),
)

ARTIFACTS: dict[str, Artifact] = {a.name: a for a in CATALOGUE}
#: artifact name -> file extension (public: `pytest_torchcompile.ARTIFACT_EXTENSIONS`).
ARTIFACT_EXTENSIONS: dict[str, str] = {a.name: a.extension for a in CATALOGUE}
#: the artifacts each `FrameResult` holds.
FRAME_ARTIFACTS: tuple[Artifact, ...] = tuple(a for a in CATALOGUE if a.per_frame)
#: artifact names read as FX graphs: their ops and dataflow are behaviour.
GRAPH_ARTIFACTS: tuple[str, ...] = tuple(a.name for a in CATALOGUE if a.reading == "graph")
#: the artifacts a test without `artifacts=` snapshots (those produced, of these).
DEFAULT_ARTIFACTS: tuple[Artifact, ...] = tuple(a for a in CATALOGUE if not a.opt_in)


def normalize_artifact(normalizer: Normalizer, name: str, raw: str) -> str:
    """The stored form of artifact `name`'s raw text: the common rules, then its own."""
    return ARTIFACTS[name].normalize(normalizer, raw)
