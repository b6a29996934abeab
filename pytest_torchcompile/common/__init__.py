"""The shared floor: what both wings use, importing neither.

Compile options and marker parsing (`options`), case naming and failures
(`cases`), copies of models and inputs (`copies`), the capture (`records`,
`capture`), counters (`counters`), the compile + capture + first-call step
(`compiling`), stage diagnosis (`diagnose`), atomic files (`files`) and text
tables (`tables`). Torch's insides are reached only through `_torch/`.
"""
