"""A compiled-only slowdown of a chosen size in the speedup, for `gate_quality.py --slowdown`.

The perf gate must never PASS a slowdown past its threshold. To test that on
a real suite, the chain case of `gate_quality.py` gets extra work inside its
fused kernel, in the compiled graph only (`torch.compiler.is_compiling()`:
eager never takes the branch), so graphs, breaks and kernels stay the same
and only the timing can see it. How much a plant costs depends on the
machine, so it is calibrated here first: each candidate plant (divisions and
multiply-adds added to the kernel) is compiled and timed directly against
the unplanted compiled chain, interleaved in one process on one thread, and
the one closest to the wanted slowdown is taken.

    python benchmarks/planted_slowdown.py 0.17     # the candidates' costs, and the pick
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

#: (divisions, multiply-adds) added to the chain's kernel, cheapest first (on 2 shared cores,
#: torch 2.13: a division cost about 12% of the speedup, a multiply-add about 5%)
CANDIDATES = ((0, 2), (1, 0), (0, 3), (1, 1), (0, 4), (1, 2), (2, 0))


def planted(divisions: int, fmas: int) -> str:
    """The plant as `gate_quality.SUITE`'s `{planted}` lines (inside `chain`, after `y = half(x)`)."""
    body = "        y = y / (y * y + 1.0)\n" * divisions + "        y = y * 0.999 + 0.001\n" * fmas
    return "    if torch.compiler.is_compiling():\n" + body


TIMER = """
import json, statistics, sys, time, torch
torch.set_num_threads(1)
source, plants, rounds = json.loads(sys.stdin.read())
x = torch.randn(1 << 16)

def compiled(planted):
    namespace = {}
    exec(source.replace("{planted}", planted), namespace)
    torch._dynamo.reset()
    fn = torch.compile(namespace["chain"])
    fn(x)
    return fn

def block(fn, calls=16):
    started = time.perf_counter()
    for _ in range(calls):
        fn(x)
    return time.perf_counter() - started

with torch.no_grad():
    base = compiled("")
    found = []
    for planted in plants:
        fn = compiled(planted)
        ratios = []
        for _ in range(rounds):
            a, b = block(base), block(fn)
            ratios.append(a / b)
            b2, a2 = block(fn), block(base)
            ratios.append(a2 / b2)
        found.append(1 - statistics.median(ratios))
print(json.dumps(found))
"""


def costs(source: str, rounds: int = 100) -> dict[tuple[int, int], float]:
    """Each candidate's slowdown in speedup (1 - compiled before / compiled after), timed directly."""
    plants = [planted(*c) for c in CANDIDATES]
    env = dict(os.environ, PYTHONPATH=str(REPO))
    done = subprocess.run(
        [sys.executable, "-c", TIMER],
        input=json.dumps([source, plants, rounds]),
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    return dict(zip(CANDIDATES, json.loads(done.stdout.strip().splitlines()[-1])))


def chain_source(suite: str) -> str:
    """`gate_quality.SUITE`'s helpers and chain alone, `{planted}` left to fill (no pytest)."""
    start, end = suite.index("SIZE = "), suite.index("torch.manual_seed(0)")
    return "import torch\n" + suite[start:end]


def pick(found: dict[tuple[int, int], float], target: float) -> tuple[int, int]:
    return min(found, key=lambda c: abs(found[c] - target))


def main() -> None:
    from gate_quality import SUITE

    target = float(sys.argv[1]) if len(sys.argv) > 1 else 0.17
    found = costs(chain_source(SUITE))
    for candidate, cost in found.items():
        print(
            f"{candidate[0]} divisions, {candidate[1]} multiply-adds: speedup {-100 * cost:+.1f}%"
        )
    chosen = pick(found, target)
    print(f"closest to {-100 * target:+.0f}%: {chosen} ({-100 * found[chosen]:+.1f}%)")


if __name__ == "__main__":
    main()
