"""The program file laid out: its sections, per frame its compiles, the graphs and kernels, and
what it refuses to write."""
