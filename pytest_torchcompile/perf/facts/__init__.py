"""What fresh-process compiles found, as plain data (no torch, no pytest): the compile-time facts.

- `runs.py`: one process's compile (`CompileRun`, written as JSON by the process
  that compiled) and the facts of one side, cold or warm, over its runs (`SideFacts`);
- `keys.py`: cache keys by their parts, kept compact, what moved between two of them,
  and why a warm start missed (its key against the cold start's);
- `block.py`: a case's compile-time block (`CompileBlock`, held by its `CaseRecord`) and
  what moved against the baseline's, in words a failure's first line can carry.
"""
