"""Progress of a rollout batch on the Weft console (rich bar on a terminal, one line in CI,
nothing when quiet or disabled)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any


@contextmanager
def progress_bar(
    total: int, description: str, *, enabled: bool = True
) -> Iterator[Callable[[], None]]:
    if not enabled or total == 0:
        yield lambda: None
        return
    from weft_core.console import progress

    bar: Any
    with progress(total=total, description=description) as bar:
        yield bar.advance
