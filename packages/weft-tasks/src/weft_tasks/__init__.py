"""weft-tasks."""

__all__: list[str] = []
