"""The snapshot wing: compile a model, capture what the compiler produced, snapshot it, check numerics.

It mirrors the perf wing and never imports it. Its rooms, from the bottom
up: `emit` (guards and values as Python) and `fresh_process`; `program`
(the runnable program file, in layers of its own); `artifacts` (the
catalogue and its builders, `normalize`); `spec`; `files` (snapshots on
disk); `compare`; `numerics`; `result`; `case`; `fixture`; `plugin` (pytest
side, no torch import).
"""
