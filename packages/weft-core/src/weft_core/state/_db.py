"""Capture a SQLite database as `{table: {primary key: row}}`, opened read-only."""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import stat
from collections.abc import Collection
from pathlib import Path
from typing import Any

from pydantic import Field

from weft_core._model import WeftModel
from weft_core.exceptions import UserError, WeftRuntimeError

# Tables that belong to SQLite or to the migration tool, never to the environment's state.
_SKIPPED_EXACT = frozenset({"alembic_version"})
_SKIPPED_PREFIX = "sqlite_"
# Blobs up to this size keep their bytes (as hex) so checks can compare them; larger ones are hashed.
BLOB_HEX_LIMIT = 64
_ROWID_ALIAS = "__weft_rowid__"


class StateError(UserError):
    """A state location is unusable: a missing file, not a SQLite DB, not a directory."""


class StateCaptureError(WeftRuntimeError):
    """Reading a valid state location failed (e.g. the DB is locked or a table is unreadable)."""


class TableSchema(WeftModel):
    columns: list[str] = Field(description="Column names in declaration order.")
    primary_key: list[str] = Field(
        default_factory=list,
        description="Primary-key columns; empty means rows are keyed by rowid.",
    )


class DBState(WeftModel):
    """One SQLite database: `tables[table][key] = row`.

    Keys are strings: the primary-key value for a one-column key, the canonical JSON list of the
    values for a composite key, the rowid for a table without a primary key. BLOB values are
    `hex:<hex>` up to 64 bytes and `sha256:<hex>` beyond.
    """

    tables: dict[str, dict[str, dict[str, Any]]] = Field(default_factory=dict)
    schemas: dict[str, TableSchema] = Field(default_factory=dict)
    source: str | None = Field(default=None, description="Where it was captured from.")
    uncaptured: list[str] = Field(
        default_factory=list,
        description="Tables the file holds that a capture limited to some tables left out; "
        "they exist (an error naming the known tables lists them) but their rows were not read.",
    )

    def __contains__(self, table: object) -> bool:
        return table in self.tables

    def __getitem__(self, table: str) -> dict[str, dict[str, Any]]:
        return self.tables[table]

    @property
    def table_names(self) -> list[str]:
        return sorted({*self.tables, *self.uncaptured})

    def rows(self, table: str) -> list[dict[str, Any]]:
        return list(self.tables.get(table, {}).values())

    def columns(self, table: str) -> list[str]:
        schema = self.schemas.get(table)
        if schema is not None:
            return schema.columns
        rows = self.tables.get(table) or {}
        return list(next(iter(rows.values()), {}).keys())

    def summary(self) -> dict[str, int]:
        """Row count per table."""
        return {name: len(rows) for name, rows in sorted(self.tables.items())}


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def blob_repr(data: bytes) -> str:
    if len(data) <= BLOB_HEX_LIMIT:
        return "hex:" + data.hex()
    return "sha256:" + hashlib.sha256(data).hexdigest()


def _value(v: Any) -> Any:
    if isinstance(v, bytes | memoryview):
        return blob_repr(bytes(v))
    return v


def row_key(values: list[Any]) -> str:
    """The stable string key of a row from its primary-key values."""
    if len(values) == 1:
        v = values[0]
        if isinstance(v, str):
            return v
        return str(v) if type(v) is int else json.dumps(v)
    return json.dumps(values, separators=(",", ":"), ensure_ascii=False)


def _connect(path: Path, *, immutable: bool) -> sqlite3.Connection:
    try:
        mode = os.stat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):
        raise StateError(f"{path}: no such SQLite file") from None
    if not stat.S_ISREG(mode):
        raise StateError(f"{path}: not a file")
    # A file: URI so the DB is opened read-only (or immutable, for frozen snapshots): capture can
    # never create, lock for writing, or modify the file it reads. abspath, not resolve(): a
    # URI needs an absolute path, not one without symlinks (resolve() stats every component,
    # in Python, on every capture).
    uri = Path(os.path.abspath(path)).as_uri() + ("?immutable=1" if immutable else "?mode=ro")
    try:
        conn = sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False)
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except sqlite3.DatabaseError as exc:
        raise StateError(f"{path}: not a readable SQLite database ({exc})") from None
    return conn


