"""Console output for long loops and reports: rich progress bars, summary tables, a quiet mode.

`WEFT_QUIET=1` (or `set_quiet(True)`, or a CLI's `--quiet`) silences everything but errors. On a
non-terminal (CI logs, pipes) or with `CI` set, progress never redraws: each loop prints one plain
line when it ends, and tables render as plain text without colour codes.
"""

from __future__ import annotations

import io
import os
import sys
import threading
import time
from collections.abc import AsyncIterable, AsyncIterator, Iterable, Iterator, Mapping, Sequence
from types import TracebackType
from typing import Any, Generic, TypeVar

from rich import box
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table

T = TypeVar("T")

_TRUE = {"1", "true", "yes", "on"}


def _env_flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in _TRUE


class WeftConsole:
    """A rich Console with Weft's quiet and CI rules.

    `quiet=None` follows WEFT_QUIET; `live=None` draws live progress only on an interactive
    terminal outside CI.
    """

    def __init__(
        self,
        *,
        quiet: bool | None = None,
        live: bool | None = None,
        file: Any = None,
        stderr_file: Any = None,
        width: int | None = None,
        force_terminal: bool | None = None,
    ) -> None:
        self._quiet = quiet
        self.console = Console(
            file=file, width=width, highlight=False, soft_wrap=False, force_terminal=force_terminal
        )
        self.error_console = Console(file=stderr_file or sys.stderr, width=width, highlight=False)
        self._live = live

    @property
    def quiet(self) -> bool:
        return self._quiet if self._quiet is not None else _env_flag("WEFT_QUIET")

    @quiet.setter
    def quiet(self, value: bool | None) -> None:
        self._quiet = value

    @property
    def live(self) -> bool:
        if self._live is not None:
            return self._live
        return self.console.is_terminal and self.console.is_interactive and not _env_flag("CI")

    def print(self, *objects: Any, **kwargs: Any) -> None:
        if not self.quiet:
            self.console.print(*objects, **kwargs)

    def error(self, message: str) -> None:
        """Always printed (to stderr), quiet or not: one actionable line."""
        self.error_console.print(message, markup=False, highlight=False)

    def progress(
        self,
        iterable: Iterable[T] | AsyncIterable[T] | None = None,
        total: int | None = None,
        description: str = "",
    ) -> ProgressTracker[T]:
        return ProgressTracker(self, iterable, total=total, description=description)

    def summary_table(
        self,
        title: str,
        columns: Sequence[str] | Sequence[Any] | None = None,
        rows: Iterable[Sequence[Any] | Mapping[str, Any]] = (),
        *,
        show: bool = True,
    ) -> Table:
        table = build_table(title, columns, rows, plain=not self.console.is_terminal)
        if show:
            self.print(table)
        return table


