"""weft-toolspace: tool-centric task synthesis from real execution traces (ToolSpace §3–4)."""

__version__ = "0.1.0"

__all__ = ["__version__"]
