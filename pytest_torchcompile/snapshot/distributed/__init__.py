"""Distributed cases: `compile_distributed`, a model compiled under DDP or FSDP2 on several ranks.

From the bottom up: `request` (the call, checked, and what each rank
reads), `report` (what a rank sends back), `wrappers`, `texts` and
`numerics` (run in the ranks), `rank` (a rank's process), `launch` (the
ranks started, waited for, stopped), `agreement` (each rank against rank
0), `result`, `case`, `fixture`.
"""
