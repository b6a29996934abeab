"""One per-call check in a fresh process: what the precompile round trip and the program run share.

A case holds one `FreshCheck` per check its marker asks for
(`precompile=True`: `precompile/round_trip.py`; `run_program=True`:
`program/run/check.py`) and drives each the same way, call by call:

- `prepare`, before the call: a copy of the model as it was (the eager one or
  the compiled one's, `starts_from`), copies of the inputs, and the switches
  the call runs under (`GlobalState`: every one Dynamo's GLOBAL_STATE guard
  holds, and inference mode; which tensors are inference tensors goes with
  them, `inference.py`);
- `after_call`, with what the call did (`After`): the check runs its child on
  that, through `fresh`, and raises `FreshCheckFailed` with the test's
  failure text when it fails;
- `report()`: what it measured (sizes, seconds; never snapshotted), for the
  result's field `result_field`;
- `close()`: its temporary folder goes.

`fresh` is the one place the payload is built, the call made and its
failures worded: a model or input that does not pickle, a switch or a mode
the fresh process cannot be given, a process that crashed or ran past its
time limit, an answer that says the check's own code failed.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Literal

from ..._torch.process import global_state
from ..._torch.process.global_state import GlobalState
from ...common.capture_log import CaptureLog
from ...common.copies import clone_inputs, copy_with_grads
from .call import FreshProcesses, FreshProcessFailed, Unpicklable, call_fresh_process
from .folders import OwnedFolder
from .inference import InferenceMarks, marks
from .settings import BadSetting

#: one call's positional and keyword arguments.
Inputs = tuple[tuple[Any, ...], dict[str, Any]]


class FreshCheckFailed(Exception):
    """A check in a fresh process failed; the message is the test's failure text."""


@dataclass(frozen=True)
class Before:
    """What a check keeps of a call before it runs."""

    model: Any  # a copy, as it was before the call
    inputs: Inputs  # copies
    state: GlobalState
    #: which of the originals' tensors are inference tensors (a copy made outside inference mode is not)
    inference: InferenceMarks


@dataclass(frozen=True)
class After:
    """What the call did: the capture as of it, eager's output, the compiled output and observation."""

    log: CaptureLog
    eager: object
    compiled: object
    seen: dict[str, object]


class FreshCheck(ABC):
    """A check of each call of a case in a fresh process; subclasses say what it runs and compares."""

    #: the marker keyword, at the head of the failures that are not the model's
    label: ClassVar[str]
    #: what the fresh process does, as in "the fresh process that {does} failed"
    does: ClassVar[str]
    #: at the head of the failures of the fresh process and of what it ran
    prefix: ClassVar[str]
    #: the module the fresh process runs (`main(argv)`, through `child.answer_call`)
    child: ClassVar[str]
    #: `folders.KINDS`: the name of its temporary folder
    kind: ClassVar[str]
    #: the words of the progress line while it runs
    doing: ClassVar[str]
    #: the field of `CompileResult` its report goes to
    result_field: ClassVar[str]
    #: the model the fresh process starts from: eager's copy, or the compiled model's
    starts_from: ClassVar[Literal["eager", "compiled"]]
    timeout_s: ClassVar[float]
    #: said after the picklability failure
    unpicklable_hint: ClassVar[str] = ""

    def __init__(self, processes: FreshProcesses) -> None:
        self.processes = processes
        #: how each call's process started (`servers.FORKED` or `servers.NEW_INTERPRETER`)
        self.started: list[str] = []
        self._folder: OwnedFolder | None = None

    def prepare(self, eager_model: Any, compiled_model: Any, inputs: Inputs) -> Before:
        """Copies of the model and inputs as they are before the call, and the switches it runs under."""
        model = eager_model if self.starts_from == "eager" else compiled_model
        # the call gets copies of the inputs made here too: inference tensors where these are
        copies = clone_inputs(inputs)
        found = marks(model, copies)
        return Before(copy_with_grads(model), copies, global_state.read(), found)

    @abstractmethod
    def after_call(self, before: Before, after: After) -> None:
        """Check the call in a fresh process; FreshCheckFailed with the failure text."""

    @abstractmethod
    def report(self) -> object:
        """What the check measured, for `CompileResult.<result_field>`."""

    def close(self) -> None:
        if self._folder is not None:
            self._folder.cleanup()

    @property
    def folder(self) -> Path:
        """The check's temporary folder (made on first use, removed by `close`)."""
        if self._folder is None:
            self._folder = OwnedFolder(self.kind)
        return self._folder.path

    def fresh(
        self, before: Before, leading: list[str], entries: dict[str, object]
    ) -> dict[str, object]:
        """Run the child on the call's inputs, state and `entries`; its answer, or FreshCheckFailed."""
        if before.state.modes:
            raise FreshCheckFailed(
                f"{self.label}: the call ran under {', '.join(before.state.modes)} (a torch function or "
                "dispatch mode), an object no fresh process can be given: call the compiled model outside it"
            )
        args, kwargs = before.inputs
        payload = {"args": tuple(args), "kwargs": dict(kwargs), "state": before.state, **entries}
        payload["inference"] = before.inference
        try:
            answer = call_fresh_process(
                self.processes, self.child, leading, payload, self.folder, self.timeout_s
            )
        except Unpicklable as exc:
            raise FreshCheckFailed(
                f"{self.label}: the model and inputs must be picklable to reach the fresh process that "
                f"{self.does}, and the model's class importable there (defined at module level): "
                f"{exc}{self.unpicklable_hint}"
            ) from exc
        except BadSetting as exc:
            raise FreshCheckFailed(f"{self.label}: {exc}") from None
        except FreshProcessFailed as exc:
            raise FreshCheckFailed(
                f"{self.prefix}the fresh process that {self.does} failed {exc}"
            ) from None
        self.started.append(answer["started"])
        if answer.get("not_carried"):
            raise FreshCheckFailed(f"{self.label}: {answer['not_carried']}")
        if answer["error"]:
            raise FreshCheckFailed(f"{self.prefix}{answer['error']}")
        return answer
