"""The perf wing: time compiled against eager, record baselines, gate CI on regressions.

It mirrors the snapshot wing and never imports it: `plugin` (pytest side,
no torch import), `spec`, `fixture`, `timing`, `gpu`, `stats`, `record`,
`gate`, `baseline`, `report`; `compile_time` (a case's cold and warm compiles
in fresh processes) and `facts` (what they found, as plain data).
"""
