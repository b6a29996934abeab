"""Text rules for the host, the checkout and the cache: paths, line numbers, threads, timings.

The checkout's and torch's paths made relative (`PathRule`, built per
checkout by `Normalizer.for_paths`), Inductor's cache paths and generated
module names masked, line numbers masked, the host's thread count and the
guards' latency dropped. Pure and idempotent; `normalize.STATIC_RULES`
gives their order.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

from ..._torch.patterns.code import (
    GENERATED_MODULE_FILE,
    GENERATED_MODULE_TAIL,
    KERNEL_PATH,
)
from ..._torch.patterns.dynamo import RESUME_IN_AT
from ..._torch.patterns.guards import (
    COMMENT_PATH,
    GUARD_LATENCY,
    NUM_THREADS,
    PSEUDO_FILE_QUOTE,
)

#: `file.py:9` and `, line 9`, without groups: a fixed replacement expands no template per match
_LINE_REF = re.compile(r"\.py:\d+\b")
_LINE_WORD = re.compile(r", line \d+\b")
_FROZEN_LINE = re.compile(r"(<frozen [\w.]+>):\d+")
_ABSOLUTE_PY = re.compile(r"(?<![\w<>.])/+(?:[^\s/\"':,()]+/+)+[^\s/\"':,()]+\.py\b")


# --- the host, the checkout and the cache -----------------------------------------


def mask_num_threads(text: str) -> str:
    """The GLOBAL_STATE guard records the host's thread count."""
    return NUM_THREADS.sub(r"\1<N>", text)


def drop_guard_latency(text: str) -> str:
    """`Guard latency = 70.56 us` is a timing, not a property of the guards."""
    if GUARD_LATENCY not in text:
        return text
    # line by line, the blank lines above it too: a pattern anchored at each line start with
    # `\s*` would try every position of the whole guards text
    out: list[str] = []
    lines = text.split("\n")
    for index, line in enumerate(lines):
        if line.lstrip().startswith(GUARD_LATENCY):
            while out and not out[-1].strip():
                out.pop()
            if index == len(lines) - 1:
                out.append("")  # the last line: the line break before it stays
            continue
        out.append(line)
    return "\n".join(out)


def mask_kernel_paths(text: str) -> str:
    """`# kernel path: /tmp/torchinductor_x/...` points into the cache dir."""
    if "# kernel path: " not in text:
        return text
    return KERNEL_PATH.sub(r"\1<cache>", text)


@lru_cache(maxsize=8)
def _at_path_start(folder: str) -> re.Pattern[str]:
    """`folder/` where a path starts, not inside a longer one.

    With the rootdir `/work/main`, a cache filled by a checkout at
    `/check/work/main` replays `/check/work/main/fixtures/zoo.py`, which must
    not become `/checkfixtures/zoo.py`.
    """
    return re.compile(
        r"(?<![\w<>.~+@%/-])" + re.escape(folder.rstrip("/") + "/")
    )  # `<>`: as `_ABSOLUTE_PY`


def _never_local(relative: str) -> bool:
    return False


