"""Reading a session's DB and workspace independently of the backend under test."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sqlite3
from pathlib import Path
from typing import Any

from weft_core.models import Entity, EntityModel

Rows = dict[str, dict[Any, dict[str, Any]]]


def read_db(db_path: Path, model: EntityModel) -> Rows:
    """{table: {key: row}} for every entity table, values normalized to the entity's field types."""
    conn = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
    try:
        return _read(conn, model)
    finally:
        conn.close()


class DbReader:
    """`read_db` of one DB, read again only when the DB changed since the last read.

    Validation reads the whole DB before and after every call, and most calls change nothing
    (reads, refused calls); those reads were a sixth of certifying a bundle. One read-only
    connection is kept; SQLite's `PRAGMA data_version` changes when another connection commits,
    and the file's identity (device, inode, size, modification time) catches a file replaced or
    rewritten outside SQLite. Not caught (nor by SQLite's own page cache): a file rewritten in
    place, outside SQLite, to the same size within one tick of the file system's clock.

    Reads of an unchanged DB return the same objects (copying every row was half the cost of a
    read on large bundles): callers must not modify what they get. With `verify` (tests), every
    read also reads the DB afresh and raises `RuntimeError` if a caller changed the cached rows.
    """

    def __init__(self, db_path: Path, model: EntityModel, *, verify: bool = False) -> None:
        self.db_path = db_path
        self.model = model
        self.verify = verify
        self._conn: sqlite3.Connection | None = None
        self._file: tuple[int, int, int, int] | None = None
        self._version = -1
        self._rows: Rows = {}

    def read(self) -> Rows:
        st = os.stat(self.db_path)
        file = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
        if self._conn is None or file != self._file:
            # A file changed outside this connection's view: a new connection, so that no page
            # SQLite cached from the old contents is used either.
            self.close()
            self._conn = sqlite3.connect(f"file:{self.db_path}?mode=ro", uri=True)
            self._file = file
        version = int(self._conn.execute("PRAGMA data_version").fetchall()[0][0])  # no open read
        if version != self._version or not self._rows:
            self._rows = _read(self._conn, self.model)
            self._version = version
        elif self.verify and _read(self._conn, self.model) != self._rows:
            raise RuntimeError(f"{self.db_path}: rows read earlier were changed by a caller")
        return self._rows

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
        self._conn, self._file, self._version, self._rows = None, None, -1, {}


def _read(conn: sqlite3.Connection, model: EntityModel) -> Rows:
    out: Rows = {}
    for e in model.entities:
        try:
            cur = conn.execute(f'SELECT * FROM "{e.name}"')
        except sqlite3.OperationalError:
            continue
        cols = [d[0] for d in cur.description]
        table: dict[Any, dict[str, Any]] = {}
        for values in cur.fetchall():
            row = _normalize(e, dict(zip(cols, values, strict=True)))
            table[row.get(e.key)] = row
        out[e.name] = table
    return out


def _normalize(entity: Entity, row: dict[str, Any]) -> dict[str, Any]:
    types = {f.name: f.type for f in entity.fields}
    for k, v in list(row.items()):
        t = types.get(k)
        if v is None:
            continue
        if t == "boolean":
            row[k] = bool(v)
        elif t == "json" and isinstance(v, str):  # SQLAlchemy's JSON stores None as 'null' text
            with contextlib.suppress(ValueError):
                row[k] = json.loads(v)
        elif t == "number" and isinstance(v, int):
            row[k] = float(v)
    return row


def same_value(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return bool(a == b)
    if isinstance(a, int | float) and isinstance(b, int | float):
        return abs(float(a) - float(b)) < 1e-9
    return bool(a == b)


def same_row(returned: Any, stored: dict[str, Any]) -> str | None:
    """None when `returned` shows exactly the stored row; else what differs."""
    if not isinstance(returned, dict):
        return f"returned {type(returned).__name__}, not a row"
    for k, v in stored.items():
        if k not in returned:
            return f"field {k} missing from the result"
        if not same_value(returned[k], v):
            return f"field {k}: returned {returned[k]!r}, stored {v!r}"
    return None


def diff_rows(before: Rows, after: Rows) -> dict[str, dict[str, list[Any]]]:
    """Per table: inserted, deleted and updated keys."""
    out: dict[str, dict[str, list[Any]]] = {}
    for table in set(before) | set(after):
        b, a = before.get(table, {}), after.get(table, {})
        ins = [k for k in a if k not in b]
        dele = [k for k in b if k not in a]
        upd = [k for k in a if k in b and a[k] != b[k]]
        if ins or dele or upd:
            out[table] = {"inserted": ins, "deleted": dele, "updated": upd}
    return out


def read_workspace(root: Path) -> dict[str, str]:
    """{relative path: sha256} of every file under `root` ('dir/' entries for directories)."""
    out: dict[str, str] = {}
    if not root.exists():
        return out
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root).as_posix()
        if p.is_dir():
            out[rel + "/"] = ""
        elif p.is_file():
            out[rel] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out
