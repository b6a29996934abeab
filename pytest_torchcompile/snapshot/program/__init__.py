"""The program: one Python file that runs what torch.compile ran, bitwise, without torch.compile.

`write_program` writes it (`CompileResult.write_program`); `program_text`
is its text, which is also the `program` snapshot; `collect` reads what the
file needs from live objects right after each compiled call; the
`run_program=True` check runs it in a fresh process (`check.py`).
"""

from .facts import collect
from .refusals import ProgramRefused
from .writer import program_artifact, program_text, write_program

__all__ = [
    "ProgramRefused",
    "collect",
    "program_artifact",
    "program_text",
    "write_program",
]
