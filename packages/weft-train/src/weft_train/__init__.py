"""weft-train (no public API yet; see README.md)."""

__version__ = "0.1.0"

__all__ = ["__version__"]
