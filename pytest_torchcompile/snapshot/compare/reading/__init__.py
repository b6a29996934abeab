"""Readers of the stored text: graphs, guards and Inductor's wrapper as comparable facts.

They know the stored formats only; what counts as a behaviour change is decided one floor up.
"""
