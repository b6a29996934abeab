"""Fresh processes: calls run where nothing of this process's compiles can help them.

- `check.py`: `FreshCheck`, the per-call check the precompile round trip and the
  program run implement (prepare, after the call, report, close): the payload,
  the switches the call ran under, the failures, in one place.
- `call.py` and `child.py`: one call, the caller's side and the fresh process's.
- `inference.py`: inference tensors, made so again in the fresh process.
- `servers.py`: where they come from (`FreshProcesses`, one per session: a fork
  server, or a new interpreter per call); no torch import, so the plugin can end it.
- `fork_server.py` and `zygote.py`: the fork server, the caller's side and its own.
- `lines.py`: the server's messages. `settings.py`: `PTC_FRESH_PROCESS_TIMEOUT`,
  `PTC_FORK_SERVER`. `folders.py`: their temporary folders, a killed run's removed.
"""
