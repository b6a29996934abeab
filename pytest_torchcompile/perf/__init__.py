"""The perf wing: time compiled against eager, record baselines, gate CI on regressions."""