class ProgressTracker(Generic[T]):
    """Progress over an iterable (sync or async) or a manual count; also a context manager.

    for item in progress(items, description="certify"): ...
    async for item in progress(agen, total=n, description="rollouts"): ...
    with progress(total=n, description="synthesize") as p: ...; p.advance()
    """

    def __init__(
        self,
        owner: WeftConsole,
        iterable: Iterable[T] | AsyncIterable[T] | None,
        *,
        total: int | None,
        description: str,
    ) -> None:
        if total is None and iterable is not None and hasattr(iterable, "__len__"):
            total = len(iterable)  # type: ignore[arg-type]
        self._owner = owner
        self._iterable = iterable
        self.total = total
        self.description = description or "working"
        self.completed = 0
        self._lock = threading.Lock()
        self._started: float | None = None
        self._progress: Progress | None = None
        self._task: TaskID | None = None
        self._closed = False

    # -------------------------------------------------------------- lifecycle

    def start(self) -> ProgressTracker[T]:
        if self._started is not None:
            return self
        self._started = time.perf_counter()
        if not self._owner.quiet and self._owner.live:
            self._progress = Progress(
                SpinnerColumn(),
                TextColumn("[progress.description]{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                TimeRemainingColumn(),
                console=self._owner.console,
                transient=False,
            )
            self._progress.start()
            self._task = self._progress.add_task(self.description, total=self.total)
        return self

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._progress is not None:
            self._progress.stop()
        elif not self._owner.quiet and self._started is not None:
            # Without a live display, one line per loop keeps CI logs readable.
            elapsed = time.perf_counter() - self._started
            of = f"/{self.total}" if self.total is not None else ""
            self._owner.console.print(
                f"{self.description}: {self.completed}{of} done in {elapsed:.1f}s",
                markup=False,
                highlight=False,
            )

    def advance(self, n: int = 1) -> None:
        with self._lock:
            self.completed += n
        if self._progress is not None and self._task is not None:
            self._progress.update(self._task, advance=n)

    def set_total(self, total: int) -> None:
        self.total = total
        if self._progress is not None and self._task is not None:
            self._progress.update(self._task, total=total)

    def __enter__(self) -> ProgressTracker[T]:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    async def __aenter__(self) -> ProgressTracker[T]:
        return self.start()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # -------------------------------------------------------------- iteration

    def __iter__(self) -> Iterator[T]:
        if self._iterable is None or not isinstance(self._iterable, Iterable):
            raise TypeError("this progress wraps no (sync) iterable; use `async for` or advance()")
        self.start()
        try:
            for item in self._iterable:
                yield item
                self.advance()
        finally:
            self.close()

    async def __aiter__(self) -> AsyncIterator[T]:
        self.start()
        try:
            if isinstance(self._iterable, AsyncIterable):
                async for item in self._iterable:
                    yield item
                    self.advance()
            elif isinstance(self._iterable, Iterable):
                for item in self._iterable:
                    yield item
                    self.advance()
            else:
                raise TypeError("this progress wraps no iterable; use advance()")
        finally:
            self.close()


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def build_table(
    title: str,
    columns: Sequence[Any] | None,
    rows: Iterable[Sequence[Any] | Mapping[str, Any]],
    *,
    plain: bool = False,
) -> Table:
    """A rich Table. Rows are sequences (in `columns` order) or mappings (keyed by column name;
    with no `columns`, the keys of the first row, in order). `summary_table(title, rows)` also
    works: a list of rows given as `columns` is taken as the rows."""
    row_list = list(rows)
    if columns and not row_list and not isinstance(columns[0], str):
        row_list, columns = list(columns), None
    if columns is None:
        first = row_list[0] if row_list else {}
        if not isinstance(first, Mapping):
            raise ValueError(f"summary table {title!r}: rows are sequences, so columns are needed")
        columns = list(first.keys())
    names = [str(c) for c in columns]
    table = Table(title=title, box=box.ASCII if plain else box.SIMPLE_HEAVY, title_justify="left")
    for name in names:
        table.add_column(name, overflow="fold")
    for n, row in enumerate(row_list):
        if isinstance(row, Mapping):
            values = [row.get(name) for name in names]
        else:
            values = list(row)
            if len(values) != len(names):
                raise ValueError(
                    f"summary table {title!r}: row {n} has {len(values)} cells for {len(names)} columns"
                )
        table.add_row(*(_cell(v) for v in values))
    return table


def table_text(table: Table, width: int = 120) -> str:
    """A table as plain text (no colour codes), e.g. for a report file."""
    buffer = io.StringIO()
    Console(file=buffer, width=width, force_terminal=False, color_system=None).print(table)
    return buffer.getvalue()


_default: WeftConsole | None = None
_default_lock = threading.Lock()


def get_console() -> WeftConsole:
    """The process-wide console, created on first use (never at import)."""
    global _default
    with _default_lock:
        if _default is None:
            _default = WeftConsole()
        return _default


def set_console(console: WeftConsole | None) -> None:
    """Replace the process-wide console (tests, or a CLI writing elsewhere); None resets it."""
    global _default
    with _default_lock:
        _default = console


def set_quiet(quiet: bool | None = True) -> None:
    """Silence (True), unsilence (False), or follow WEFT_QUIET again (None)."""
    get_console().quiet = quiet


def is_quiet() -> bool:
    return get_console().quiet


def progress(
    iterable: Iterable[T] | AsyncIterable[T] | int | None = None,
    total: int | None = None,
    description: str = "",
) -> ProgressTracker[T]:
    """Progress on the process console; `progress(n)` is `progress(total=n)`."""
    source: Iterable[T] | AsyncIterable[T] | None
    if isinstance(iterable, int):
        source, total = None, iterable
    else:
        source = iterable
    return get_console().progress(source, total=total, description=description)


def summary_table(
    title: str,
    columns: Sequence[Any] | None = None,
    rows: Iterable[Sequence[Any] | Mapping[str, Any]] = (),
    *,
    show: bool = True,
) -> Table:
    """Print (unless quiet or show=False) and return a summary table."""
    return get_console().summary_table(title, columns, rows, show=show)


__all__ = [
    "ProgressTracker",
    "WeftConsole",
    "build_table",
    "get_console",
    "is_quiet",
    "progress",
    "set_console",
    "set_quiet",
    "summary_table",
    "table_text",
]
