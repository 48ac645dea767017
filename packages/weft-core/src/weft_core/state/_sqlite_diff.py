"""Diff two SQLite files in SQL, over primary keys, with a cap on the rows it returns.

`diff_db(capture_db(a), capture_db(b))` reads both databases whole into Python; a checkpoint
diff runs after every atomic-task turn of every rollout, so this compares them inside SQLite
instead (the before file ATTACHed to the after one): rows only in one side are inserts or
deletes, rows on both sides whose cells differ (`IS NOT`, so NULLs compare as values) are
updates, and only changed rows ever reach Python. The result has the shape and keys `diff_db`
gives; past `max_rows` rows the remaining ones are only counted (`TableDiff.omitted`).
"""

from __future__ import annotations

import sqlite3
from os import PathLike
from pathlib import Path
from typing import Any

from weft_core.state._db import (
    StateCaptureError,
    StateError,
    _connect,
    _primary_key,
    _quote,
    _user_tables,
    _value,
    capture_db,
    row_key,
)
from weft_core.state._diff import RowUpdate, StateDiff, TableDiff, _diff_table, _field_changes

_KINDS = ("inserts", "updates", "deletes")


class _Budget:
    """Rows still allowed into the diff (None: no cap)."""

    def __init__(self, max_rows: int | None) -> None:
        self.left = max_rows

    def limit(self) -> int:
        return -1 if self.left is None else self.left  # SQLite: LIMIT -1 is no limit

    def take(self, n: int) -> None:
        if self.left is not None:
            self.left = max(0, self.left - n)


def _columns(conn: sqlite3.Connection, schema: str, table: str) -> list[str]:
    return [r[1] for r in conn.execute(f"PRAGMA {schema}.table_info({_quote(table)})")]


def _has_rowid(conn: sqlite3.Connection, schema: str, table: str) -> bool:
    try:
        conn.execute(f"SELECT _rowid_ FROM {schema}.{_quote(table)} LIMIT 0")
    except sqlite3.OperationalError:
        return False  # a WITHOUT ROWID table
    return True


class _Table:
    """One table present on both sides with the same columns and primary key."""

    def __init__(self, conn: sqlite3.Connection, name: str, columns: list[str], pk: list[str]):
        self.conn, self.name, self.columns, self.pk = conn, name, columns, pk
        self.rowid = _has_rowid(conn, "main", name) and _has_rowid(conn, "b", name)
        q = _quote(name)
        self.after, self.before = f"main.{q}", f"b.{q}"
        if pk:
            self.join = " AND ".join(f"a.{_quote(c)} = o.{_quote(c)}" for c in pk)
            self.order = ", ".join(f"a.{_quote(c)}" for c in pk)
        else:
            self.join, self.order = "a._rowid_ = o._rowid_", "a._rowid_"
        self.head = "a._rowid_, " if self.rowid else "NULL, "
        self.cells = {side: ", ".join(f"{side}.{_quote(c)}" for c in columns) for side in "ao"}

    def key(self, rowid: Any, row: dict[str, Any]) -> str:
        values = [row[c] for c in self.pk]
        if not self.pk or any(v is None for v in values):
            # As capture_db keys them: by rowid without a key, or where a key value is NULL.
            return f"rowid:{rowid}" if self.pk else str(rowid)
        return row_key(values)

    def _row(self, values: tuple[Any, ...]) -> dict[str, Any]:
        return {c: _value(v) for c, v in zip(self.columns, values, strict=True)}

    def _fetch(self, sql: str, budget: _Budget) -> tuple[list[tuple[Any, ...]], int]:
        """(rows within the budget, rows left out) of one query."""
        rows = self.conn.execute(f"{sql} LIMIT ?", (budget.limit(),)).fetchall()
        omitted = 0
        if budget.left is not None and len(rows) >= budget.left:
            total = self.conn.execute(f"SELECT count(*) FROM ({sql})").fetchone()[0]
            omitted = total - len(rows)
        budget.take(len(rows))
        return rows, omitted

    def diff(self, budget: _Budget) -> TableDiff:
        result = TableDiff()
        only = (
            "SELECT {head}{cells} FROM {x} AS a WHERE NOT EXISTS (SELECT 1 FROM {y} AS o WHERE {j})"
        )
        inserts = only.format(
            head=self.head, cells=self.cells["a"], x=self.after, y=self.before, j=self.join
        )
        deletes = only.format(
            head=self.head, cells=self.cells["a"], x=self.before, y=self.after, j=self.join
        )
        differs = " OR ".join(f"a.{_quote(c)} IS NOT o.{_quote(c)}" for c in self.columns)
        updates = (
            f"SELECT {self.head}{self.cells['a']}, {self.cells['o']} FROM {self.after} AS a JOIN {self.before} AS o "
            f"ON {self.join} WHERE {differs or '0'}"
        )
        n = len(self.columns)
        rows, omitted = self._fetch(f"{inserts} ORDER BY {self.order}", budget)
        for raw in rows:
            row = self._row(raw[1:])
            result.inserts[self.key(raw[0], row)] = row
        result.omitted["inserts"] = omitted
        rows, omitted = self._fetch(f"{updates} ORDER BY {self.order}", budget)
        for raw in rows:
            new, old = self._row(raw[1 : 1 + n]), self._row(raw[1 + n :])
            changed = _field_changes(old, new)
            if changed:
                result.updates[self.key(raw[0], new)] = RowUpdate(old=old, new=new, changed=changed)
        result.omitted["updates"] = omitted
        rows, omitted = self._fetch(f"{deletes} ORDER BY {self.order}", budget)
        for raw in rows:
            row = self._row(raw[1:])
            result.deletes[self.key(raw[0], row)] = row
        result.omitted["deletes"] = omitted
        result.inserts = dict(sorted(result.inserts.items()))
        result.updates = dict(sorted(result.updates.items()))
        result.deletes = dict(sorted(result.deletes.items()))
        result.omitted = {k: v for k, v in result.omitted.items() if v}
        return result


