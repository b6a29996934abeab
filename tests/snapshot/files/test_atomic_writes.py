"""An update killed half-way leaves each snapshot old or new, never partial."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

WRITER = """
import sys
from pathlib import Path
from pytest_torchcompile.common.files import atomic_write_text
target = Path(sys.argv[1])
print("ready", flush=True)
i = 0
while True:
    atomic_write_text(target, ("new %d " % (i % 2)) * 400_000)
    i += 1
"""


def test_killed_writer_leaves_old_or_new(tmp_path: Path) -> None:
    target = tmp_path / "snapshots" / "summary.txt"
    target.parent.mkdir()
    target.write_text("old " * 400_000)
    allowed = {"old " * 400_000, "new 0 " * 400_000, "new 1 " * 400_000}
    for delay in (0.05, 0.13, 0.29):
        proc = subprocess.Popen(
            [sys.executable, "-c", WRITER, str(target)], stdout=subprocess.PIPE, text=True
        )
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        time.sleep(delay)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        assert target.read_text() in allowed
