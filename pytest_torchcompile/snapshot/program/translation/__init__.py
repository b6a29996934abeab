"""Dynamo's transformed bytecode as Python: a symbolic stack, one handler per instruction, and a
check that the Python does what the bytecode does."""
