"""`precompile=True`: the case saved with `aot_compile`, loaded and called in a fresh process.

- `round_trip.py`: the check (`PrecompileCheck`, one of the case's fresh-process checks);
- `child.py`: the fresh process that loads the artifact and calls it.
"""
