"""The shared floor: what both wings use, importing neither.

Compile options and marker parsing (`options`), case naming and failures
(`cases`), copies of models and inputs (`copies`), the capture (`records`,
`capture`), counters (`counters`), the compile + capture + first-call step
(`compiling`), stage diagnosis (`diagnose`), atomic files (`files`), what
the plugin writes on the terminal (`terminal`) and carries on test reports
(`crashes`). Torch's insides are reached only through `_torch/`.
"""
