"""Baseline files: one JSON file per machine fingerprint under the baseline folder.

A file holds the fingerprint of the machine that recorded it and one block
per case, keyed by `<test node id>::<case name>`:

    {
      "cases": {
        "tests/test_perf.py::test_chain::case_0": {
          "counters": {"graph_break_count": 0, "graph_count": 1, "kernel_count": 1, "recompile_count": 0},
          "metrics": {
            "speedup": {"ci_high": 2.4132, "ci_low": 2.3098, "median": 2.361, "min": 0.39885, "n": 12445, "q1": 2.0027, "q3": 2.9219},
            ...
          },
          "settings": {
            "backend": "inductor",
            "iterations": 1,
            "noise": {"compiled_s": 0.14, "eager_s": 0.135, "speedup": 0.0221},
            ...
          }
        }
      },
      "format": 1,
      "machine": {"cpu": "AMD EPYC", "cuda": null, "device": "cpu", "threads": 1, "torch": "2.13.0+cpu", "triton": null}
    }

A fingerprint is the machine (device, CPU model, threads) and its software
(torch, triton, CUDA). A case is judged against this fingerprint's record,
else against this hardware's record under another torch (the torch before
this one first): a torch upgrade on one machine is judged like a code change,
absolute times included. Other machines' records come last (ratios only).

Keys are sorted and numbers rounded to 5 significant digits, so re-recording
a baseline diffs only where a number moved, one case per block. Writing
replaces this machine's file atomically, keeps the cases this run did not
measure, and never touches other machines' files: a baseline folder may hold
a laptop's and a CI runner's files side by side. A file of this machine that
cannot be read (a merge conflict, a truncated copy) is never replaced by a
partial update: the write stops with `BaselineWriteError`, naming the file;
temp files a killed write left behind are removed.
"""

from __future__ import annotations

import hashlib
import json
import platform
import re
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from ..common.files import atomic_write_text, leftover_temps
from ..common.locks import folder_lock
from ..common.versions import nearness
from .gate import Baseline
from .record import CaseRecord, RecordError

FORMAT = 1
#: what reading a damaged file can raise (a JSON nested too deep raises RecursionError)
DAMAGE = (OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError)
RERECORD = "re-record it with pytest --torchcompile-perf-update-baseline"


class BaselineWriteError(Exception):
    """The baseline was not written; the message names the file, the setting and the fix."""


#: the fingerprint fields that are the machine; the others (torch, triton, CUDA) are the
#: software it runs, which the gate compares across as it compares code across commits
HARDWARE = ("device", "cpu", "threads")
SOFTWARE = ("torch", "triton", "cuda")


@dataclass(frozen=True)
class Machine:
    """A baseline file's fingerprint: the machine (device, CPU model, threads) and its software.

    Each fingerprint has a file of its own, so a torch upgrade writes a new
    file beside the old torch's (both torch versions' CI legs keep theirs);
    the gate treats a baseline of the same hardware as this machine's whatever
    its software, and says what moved (`software_change`).
    """

    device: str
    cpu: str
    torch: str
    triton: str | None
    cuda: str | None
    threads: int

    @classmethod
    def current(cls, threads: int) -> Machine:
        """This machine, with the thread count benchmarks are pinned to."""
        import torch  # called from the benchmark fixture, where torch is loaded anyway

        device = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cpu"
        return cls(
            device, cpu_model(), torch.__version__, _version("triton"), torch.version.cuda, threads
        )

    def to_json(self) -> dict[str, object]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Machine:
        values: dict[str, Any] = {f.name: data.get(f.name) for f in fields(cls)}
        return cls(**values)

    def filename(self) -> str:
        """`<device or cpu model>-<threads>t-<hash of the whole fingerprint>.json`."""
        digest = hashlib.sha256(json.dumps(self.to_json(), sort_keys=True).encode()).hexdigest()[:8]
        name = self.cpu if self.device == "cpu" else self.device
        slug = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")[:40] or "machine"
        return f"{slug}-{self.threads}t-{digest}.json"

    def likeness(self, other: Machine) -> int:
        """How many fingerprint fields agree (to pick the closest foreign baseline)."""
        return sum(getattr(self, f.name) == getattr(other, f.name) for f in fields(self))

    def same_hardware(self, other: Machine) -> bool:
        """The same device, CPU model and thread count: absolute times compare."""
        return all(getattr(self, name) == getattr(other, name) for name in HARDWARE)

    def software_change(self, baseline: Machine) -> str:
        """What moved from the baseline's software to this one's (`torch 2.13.0+cpu -> 2.15.0+cpu`), or ''."""
        return ", ".join(
            f"{name} {getattr(baseline, name)} -> {getattr(self, name)}"
            for name in SOFTWARE
            if getattr(baseline, name) != getattr(self, name)
        )

    def nearness(self, baseline: Machine) -> tuple[int, tuple[int, ...]]:
        """How well `baseline`'s torch stands for the one before this one's (`versions.nearness`)."""
        return nearness(self.torch, baseline.torch)


