"""Reading a session's DB and workspace independently of the backend under test."""

from __future__ import annotations

import contextlib
import hashlib
import json
import sqlite3
from pathlib import Path
from typing import Any

from weft_core.models import Entity, EntityModel

Rows = dict[str, dict[Any, dict[str, Any]]]


def read_db(db_path: Path, model: EntityModel) -> Rows:
    """{table: {key: row}} for every entity table, values normalized to the entity's field types."""
    out: Rows = {}
    conn = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
    try:
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
    finally:
        conn.close()
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
