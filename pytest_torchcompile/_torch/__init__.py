"""The torch adapter: the only package of the plugin that knows torch's insides.

Everything the plugin takes from torch beyond its public API goes through
here: private modules (`torch._dynamo`, `torch._inductor`, `torch._logging`,
`torch.utils._pytree`, `torch.testing._comparison`), the names of its trace
records, its text formats, config keys, exception types, the guard-tree API,
the bytecode hook, compile metrics, the compiler bisector and the
`aot_compile`/save/load API. A torch upgrade that changes one of them is an
edit here, and `tests/torch_adapter/test_adapter_contract.py` exercises this interface
directly on the installed torch. Differences between torch versions are
detected here, by feature rather than by version number, so the rest of the
plugin sees one interface.

Modules by topic:
- `formats`: record names and text formats (pure text; never imports torch);
- `errors`: exception types and where in torch an error was raised (no torch import);
- `trace`: the structured-trace logger and its records;
- `dynamo`: Dynamo's process state: reset, registered backends, the bytecode hook;
- `guard_tree`: guards read from Dynamo's cache entries;
- `config`: Inductor config keys and patches, option and mode lists;
- `metrics`: Dynamo's compile-time metrics;
- `aot`: `aot_compile`, save and load of precompiled functions;
- `bisector`: torch's compiler bisector;
- `kernels`: loading generated kernel modules, Inductor's compile workers;
- `tensors`: pytree walks and `assert_close`'s default tolerances;
- `distributed`: process groups, DDP and FSDP2, DTensor shards, eager op counts, compiled
  frames' runs (their texts: `patterns/distributed.py`);
- `program`: what the program file needs (AOTAutograd's metadata, its runtime, the compile trap).
- `process`: what a fresh process needs (the switches a call runs under, a fork server's preload).

Importing this package imports none of them.
"""
