"""A rich progress bar that is a no-op when disabled or when stdout is not a terminal."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager


@contextmanager
def progress_bar(
    total: int, description: str, *, enabled: bool = True
) -> Iterator[Callable[[], None]]:
    if not enabled or total == 0:
        yield lambda: None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        transient=False,
    ) as progress:
        task = progress.add_task(description, total=total)
        yield lambda: progress.advance(task)
