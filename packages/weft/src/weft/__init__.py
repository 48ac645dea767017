"""weft: the umbrella package."""

__all__: list[str] = []