def cpu_model() -> str:
    """The CPU's model name (Linux /proc/cpuinfo, else what platform knows)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


def _version(package: str) -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(package)
    except PackageNotFoundError:
        return None


@dataclass
class BaselineFile:
    """One machine's file as read: its fingerprint, its cases, and top-level fields this
    version does not know (a newer version's data, written back untouched)."""

    path: Path
    machine: Machine
    cases: dict[str, dict[str, Any]]
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class BaselineStore:
    """Reads every machine's file under `root` once; writes this machine's."""

    root: Path
    machine: Machine
    setting: str = "ini torchcompile_perf_baseline_dir"  # how the user named `root`, for messages
    started: float = field(default_factory=time.time)
    problems: list[str] = field(default_factory=list)
    _files: list[BaselineFile] | None = None
    _found: dict[str, Baseline | None] = field(default_factory=dict)

    @property
    def path(self) -> Path:
        return self.root / self.machine.filename()

    def files(self) -> list[BaselineFile]:
        if self._files is None:
            self._files = [
                f
                for f in (self._read(p) for p in sorted(self.root.glob("*.json")))
                if f is not None
            ]
        return self._files

    def _read(self, path: Path) -> BaselineFile | None:
        """A damaged or foreign file is skipped and reported, never fatal."""
        try:
            return read_file(path)
        except NewerFormat as exc:
            self._report(f"skipped the baseline file {self._shown(path)}: {exc}")
            return None
        except DAMAGE as exc:
            self._report(
                f"skipped the damaged baseline file {self._shown(path)}: {damage(exc)} "
                f"(repair it, or delete it and {RERECORD})"
            )
            return None

    def lookup(self, case: str) -> Baseline | None:
        """This machine's record of `case`, else the closest other machine's (read once)."""
        if case not in self._found:
            self._found[case] = self._lookup(case)
        return self._found[case]

    def _lookup(self, case: str) -> Baseline | None:
        """This fingerprint's record; else this hardware's with the torch before this one
        (a torch upgrade judged); else the closest other machine's."""
        holders = [f for f in self.files() if case in f.cases]
        if not holders:
            return None
        best = max(
            holders,
            key=lambda f: (
                f.machine == self.machine,
                self.machine.same_hardware(f.machine),
                self.machine.likeness(f.machine),
                self.machine.nearness(f.machine),
                f.path.name,
            ),
        )
        try:
            record = CaseRecord.from_json(best.cases[case])
        except RecordError as exc:
            self._report(
                f"skipped the damaged baseline of {case} in {self._shown(best.path)}: {exc} ({RERECORD})"
            )
            return None
        same = self.machine.same_hardware(best.machine)
        software = self.machine.software_change(best.machine) if same else ""
        return Baseline(record, same, best.path.name, software)

    def _report(self, problem: str) -> None:
        """A problem once per run, however often its case is looked up (hints, gate, re-measure)."""
        if problem not in self.problems:
            self.problems.append(problem)

    def _shown(self, path: Path) -> str:
        return f"{self.root.name}/{path.name}"

    def write(self, records: Mapping[str, CaseRecord]) -> Path:
        """Merge `records` into this machine's file, keeping its other cases.

        Read, merge and replace happen under a lock on the folder, reading the
        file afresh: two runs updating one baseline (`-k a` and `-k b` at once)
        both keep their cases instead of the last rename winning. Nothing is
        written when the file cannot be read or the write fails
        (`BaselineWriteError`).
        """
        try:
            with folder_lock(self.root):
                for leftover in leftover_temps(self.root, self.started, _is_baseline_name):
                    leftover.unlink(missing_ok=True)
                cases, extra = self._own_cases()
                cases.update(
                    {name: record.to_json(samples=False) for name, record in records.items()}
                )
                data = {
                    **extra,
                    "cases": cases,
                    "format": FORMAT,
                    "machine": self.machine.to_json(),
                }
                atomic_write_text(self.path, dumps(data) + "\n")
        except OSError as exc:
            raise BaselineWriteError(
                f"the baseline was not written ({self.setting}): cannot write {self._shown(self.path)}: "
                f"{exc.strerror or exc}; nothing was written, the previous baseline (if any) is unchanged"
            ) from None
        self._files = None
        return self.path

    def _own_cases(self) -> tuple[dict[str, dict[str, Any]], dict[str, Any]]:
        """This machine's cases as the file holds them now, and its fields this version does not
        know; none when there is no file yet.

        A file that cannot be read is never replaced by this run's cases
        alone: `BaselineWriteError` names it and the fix.
        """
        if not self.path.exists():
            return {}, {}
        try:
            found = read_file(self.path)
        except DAMAGE as exc:
            raise BaselineWriteError(
                f"the baseline was not written ({self.setting}): {self._shown(self.path)} cannot be read "
                f"({damage(exc)}), and replacing it would lose the cases this run did not measure; "
                f"nothing was written: repair the file (a merge conflict? git checkout it), or delete it and "
                f"re-record every case with pytest --torchcompile-perf-update-baseline"
            ) from None
        if found.machine != self.machine:
            raise BaselineWriteError(
                f"the baseline was not written ({self.setting}): {self._shown(self.path)} holds another "
                "machine's fingerprint under this machine's file name (edited by hand?); nothing was "
                "written: delete it, then re-record with pytest --torchcompile-perf-update-baseline"
            )
        return dict(found.cases), found.extra


def merge_runs(base: Path, runs: list[Path]) -> list[str]:
    """Fold the baseline folders of several runners (each updated one group of a split suite)
    into `base`, the folder they all started from; what was merged, one line per file.

    Per machine file, a case takes the record of the run that changed it (or added it);
    a case two runs changed differently raises `BaselineWriteError` naming it, and
    nothing is written for that file. Files are replaced atomically.
    """
    names = sorted({p.name for run in runs for p in run.glob("*.json")})
    return [_merge_file(base / name, [run / name for run in runs]) for name in names]


def _merge_file(target: Path, versions: list[Path]) -> str:
    base = _readable(target) if target.exists() else None
    start, extra = (base.cases, base.extra) if base is not None else ({}, {})
    merged, changed_by = dict(start), {}
    machine = None
    for version in (v for v in versions if v.exists()):
        found = _readable(version)
        machine, extra = machine or found.machine, {**found.extra, **extra}
        for case, record in found.cases.items():
            if start.get(case) == record:
                continue
            if case in changed_by and merged[case] != record:
                raise BaselineWriteError(
                    f"{case} was re-recorded by two runs ({changed_by[case]} and {version.parent}) "
                    f"with different figures: nothing was written to {target}; run each test in one group"
                )
            merged[case], changed_by[case] = record, version.parent
    if machine is None or not changed_by:
        return f"{target.name}: unchanged"
    data = {**extra, "cases": merged, "format": FORMAT, "machine": machine.to_json()}
    atomic_write_text(target, dumps(data) + "\n")
    return f"{target.name}: {len(changed_by)} case(s) from {len(set(changed_by.values()))} run(s)"


def _readable(path: Path) -> BaselineFile:
    try:
        return read_file(path)
    except DAMAGE as exc:
        raise BaselineWriteError(
            f"{path} cannot be read ({damage(exc)}): nothing was merged into it"
        ) from None


def read_file(path: Path) -> BaselineFile:
    """One baseline file; raises one of `DAMAGE` when it is not one."""
    data = json.loads(path.read_text(encoding="utf-8"))
    found = data.get("format")
    if isinstance(found, int) and not isinstance(found, bool) and found > FORMAT:
        raise NewerFormat(
            f"written by a newer pytest-torchcompile (format {found}; this version reads "
            f"format {FORMAT}): upgrade pytest-torchcompile to use it"
        )
    if data.get("format") != FORMAT:
        raise ValueError(f"format {data.get('format')!r}, expected {FORMAT}")
    extra = {k: v for k, v in data.items() if k not in _KNOWN_FIELDS}
    return BaselineFile(path, Machine.from_json(data["machine"]), dict(data["cases"]), extra)


#: the top-level fields this version writes; any other is kept as it was read
_KNOWN_FIELDS = frozenset({"cases", "format", "machine"})


class NewerFormat(ValueError):
    """A baseline file of a format a newer version writes: not damaged, not for this version."""


def damage(exc: BaseException) -> str:
    """What is wrong with a file, in a line (a RecursionError's message is torch-free but long)."""
    if isinstance(exc, NewerFormat):
        return str(exc)
    if isinstance(exc, RecursionError):
        return "nested too deep to be a baseline"
    if isinstance(exc, json.JSONDecodeError):
        return f"not JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}"
    return f"{type(exc).__name__}: {exc}"


def _is_baseline_name(name: str) -> bool:
    return name.endswith(".json")


def dumps(value: object, indent: str = "") -> str:
    """JSON with sorted keys, nested objects indented, flat objects on one line.

    A metric's summary (median, interval, quartiles) is one line, so a
    re-recorded baseline diffs as one changed line per moved metric.
    """
    if not isinstance(value, dict) or not any(isinstance(v, (dict, list)) for v in value.values()):
        return json.dumps(value, sort_keys=True)
    inner = indent + "  "
    items = [f"{inner}{json.dumps(key)}: {dumps(value[key], inner)}" for key in sorted(value)]
    return "{\n" + ",\n".join(items) + f"\n{indent}}}"
