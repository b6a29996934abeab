"""The program: one Python file that runs what torch.compile ran, bitwise, without torch.compile.

`writer.write_program` writes it (`CompileResult.write_program`);
`writer.program_text` is its text, which is also the `program` snapshot;
`facts.collect` reads what the file needs from live objects right after
each compiled call; `check.ProgramCheck` runs it in a fresh process for
`run_program=True`. Importing this package imports none of them (the
artifact catalogue loads with the plugin, before torch).
"""
