"""SQLite settings for hosted sessions' DBs: per-session scratch state, made durable by checkpoints.

After a killed worker, master or host, recovery resumes a session from its local DB file (every
acknowledged write is in it; see recovery.py), so that file must survive a kill -9 at any
instant. A machine crash is the checkpoints' job, so the per-commit fsyncs of SQLite's defaults
buy nothing here and cost a large share of a call. Every SQLAlchemy connection this process
opens on a session DB (`<groups dir>/<group>/<mcp>/state.sqlite`) gets:

- `synchronous=OFF`: commits reach the OS page cache, not the disk; a killed process loses
  nothing that was committed (the page cache outlives it), only a machine crash can;
- `journal_mode=PERSIST`: the rollback journal is a real file (a process killed
  mid-transaction leaves a hot journal that the next open rolls back, so the file is never
  torn), kept between transactions with a zeroed header, so a commit creates and deletes no
  file. (`MEMORY`, used before, let a kill mid-transaction tear the file.)

Checkpoints, freeze, snapshots and forks copy the file while no call of the session runs (or
under a SQLite read lock), so every copy is a committed state. The listener is process-wide
because hosted modules create their own engines; it touches only files under a registered
groups dir, never the registry or anything else.
"""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path
from typing import Any

from sqlalchemy import event
from sqlalchemy.engine import Engine

from weft_megamcp._session import DB_NAME

_roots: set[str] = set()
_lock = threading.Lock()
_installed = False

PRAGMAS = ("PRAGMA synchronous=OFF", "PRAGMA journal_mode=PERSIST")


def _on_connect(dbapi_conn: Any, _record: Any) -> None:
    if not isinstance(dbapi_conn, sqlite3.Connection) or not _roots:
        return
    row = dbapi_conn.execute("PRAGMA database_list").fetchone()
    path = row[2] if row else ""
    if path.endswith(DB_NAME) and any(path.startswith(r) for r in _roots):
        for pragma in PRAGMAS:
            dbapi_conn.execute(pragma)


def apply_to_sessions_under(groups_dir: Path) -> None:
    """Give every session DB under `groups_dir` the scratch settings (idempotent)."""
    global _installed
    with _lock:
        _roots.add(str(groups_dir.resolve()) + "/")
        if not _installed:
            event.listen(Engine, "connect", _on_connect)
            _installed = True
