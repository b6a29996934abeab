"""What a CI job gains from keeping Inductor's cache between runs (docs/ci.md).

Runs one pytest command three times in a copy of this checkout, each with
`TORCHINDUCTOR_CACHE_DIR` pointing at one folder: first empty (a CI job with
no cache), then as the first run left it (a job that restored the cache),
then from a copy of it in another folder (restored onto another path, as a
CI cache is). Prints the wall time of each, the cache's size, the load
average around the runs, and whether the snapshot files stayed
byte-identical (a cache must change no snapshot: the stability tests prove
it per rule, this shows it for the command given).

    python benchmarks/inductor_cache.py [PYTEST ARGS...]   # default: fixtures/test_zoo.py
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEFAULT = ["fixtures/test_zoo.py"]


def digest(root: Path) -> str:
    """One hash of every file under `root` (names and bytes)."""
    total = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        total.update(str(path.relative_to(root)).encode() + path.read_bytes())
    return total.hexdigest()[:16]


def size_mib(root: Path) -> float:
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file()) / 2**20


def timed(checkout: Path, cache: Path, args: list[str]) -> tuple[float, str]:
    env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": str(cache), "PYTHONPATH": str(checkout)}
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", *args],
        cwd=checkout,
        env=env,
        capture_output=True,
        text=True,
    )
    seconds = time.perf_counter() - started
    last = (done.stdout.strip().splitlines() or ["(no output)"])[-1]
    return seconds, last


def main() -> None:
    args = sys.argv[1:] or DEFAULT
    with tempfile.TemporaryDirectory(prefix="inductor-cache-") as folder:
        work = Path(folder)
        checkout = work / "checkout"
        shutil.copytree(
            REPO, checkout, ignore=shutil.ignore_patterns(".git", "__pycache__", "*.egg-info")
        )
        before = digest(checkout / "snapshots")
        cache, moved = work / "cache", work / "restored-cache"
        print(f"pytest {' '.join(args)}; load average before: {os.getloadavg()[0]:.1f}")
        rows = []
        for label, where in (("cold (empty cache)", cache), ("warm (same folder)", cache)):
            rows.append((label, *timed(checkout, where, args)))
        shutil.copytree(cache, moved)
        rows.append(("warm (restored copy)", *timed(checkout, moved, args)))
        for label, seconds, last in rows:
            print(f"{label:<22} {seconds:7.1f} s   {last}")
        print(
            f"cache size: {size_mib(cache):.1f} MiB; load average after: {os.getloadavg()[0]:.1f}"
        )
        same = digest(checkout / "snapshots") == before
        print(f"snapshot files unchanged by the runs: {same}")


if __name__ == "__main__":
    main()
