"""The snapshot wing: compile a model, capture what the compiler produced, snapshot it, check numerics.

It mirrors the perf wing and never imports it: `plugin` (pytest side, no
torch import), `spec`, `fixture` and `case` (the fixture's object and one
case), `calls`, `replay`, `view`, `result`, the artifact `catalogue` with its
builders (`artifacts`, `program`, `guards`), `normalize`, `store`,
`numerics`, `attribution`, `precompile`, `report`.
"""
