"""One test's changed cases, compared once.

After a marked test's body, what its snapshot files found is read three
ways: which changed cases pass as text only (text_only.py), the failure block
(failure.py) and the side-by-side diffs for pytest-html (html.py). All three
read the same verdicts, and `compare_case` re-reads every graph and guard of
a case: so `ChangedCases.of` compares each changed case once, and the three
take the object it returns. Pure: no torch or pytest.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass

from ..artifacts.catalogue import ARTIFACTS
from ..files.outcome import Outcome, Status
from .behaviour import compare_case
from .findings import CaseDiff
from .lines import changed_lines

#: after every artifact of the catalogue: one the catalogue does not name
_LAST_STAGE = max(a.stage for a in ARTIFACTS.values()) + 1


@dataclass(frozen=True)
class Change:
    """One changed artifact of one case."""

    case: str  # "" for a test with one case
    artifact: str
    filename: str
    old: str
    new: str

    @property
    def label(self) -> str:
        return f"{self.case}/{self.filename}" if self.case else self.filename

    @property
    def counts(self) -> tuple[int, int]:
        """Lines added and removed, as git counts them (a minimal diff)."""
        return changed_lines(self.old.splitlines(), self.new.splitlines())

    @property
    def names_only(self) -> bool:
        return canonical_names(self.old) == canonical_names(self.new)

    @property
    def stage(self) -> int:
        known = ARTIFACTS.get(self.artifact)
        return known.stage if known is not None else _LAST_STAGE


@dataclass(frozen=True)
class ChangedCases:
    """A test's outcomes, its changed artifacts, and each changed case's verdict.

    `diffs` holds one `CaseDiff` per case with a changed file, in the order of
    its first change: the case compared whole (the artifacts that matched are
    the same on both sides, so an unchanged output code shows that a reprinted
    graph is the same program).
    """

    outcomes: tuple[Outcome, ...]
    changes: tuple[Change, ...]
    diffs: Mapping[str, CaseDiff]

    @classmethod
    def of(cls, outcomes: Iterable[Outcome]) -> ChangedCases:
        """Each changed case of `outcomes` compared (`compare_case`, once per case)."""
        return cls._made(tuple(outcomes), {})

    @property
    def failed(self) -> bool:
        return any(o.failed for o in self.outcomes)

    def without(self, cases: Collection[str], added: Sequence[Outcome] = ()) -> ChangedCases:
        """The outcomes of every case but `cases`, and `added` (a refreshed file that failed);
        a case keeps the verdict it was given unless `added` holds a file of it."""
        kept = tuple(o for o in self.outcomes if o.case not in cases)
        touched = set(cases) | {o.case for o in added}
        known = {case: diff for case, diff in self.diffs.items() if case not in touched}
        return self._made(kept + tuple(added), known)

    @classmethod
    def _made(cls, outcomes: tuple[Outcome, ...], known: Mapping[str, CaseDiff]) -> ChangedCases:
        changes = tuple(
            Change(o.case, o.artifact, o.path.name, o.old, o.new)
            for o in outcomes
            if o.status is Status.CHANGED and o.old is not None and o.new is not None
        )
        diffs = {}
        for case in dict.fromkeys(c.case for c in changes):
            diff = known.get(case)
            if diff is None:
                new = {o.artifact: o.new for o in outcomes if o.case == case and o.new is not None}
                old = {**new, **{c.artifact: c.old for c in changes if c.case == case}}
                diff = compare_case(old, new)
            diffs[case] = diff
        return cls(outcomes, changes, diffs)


_NUMBERED = re.compile(
    r"\b([A-Za-z][A-Za-z0-9]*(?:_[A-Za-z][A-Za-z0-9]*)*)_(\d+)\b|\b(buf|tmp)(\d+)\b"
)


def canonical_names(text: str) -> str:
    """Numbered names (`add_9`, `getitem_3`, `buf4`, `tmp12`) renumbered in order of first use, per family.

    Two texts with the same canonical form differ only by a consistent renaming:
    the same ops on the same edges. Dtypes (`f32`, `bf16`), sizes and symbols
    (`s27`) are not numbered names here and are never renamed.
    """
    seen: dict[str, dict[str, int]] = {}

    def rename(match: re.Match[str]) -> str:
        family = match.group(1) or match.group(3)
        numbers = seen.setdefault(family, {})
        token = match.group(0)
        return f"{family}_#{numbers.setdefault(token, len(numbers))}"

    return _NUMBERED.sub(rename, text)
