"""Fresh processes: calls run where nothing of this process's compiles can help them.

- `servers.py`: where they come from (`FreshProcesses`, one per session: a fork
  server, or a new interpreter per call); no torch import, so the plugin can end it.
- `zygote.py`: the fork server itself, and the child it forks per call.
- `lines.py`: the server's messages.
- `call.py`: one call, its payload saved in and its answer read back.
"""
