"""The program's facts: what the file needs beyond the trace, read from live objects after each call."""
