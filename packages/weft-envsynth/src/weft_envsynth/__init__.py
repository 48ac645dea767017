"""weft-envsynth."""

__all__: list[str] = []
