"""SQL tools of an EnvBundle (weft_envsynth.sqlsem): the session's own tables live in the session
DB beside the bundle's, which the statements can neither see nor touch (an SQLite authorizer)."""

from __future__ import annotations

import re
import sqlite3
from typing import Any

from weft_core.binding import current_binding

from .runtime import BUNDLE_DIR, ToolFailure

_ALLOWED = {
    "select": {"SELECT", "WITH"},
    "write": {"INSERT", "UPDATE", "DELETE", "REPLACE"},
    "create": {"CREATE"},
    "any": {"SELECT", "WITH", "INSERT", "UPDATE", "DELETE", "REPLACE", "CREATE", "DROP", "ALTER"},
}
_KIND_WORDS = {"select": "SELECT", "write": "INSERT, UPDATE or DELETE", "create": "CREATE TABLE"}


def _bundle_tables() -> frozenset[str]:
    """The bundle's own tables (and bookkeeping), hidden from the session's SQL.

    Read on every statement, not memoized: a process-wide memo makes MegaMCP's screening cap the
    whole bundle at a few sessions per process (a global cache), for a read of sqlite_master
    that costs less than the statement."""
    names = {"weft_cwd", "alembic_version"}
    seed = BUNDLE_DIR / "seed.sqlite"
    if seed.exists():
        conn = sqlite3.connect(f"file:{seed}?mode=ro", uri=True)
        try:
            names |= {
                r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")
            }
        finally:
            conn.close()
    return frozenset(n.lower() for n in names)


def _hidden(name: str | None) -> bool:
    # SQLite's own schema tables stay reachable: a CREATE TABLE writes sqlite_master. The
    # runtime's bookkeeping (weft_cwd, the weft_vcs_* repository) is the bundle's, not the user's.
    low = str(name).lower()
    return bool(name) and (low in _bundle_tables() or low.startswith(("weft_vcs_", "weft_graph_")))


def _authorize(action: int, arg1: str | None, arg2: str | None, db: str | None, _: Any) -> int:
    if action in (sqlite3.SQLITE_ATTACH, sqlite3.SQLITE_DETACH, sqlite3.SQLITE_PRAGMA):
        return sqlite3.SQLITE_DENY
    if action in (sqlite3.SQLITE_READ, sqlite3.SQLITE_UPDATE, sqlite3.SQLITE_INSERT,
                  sqlite3.SQLITE_DELETE, sqlite3.SQLITE_DROP_TABLE, sqlite3.SQLITE_ALTER_TABLE,
                  sqlite3.SQLITE_CREATE_TABLE) and _hidden(arg1 if action != sqlite3.SQLITE_ALTER_TABLE else arg2):  # fmt: skip
        return sqlite3.SQLITE_DENY
    return sqlite3.SQLITE_OK


def _connect() -> sqlite3.Connection:
    conn = sqlite3.connect(str(current_binding().db_path), timeout=30)
    conn.row_factory = sqlite3.Row
    return conn


def user_tables(conn: sqlite3.Connection) -> list[str]:
    rows = conn.execute("SELECT name FROM sqlite_master WHERE type='table' ORDER BY name")
    return [r[0] for r in rows if not _hidden(r[0]) and not str(r[0]).startswith("sqlite_")]


def _statement(verb: str, statement: Any) -> str:
    if not isinstance(statement, str) or not statement.strip():
        raise ToolFailure("invalid_arguments", "the SQL statement must be a non-empty string")
    text = statement.strip().rstrip(";").strip()
    if ";" in re.sub(r"'[^']*'", "", text):
        raise ToolFailure("invalid_query", "only one SQL statement per call")
    first = text.split(None, 1)[0].upper()
    if first not in _ALLOWED[verb] or (
        verb == "create" and not re.match(r"(?i)create\s+table", text)
    ):
        raise ToolFailure(
            "invalid_query", f"only {_KIND_WORDS.get(verb, 'SQL')} statements are allowed here"
        )
    return text


_DDL = re.compile(
    r"(?is)^(create|drop|alter)\s+(?:(?:temp|temporary|unique|virtual)\s+)?"
    r"(table|index|view|trigger)\s+(?:if\s+(?:not\s+)?exists\s+)?"
    r'("[^"]+"|`[^`]+`|\[[^\]]+\]|[\w.]+)'
)
_DONE = {"create": "created", "drop": "dropped", "alter": "altered"}


def _schema_change(text: str) -> str:
    """What a schema statement did, in words ("Table notes created successfully"): a tool that
    changes the schema answers a confirmation, as a write is confirmed, not an empty result."""
    m = _DDL.match(text)
    if m is None:
        return "Schema changed successfully"
    verb, kind, name = m.group(1).lower(), m.group(2).lower(), m.group(3).strip('"`[]')
    return f"{kind.capitalize()} {name} {_DONE[verb]} successfully"


def sql_tool(verb: str, statement: Any = None, table: Any = None) -> dict[str, Any]:
    """Run one SQL tool call on the session's own tables."""
    conn = _connect()
    try:
        if verb == "tables":
            return {"tables": [{"name": t} for t in user_tables(conn)]}
        if verb == "describe":
            if not isinstance(table, str) or table not in user_tables(conn):
                raise ToolFailure("not_found", f"no such table: {table}", 404)
            cols = [dict(r) for r in conn.execute(f'PRAGMA table_info("{table}")')]
            return {"table": table, "columns": cols}
        text = _statement(verb, statement)
        conn.set_authorizer(_authorize)
        try:
            cur = conn.execute(text)
            if cur.description is not None:
                rows = [dict(r) for r in cur.fetchall()]
                conn.commit()
                return {"rows": rows, "count": len(rows)}
            conn.commit()
        except sqlite3.Error as exc:
            raise ToolFailure("invalid_query", f"SQL error: {exc}") from None
        if text.split(None, 1)[0].upper() in {"CREATE", "DROP", "ALTER"}:
            return {
                "ok": True,
                "message": _schema_change(text),
                "statement": text.split("(", 1)[0].strip(),
            }
        return {"affected_rows": cur.rowcount}
    finally:
        conn.close()