@dataclass(frozen=True)
class PathRule:
    """Rewrite absolute paths: the rootdir becomes relative, torch's dir `<torch>`.

    A warm Inductor/AOTAutograd cache replays graphs with the `# File:` paths
    of whichever checkout filled it, so an absolute path from elsewhere is
    mapped to the longest suffix that names a file under this rootdir
    (`/other/checkout/fixtures/zoo.py` -> `fixtures/zoo.py`); `is_local`
    answers that question, which keeps the rule itself a pure function. Other
    absolute paths to Python files (site-packages, a script outside the
    rootdir) keep only their basename. The same cache is shared by every
    install of one torch version (two venvs of 2.13: the cache key holds the
    version, not the path), so a path into another install's `torch/` that
    names a file of this torch (`is_torch_file`) is `<torch>/...` too.
    """

    rootdir: str
    torch_dir: str | None = None
    is_local: Callable[[str], bool] = _never_local
    is_torch_file: Callable[[str], bool] = _never_local

    def __call__(self, text: str) -> str:
        # Line by line, each pattern only on the lines that hold its literal part: no match
        # spans a line, and a regex that starts with a lookbehind would try every position.
        folders = [
            (folder.rstrip("/") + "/", _at_path_start(folder), replacement)
            for folder, replacement in ((self.torch_dir, "<torch>/"), (self.rootdir, ""))
            if folder
        ]
        if ".py" not in text and not any(literal in text for literal, _, _ in folders):
            return text
        lines = text.split("\n")
        for index, line in enumerate(lines):
            for literal, pattern, replacement in folders:
                if literal in line:
                    line = pattern.sub(replacement, line)
            if ".py" in line and _starts_a_path(line):
                line = _ABSOLUTE_PY.sub(self._foreign, line)
            lines[index] = line
        return "\n".join(lines)

    def _foreign(self, match: re.Match[str]) -> str:
        parts = [p for p in match.group(0).split("/") if p]
        for start in range(1, len(parts) - 1):
            relative = "/".join(parts[start:])
            if self.is_local(relative):
                return relative
        for at in reversed([n for n, part in enumerate(parts[:-1]) if part == "torch"]):
            inside = "/".join(parts[at + 1 :])
            if self.is_torch_file(inside):
                return f"<torch>/{inside}"
        return parts[-1]


def _starts_a_path(line: str) -> bool:
    """Whether a `/` on the line can start an absolute path: one that `_ABSOLUTE_PY`'s
    lookbehind lets through (no word character, `<`, `>` or `.` before it)."""
    at = line.find("/")
    while at >= 0:
        if at == 0 or not (line[at - 1].isalnum() or line[at - 1] in "_<>."):
            return True
        at = line.find("/", at + 1)
    return False


def mask_generated_module_names(text: str) -> str:
    """`torch_geometric.nn.conv.gcn_conv_GCNConv_propagate_0lxvt4o8.py` -> `..._propagate_<tmp>.py`.

    A library that generates a module's source writes it to a `tempfile` named
    by the module's dotted name and 8 random characters, different in every
    process (torch_geometric's `propagate`); graphs and guard comments quote
    that file. The dotted stem is what tells it from a file of the project:
    such a name cannot be imported.
    """
    if not GENERATED_MODULE_TAIL.search(text):  # a match's tail never spans a line
        return text
    # only on the lines that hold a match's tail: the pattern would try every word boundary
    return "\n".join(
        GENERATED_MODULE_FILE.sub(r"\1<tmp>\2", line)
        if GENERATED_MODULE_TAIL.search(line)
        else line
        for line in text.split("\n")
    )


def shorten_guard_comment_paths(text: str) -> str:
    """Guard comments shorten paths relative to torch's install dir; keep the basename."""
    return COMMENT_PATH.sub(r"\1\2", text)


def drop_pseudo_file_quotes(text: str) -> str:
    """A guard's comment quotes no line of `<string>` or `<stdin>`: every eval'd text shares
    the name, and under xdist on Python 3.13 the worker's own `-c` program was quoted for a
    namedtuple's `_tuple_new` (pyg), where a plain run quotes nothing."""
    if "  # <string>:" not in text and "  # <stdin>:" not in text:
        return text
    return "\n".join(
        PSEUDO_FILE_QUOTE.sub(r"\1\2", line) if "  # <" in line else line
        for line in text.split("\n")
    )


def mask_line_numbers(text: str) -> str:
    """`file.py:9`, `, line 9`, `resume_in_f_at_13`: a moved line is not a regression."""
    text = _LINE_REF.sub(".py:<N>", text)
    text = _LINE_WORD.sub(", line <N>", text)
    return RESUME_IN_AT.sub(r"\1<N>", text)


def mask_frozen_line_numbers(text: str) -> str:
    """`<frozen os>:677` is a line of the Python build, not of the model."""
    return _FROZEN_LINE.sub(r"\1:<N>", text)


def strip_trailing_space(text: str) -> str:
    """Trailing blanks differ with padding of variable-width fields."""
    if " \n" not in text and "\t\n" not in text and not text.endswith((" ", "\t")):
        return text
    # line by line: a regex backtracks through every run of indentation
    return "\n".join(line.rstrip(" \t") for line in text.split("\n"))
