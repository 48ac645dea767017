"""weft-train."""

__all__: list[str] = []
