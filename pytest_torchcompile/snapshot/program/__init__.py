"""The program: one Python file that runs what torch.compile ran, without torch.compile."""

from .legacy import build

__all__ = ["build"]
