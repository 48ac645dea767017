"""Validation of SQL tools (sqlsem): behaviour checked against the session DB itself, read with
sqlite3 beside the tool (a statement's effect must be there, a refused one must leave none)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from weft_core.models import ToolSpec
from weft_envsynth._internal.jsonschema import schema_type
from weft_envsynth.sqlsem import SqlSemantics

_PROBE = "weft_probe"


def _other_required(tool: ToolSpec, given: dict[str, Any]) -> dict[str, Any]:
    """A value of each required argument a check does not set (a connection string, a database
    name): the check is about the statement, and a call without them is invalid, not wrong."""
    out: dict[str, Any] = {}
    for arg in tool.required:
        sch = tool.properties.get(arg)
        if arg in given or not isinstance(sch, dict):
            continue
        if isinstance(sch.get("enum"), list) and sch["enum"]:
            out[arg] = sch["enum"][0]
        elif "default" in sch:
            out[arg] = sch["default"]
        else:
            out[arg] = {"string": "validation", "integer": 1, "number": 1, "boolean": False,
                        "array": [], "object": {}}.get(schema_type(sch) or "string", "validation")  # fmt: skip
    return out


def _with_required(tool: ToolSpec, args: dict[str, Any]) -> dict[str, Any]:
    # Refusal checks too: a call refused only for a missing argument would pass for a wrong reason.
    return {**_other_required(tool, args), **args}


class SqlChecks:
    """Mixin of the validator: needs `call`, `record`, `expect_error` and the session `db`."""

    call: Any
    record: Any
    expect_error: Any
    db: Path

    def _sql(self, statement: str) -> list[tuple[Any, ...]]:
        conn = sqlite3.connect(str(self.db), timeout=30)
        try:
            rows = list(conn.execute(statement))
            conn.commit()
            return rows
        finally:
            conn.close()

    def _probe_table(self) -> None:
        self._sql(f"CREATE TABLE IF NOT EXISTS {_PROBE} (id INTEGER PRIMARY KEY, name TEXT)")
        if not self._sql(f"SELECT 1 FROM {_PROBE} WHERE name = 'seeded'"):
            self._sql(f"INSERT INTO {_PROBE} (name) VALUES ('seeded')")

    def _bundle_table(self) -> str | None:
        rows = self._sql("SELECT name FROM sqlite_master WHERE type='table' ORDER BY name")
        names = [r[0] for r in rows if not str(r[0]).startswith(("sqlite_", "weft_", "alembic"))]
        return names[0] if names else None

    async def _check(self, tool: ToolSpec, name: str, args: dict[str, Any], problem: Any) -> None:
        args = _with_required(tool, args)
        res = await self.call(tool.name, args)
        why = f"valid call failed: {res.text}" if res.is_error else problem(res.data)
        self.record(tool.name, name, "query", why is None, "runtime", why or "", args)

    async def sql_checks(self, tool: ToolSpec, sem: SqlSemantics) -> None:
        self._probe_table()
        arg = sem.statement_argument or sem.table_argument or ""
        if sem.verb == "tables":
            await self._check(
                tool, "sql_lists_tables", {},
                lambda d: None if _PROBE in json.dumps(d) else f"{_PROBE} not listed: {d}",
            )  # fmt: skip
            return
        if sem.verb == "describe":
            await self._check(
                tool, "sql_describes_table", {arg: _PROBE},
                lambda d: None if '"name"' in json.dumps(d) and "id" in json.dumps(d)
                else f"no columns of {_PROBE}: {d}",
            )  # fmt: skip
            await self.expect_error(
                tool,
                "boundary_unknown_table",
                _with_required(tool, {arg: "no_such_table"}),
                "runtime",
                "an unknown table",
            )
            return
        if sem.verb in ("select", "any"):
            await self._check(
                tool, "sql_select_reads_rows", {arg: f"SELECT name FROM {_PROBE}"},
                lambda d: None if "seeded" in json.dumps(d) else f"row 'seeded' missing: {d}",
            )  # fmt: skip
        if sem.verb in ("write", "any"):
            stmt = f"INSERT INTO {_PROBE} (name) VALUES ('written')"
            await self._check(
                tool, "sql_write_changes_rows", {arg: stmt},
                lambda d: None if self._sql(f"SELECT 1 FROM {_PROBE} WHERE name = 'written'")
                else f"the insert left no row ({d})",
            )  # fmt: skip
        if sem.verb in ("create", "any"):
            stmt = f"CREATE TABLE {_PROBE}_made (id INTEGER PRIMARY KEY)"
            await self._check(
                tool, "sql_create_makes_table", {arg: stmt},
                lambda d: f"no table {_PROBE}_made ({d})" if not self._sql(
                    f"SELECT 1 FROM sqlite_master WHERE name = '{_PROBE}_made'"
                ) else None if f"{_PROBE}_made" in json.dumps(d)
                else f"the answer does not confirm the table it made: {d}",
            )  # fmt: skip
        if sem.verb != "any":
            wrong = "SELECT 1" if sem.verb != "select" else f"DELETE FROM {_PROBE}"
            await self.expect_error(
                tool,
                "boundary_statement_kind",
                _with_required(tool, {arg: wrong}),
                "runtime",
                "another statement kind",
            )
        hidden = self._bundle_table()
        if hidden and sem.verb in ("select", "any"):
            await self.expect_error(
                tool, "boundary_bundle_table", _with_required(tool, {arg: f'SELECT * FROM "{hidden}"'}),
                "runtime",
                "a read of the bundle's own table",
            )  # fmt: skip
