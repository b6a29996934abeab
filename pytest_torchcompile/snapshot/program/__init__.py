"""The program: one Python file that runs what torch.compile ran, bitwise, without torch.compile.

A room of layers, from the bottom up; each imports only those below it:

- `facts/`: what the file needs beyond the trace, read from live objects
  right after each compiled call (`reading.collect`);
- `translation/`: Dynamo's transformed bytecode as Python, proved to do
  what the bytecode does;
- `layout/`: the file itself (`writer.program_text`, which is also the
  `program` snapshot; `writer.write_program` for `CompileResult.write_program`),
  and `ProgramRefused` where it cannot be written;
- `run/`: `run_program=True`, the file run in a fresh process.

Below it, `emit/` writes guards and values as Python for it and for the
artifacts; above it, the artifact catalogue's `program` entry calls
`layout.writer`. Importing this package imports none of them (the catalogue
loads with the plugin, before torch).
"""
