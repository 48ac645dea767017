"""Schema checks of grounded rows and building a resettable initial DB from them.

Rows are checked against the entity model (known table and columns, enum values, field types)
and then against the bundle's real SQLite schema (NOT NULL, UNIQUE, CHECK and FOREIGN KEY
constraints) by inserting them into a copy of the seed's schema. A row that fails is dropped and
reported with its table and the constraint; the DB file is written to a temporary name and
renamed into place only when it is complete.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import tempfile
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from weft_core.models import Entity, EntityModel

Rows = dict[str, list[dict[str, Any]]]

_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool, int),
    "date": (str,),
    "datetime": (str,),
}


class SchemaIssue(BaseModel):
    mcp: str
    table: str
    message: str
    row: dict[str, Any] | None = None


def check_rows(mcp: str, model: EntityModel, rows: Rows) -> tuple[Rows, list[SchemaIssue]]:
    """Rows that fit the entity model, and an issue for each one that does not."""
    ok: Rows = {}
    issues: list[SchemaIssue] = []
    for table, items in rows.items():
        try:
            entity = model.entity(table)
        except KeyError:
            issues.append(SchemaIssue(mcp=mcp, table=table, message=f"unknown table {table!r}"))
            continue
        for row in items:
            problem = _row_problem(entity, row)
            if problem:
                issues.append(SchemaIssue(mcp=mcp, table=table, message=problem, row=row))
            else:
                ok.setdefault(table, []).append(row)
    return ok, issues


def _row_problem(entity: Entity, row: dict[str, Any]) -> str | None:
    names = {f.name for f in entity.fields}
    unknown = sorted(set(row) - names)
    if unknown:
        return f"{entity.name}: unknown column(s) {unknown}"
    for f in entity.fields:
        value = row.get(f.name)
        if value is None:
            if not f.nullable and not f.primary_key:
                return f"{entity.name}.{f.name} may not be null"
            continue
        if f.enum and str(value) not in f.enum:
            return f"{entity.name}.{f.name}={value!r} is not one of {f.enum}"
        kinds = _TYPES.get(f.type)
        if kinds and not isinstance(value, kinds):
            return f"{entity.name}.{f.name}={value!r} is not a {f.type}"
    return None


def user_tables(con: sqlite3.Connection) -> list[str]:
    names = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")]
    return [n for n in names if not n.startswith("sqlite_") and n != "alembic_version"]


def build_db(mcp: str, seed: Path, rows: Rows, dest: Path) -> list[SchemaIssue]:
    """Write `dest`: the seed's schema holding exactly `rows`. Rows that violate a constraint
    are left out and reported; dependants of a left-out row are left out with it."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(dir=dest.parent, prefix=f".{dest.name}.", suffix=".tmp")
    os.close(fd)
    tmp = Path(tmp_name)
    issues: list[SchemaIssue] = []
    try:
        shutil.copyfile(seed, tmp)
        con = sqlite3.connect(tmp)
        try:
            # A private temp file, renamed into place only when whole: an in-memory journal (a
            # failed INSERT still rolls back) and no per-commit sync (the DELETE, INSERT and
            # VACUUM transactions each synced); one fsync before the rename makes it durable.
            con.execute("PRAGMA journal_mode = MEMORY")
            con.execute("PRAGMA synchronous = OFF")
            con.execute("PRAGMA foreign_keys = OFF")
            tables = user_tables(con)
            for t in tables:
                con.execute(f'DELETE FROM "{t}"')
            for table, items in rows.items():
                if table not in tables:
                    issues.append(
                        SchemaIssue(
                            mcp=mcp, table=table, message=f"table {table!r} is not in the schema"
                        )
                    )
                    continue
                for row in items:
                    cols = ", ".join(f'"{c}"' for c in row)
                    marks = ", ".join("?" for _ in row)
                    try:
                        con.execute(
                            f'INSERT INTO "{table}" ({cols}) VALUES ({marks})', list(row.values())
                        )
                    except sqlite3.Error as exc:
                        issues.append(
                            SchemaIssue(mcp=mcp, table=table, message=f"{table}: {exc}", row=row)
                        )
            issues += _drop_dangling(mcp, con)
            con.commit()
            bad = con.execute("PRAGMA integrity_check").fetchone()[0]
            if bad != "ok":
                issues.append(SchemaIssue(mcp=mcp, table="*", message=f"integrity check: {bad}"))
            con.execute("VACUUM")
        finally:
            con.close()
        with tmp.open("rb") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, dest)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return issues


def _drop_dangling(mcp: str, con: sqlite3.Connection) -> list[SchemaIssue]:
    """Delete rows whose foreign keys point nowhere, until none are left."""
    issues: list[SchemaIssue] = []
    for _ in range(10):
        bad = con.execute("PRAGMA foreign_key_check").fetchall()
        if not bad:
            break
        for table, rowid, parent, _ in bad:
            issues.append(
                SchemaIssue(
                    mcp=mcp,
                    table=table,
                    message=f"{table} row {rowid} references a missing {parent}",
                )
            )
            con.execute(f'DELETE FROM "{table}" WHERE rowid = ?', (rowid,))
    return issues


def read_table(db: Path, table: str) -> list[dict[str, Any]]:
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        con.row_factory = sqlite3.Row
        return [dict(r) for r in con.execute(f'SELECT * FROM "{table}"')]
    finally:
        con.close()
