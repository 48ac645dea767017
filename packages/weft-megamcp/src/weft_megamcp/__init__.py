"""weft-megamcp."""

__all__: list[str] = []
