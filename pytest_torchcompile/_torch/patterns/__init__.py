"""torch's printed texts as patterns: what a torch release may reprint otherwise.

The snapshot wing's normalization, stored form and comparison read torch's
text through these; a change in how torch prints something is an edit here.
Pure text, no torch import.
"""
