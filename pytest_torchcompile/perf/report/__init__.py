"""What a perf run shows and writes: tables (terminal, Markdown), JSON files, the gate's chart."""
