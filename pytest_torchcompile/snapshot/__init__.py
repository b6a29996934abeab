"""The snapshot wing: compile a model, capture what the compiler produced, snapshot it, check numerics."""
