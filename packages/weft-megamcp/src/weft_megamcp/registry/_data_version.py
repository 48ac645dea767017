"""Whether a SQLite registry file changed since a moment: `PRAGMA data_version`.

The latest version of an MCP may be registered by another worker process sharing the file,
so it cannot be cached outright; asking the DB on every group creation (an ORM session and a
MAX() query) was a few % of a worker's CPU during composition. SQLite's data_version, read on
a connection of its own, changes whenever any other connection (of this process or another)
commits, so an answer remembered with the stamp it was read under stays valid while the stamp
does.
"""

from __future__ import annotations

import sqlite3
import threading

from sqlalchemy import make_url


class DataVersion:
    """Callable: the SQLite file's current data version, or None where there is no file to
    watch (another database, an in-memory one); None means "ask the DB"."""

    def __init__(self, url: str) -> None:
        self._lock = threading.Lock()
        self._con: sqlite3.Connection | None = None
        parsed = make_url(url)
        path = parsed.database or ""
        on_disk = path not in ("", ":memory:") and not path.startswith("file:")
        if parsed.get_backend_name() == "sqlite" and on_disk:
            # autocommit: a PRAGMA read never leaves a transaction open on the file
            self._con = sqlite3.connect(path, check_same_thread=False, isolation_level=None)

    def __call__(self) -> int | None:
        if self._con is None:
            return None
        with self._lock:
            row = self._con.execute("PRAGMA data_version").fetchone()
        return int(row[0])

    def close(self) -> None:
        with self._lock:
            if self._con is not None:
                self._con.close()
                self._con = None
