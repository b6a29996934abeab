"""The project's own suite: nothing but making `fixtures` importable from the rootdir."""
