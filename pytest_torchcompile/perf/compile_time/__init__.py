"""Cold and warm compiles of a case, each in a fresh Python process (`compile_time=True`).

- `request.py`: what the starting process asks of a compiling one (no torch import);
- `runner.py`: the starting side: a cache folder per cold/warm pair, the processes, their answers;
- `child.py`: the compiling side: the test re-run by pytest up to the case, which is
  compiled once under the watch and answered, and the process ends.
"""
