"""JSON messages, one a line, over a pipe: the fork server's requests and replies.

Read from the raw file descriptor with `select`, never through Python's
buffered files, so a wait can have a deadline and a closed pipe reads as
the end (None) at once. A line that is not a JSON object, or a line longer
than any message (`MAX_LINE`), is `Garbled`: something else wrote into the
pipe, and nothing read from it after can be trusted.
"""

from __future__ import annotations

import json
import os
import select
import time
from typing import Any

#: bytes no message comes near (a request holds an environment and an import path)
MAX_LINE = 1 << 22


class Garbled(Exception):
    """What arrived is not a message; the message quotes its start."""


class Lines:
    """The messages arriving on one file descriptor."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.buffer = b""
        self.closed = False

    def next(self, deadline: float | None = None) -> dict[str, Any] | None:
        """The next message; None once the other end closed; TimeoutError past `deadline` (monotonic)."""
        while b"\n" not in self.buffer:
            if self.closed:
                return None
            if len(self.buffer) > MAX_LINE:
                raise Garbled(f"{len(self.buffer)} bytes without a line end: {self.buffer[:120]!r}")
            wait = None if deadline is None else max(0.0, deadline - time.monotonic())
            if not select.select([self.fd], [], [], wait)[0]:
                raise TimeoutError
            self.feed()
        line, self.buffer = self.buffer.split(b"\n", 1)
        try:
            message = json.loads(line)
        except ValueError:  # UnicodeDecodeError too
            raise Garbled(f"not a JSON line: {line[:120]!r}") from None
        if not isinstance(message, dict):
            raise Garbled(f"not a message: {line[:120]!r}")
        return message

    def feed(self) -> None:
        """Read what the pipe holds now (call when `select` says it is readable)."""
        data = os.read(self.fd, 1 << 16)
        if data:
            self.buffer += data
        else:
            self.closed = True


def send(fd: int, message: dict[str, Any]) -> None:
    """Write one message; BrokenPipeError when the reader is gone."""
    data = (json.dumps(message) + "\n").encode()
    while data:
        data = data[os.write(fd, data) :]
