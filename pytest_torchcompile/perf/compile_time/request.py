"""What the starting process asks of a compiling one, as a JSON file named by an environment variable.

The compiling process is the user's own test run again (`python -m pytest
<node id>`), so its fixtures, parameters and conftest are the user's; this
request tells the plugin there which case to compile (`case`, counted as the
test calls the fixture), which side it is (cold or warm: only the cache
folder differs), where to write the answer, and where the results of the
cases before it are (the test gets them back unchanged, so it reaches the
case as it did). No torch import: the plugin reads it at configure time.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path

#: the environment variable that names the request file; set only in a compiling process
ENV = "PYTEST_TORCHCOMPILE_COMPILE_TIME_REQUEST"


@dataclass(frozen=True)
class Request:
    """One compiling process's task: compile case number `case` of test `nodeid` once."""

    nodeid: str
    case: int
    side: str
    answer: str
    earlier: str

    def write(self, path: Path) -> None:
        path.write_text(json.dumps(asdict(self)), encoding="utf-8")

    @classmethod
    def read(cls, path: Path) -> Request:
        data = json.loads(path.read_text(encoding="utf-8"))
        return cls(
            str(data["nodeid"]),
            int(data["case"]),
            str(data["side"]),
            str(data["answer"]),
            str(data["earlier"]),
        )


def from_environment(environ: Mapping[str, str] = os.environ) -> Request | None:
    """This process's request, or None in an ordinary run."""
    path = environ.get(ENV)
    return Request.read(Path(path)) if path else None
