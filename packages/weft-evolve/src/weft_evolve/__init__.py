"""weft-evolve."""

__all__: list[str] = []