def _capped(diff: TableDiff, budget: _Budget) -> TableDiff:
    """A diff made in Python (a table whose schema changed) cut to the budget."""
    out = TableDiff()
    for kind in _KINDS:
        items = list(getattr(diff, kind).items())
        keep = items if budget.left is None else items[: budget.left]
        budget.take(len(keep))
        setattr(out, kind, dict(keep))
        if len(items) > len(keep):
            out.omitted[kind] = len(items) - len(keep)
    return out


def diff_sqlite(
    before: str | PathLike[str] | None,
    after: str | PathLike[str],
    *,
    max_rows: int | None = None,
) -> StateDiff:
    """The changes that turn the SQLite file `before` (None: an empty database) into `after`.

    Both files are opened read-only and must not be written meanwhile (checkpoint copies).
    Equal to `diff_db(capture_db(before), capture_db(after))` when nothing is capped. With
    `max_rows`, at most that many changed rows are returned in all, tables in name order and
    inserts, updates, deletes in key order within each; the rest are counted in `omitted`.
    A table whose columns or primary key changed is compared in Python, whole.
    """
    after_path = Path(after)
    conn = _connect(after_path, immutable=False)
    budget = _Budget(max_rows)
    try:
        if before is None:
            conn.execute("ATTACH DATABASE ':memory:' AS b")
        else:
            before_path = Path(before)
            if not before_path.is_file():
                raise StateError(f"{before_path}: no such SQLite file")
            uri = before_path.resolve().as_uri() + "?mode=ro"
            try:
                conn.execute("ATTACH DATABASE ? AS b", (uri,))
                conn.execute("SELECT count(*) FROM b.sqlite_master").fetchone()
            except sqlite3.DatabaseError as exc:
                raise StateError(f"{before_path}: not a readable SQLite database ({exc})") from None
        conn.execute("BEGIN")
        after_tables = set(_user_tables(conn))
        before_tables = {
            r[0]
            for r in conn.execute("SELECT name FROM b.sqlite_master WHERE type = 'table'")
            if not r[0].startswith("sqlite_") and r[0] != "alembic_version"
        }
        diff = StateDiff(
            tables_added=sorted(after_tables - before_tables),
            tables_removed=sorted(before_tables - after_tables),
        )
        whole: tuple[Any, Any] | None = None
        for table in sorted(after_tables | before_tables):
            columns = _columns(conn, "main", table) if table in after_tables else None
            pk = _primary_key(conn, table) if table in after_tables else None
            same = (
                table in before_tables
                and columns == _columns(conn, "b", table)
                and pk == _before_pk(conn, table)
            )
            if same and columns is not None and pk is not None:
                table_diff = _Table(conn, table, columns, pk).diff(budget)
            else:
                if whole is None:
                    start = None if before is None else capture_db(before)
                    whole = (start, capture_db(after_path))
                old = {} if whole[0] is None else whole[0].tables.get(table, {})
                table_diff = _capped(_diff_table(old, whole[1].tables.get(table, {})), budget)
            if not table_diff.empty:
                diff.tables[table] = table_diff
        conn.execute("COMMIT")
    except sqlite3.DatabaseError as exc:
        raise StateCaptureError(f"{after_path}: cannot diff against {before}: {exc}") from None
    finally:
        conn.close()
    return diff


def _before_pk(conn: sqlite3.Connection, table: str) -> list[str]:
    info = conn.execute(f"PRAGMA b.table_info({_quote(table)})").fetchall()
    return [name for _, name in sorted((r[5], r[1]) for r in info if r[5])]
