"""`run_program=True`: the program file run in a fresh process, torch.compile trapped."""