def _user_tables(conn: sqlite3.Connection) -> list[str]:
    names = [
        r[0]
        for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
    ]
    return [n for n in names if n not in _SKIPPED_EXACT and not n.startswith(_SKIPPED_PREFIX)]


def _primary_key(conn: sqlite3.Connection, table: str) -> list[str]:
    info = conn.execute(f"PRAGMA table_info({_quote(table)})").fetchall()
    pk = sorted((r[5], r[1]) for r in info if r[5])
    return [name for _, name in pk]


def _capture_table(
    conn: sqlite3.Connection, table: str
) -> tuple[TableSchema, dict[str, dict[str, Any]]]:
    pk = _primary_key(conn, table)
    if pk:
        order = ", ".join(_quote(c) for c in pk)
        cur = conn.execute(
            f"SELECT _rowid_ AS {_ROWID_ALIAS}, * FROM {_quote(table)} ORDER BY {order}"
        )
    else:
        cur = conn.execute(f"SELECT _rowid_ AS {_ROWID_ALIAS}, * FROM {_quote(table)} ORDER BY 1")
    columns = [d[0] for d in cur.description][1:]
    rows: dict[str, dict[str, Any]] = {}
    for raw in cur:
        rowid = raw[0]
        values = raw[1:]
        if any(type(v) is bytes for v in values):
            values = tuple(_value(v) for v in values)
        row = dict(zip(columns, values, strict=True))
        key_values = [row[c] for c in pk]
        # SQLite lets non-integer primary keys hold NULL; such rows are only unique by rowid.
        if not pk or any(v is None for v in key_values):
            key = f"rowid:{rowid}" if pk else str(rowid)
        else:
            key = row_key(key_values)
        rows[key] = row
    return TableSchema(columns=columns, primary_key=pk), rows


def _capture_without_rowid(
    conn: sqlite3.Connection, table: str
) -> tuple[TableSchema, dict[str, dict[str, Any]]]:
    pk = _primary_key(conn, table)
    order = ", ".join(_quote(c) for c in pk)
    cur = conn.execute(f"SELECT * FROM {_quote(table)} ORDER BY {order}")
    columns = [d[0] for d in cur.description]
    rows = {}
    for raw in cur:
        row = dict(zip(columns, [_value(v) for v in raw], strict=True))
        rows[row_key([row[c] for c in pk])] = row
    return TableSchema(columns=columns, primary_key=pk), rows


def capture_db(
    sqlite_path: str | os.PathLike[str],
    *,
    immutable: bool = False,
    tables: Collection[str] | None = None,
) -> DBState:
    """Read every user table of the SQLite file at `sqlite_path` into a `DBState`.

    The file is opened read-only (`mode=ro`), or with `immutable=True` for frozen snapshots that
    no process writes any more (no locking at all; a WAL file is then ignored). All tables are read
    in one read transaction, so a live DB gives a consistent picture. With `tables`, only those
    are read (a verifier whose checks name a few tables of a wide schema); the others are listed
    in `uncaptured`.
    """
    path = Path(sqlite_path)
    conn = _connect(path, immutable=immutable)
    state = DBState(source=str(path))
    try:
        conn.execute("BEGIN")
        for table in _user_tables(conn):
            if tables is not None and table not in tables:
                state.uncaptured.append(table)
                continue
            try:
                try:
                    schema, rows = _capture_table(conn, table)
                except sqlite3.OperationalError as exc:
                    if "_rowid_" not in str(exc) and "no such column" not in str(exc):
                        raise
                    schema, rows = _capture_without_rowid(conn, table)
            except sqlite3.DatabaseError as exc:
                raise StateCaptureError(f"{path}: cannot read table {table!r}: {exc}") from None
            state.tables[table] = rows
            state.schemas[table] = schema
        conn.execute("COMMIT")
    except sqlite3.DatabaseError as exc:
        raise StateCaptureError(f"{path}: cannot read database: {exc}") from None
    finally:
        conn.close()
    return state
