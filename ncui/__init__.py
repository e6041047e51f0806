"""ncui: a researcher's first GPU job on National Compute, in the terminal."""

__version__ = "0.1.0"
