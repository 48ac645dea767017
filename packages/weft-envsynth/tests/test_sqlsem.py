"""SQL-oriented tool sets (sqlsem): which tools take a statement, and a synthesized bundle that
runs statements on the session's own tables (the bundle's tables invisible to them)."""

from __future__ import annotations

import asyncio
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from weft_core.models import MCPSpec, ToolSpec
from weft_envsynth.sqlsem import sql_tool_set, statement_semantics, table_semantics


def _tool(name: str, desc: str, props: dict[str, Any], required: list[str]) -> ToolSpec:
    return ToolSpec(
        name=name,
        description=desc,
        input_schema={"type": "object", "properties": props, "required": required},
    )


Q = {"query": {"type": "string", "description": "SQL query to execute"}}
SQLITE = MCPSpec(
    name="sqlite",
    tools=[
        _tool("read_query", "Execute a SELECT query on the SQLite database", Q, ["query"]),
        _tool(
            "write_query",
            "Execute an INSERT, UPDATE, or DELETE query on the SQLite database",
            Q,
            ["query"],
        ),
        _tool(
            "create_table",
            "Create a new table in the SQLite database",
            {"query": {"type": "string", "description": "CREATE TABLE SQL statement"}},
            ["query"],
        ),
        _tool("list_tables", "List all tables in the SQLite database", {}, []),
        _tool(
            "describe_table",
            "Get the schema information for a specific table",
            {"table_name": {"type": "string", "description": "Name of the table to describe"}},
            ["table_name"],
        ),
        _tool(
            "append_insight",
            "Add a business insight to the memo",
            {"insight": {"type": "string", "description": "Business insight discovered"}},
            ["insight"],
        ),
    ],
)


def test_statement_kinds_come_from_the_definition() -> None:
    got = {
        n: (s.verb, s.statement_argument or s.table_argument)
        for n, s in sql_tool_set(SQLITE).items()
    }
    assert got == {
        "read_query": ("select", "query"),
        "write_query": ("write", "query"),
        "create_table": ("create", "query"),
        "list_tables": ("tables", None),
        "describe_table": ("describe", "table_name"),
    }


def test_hostile_and_non_sql_definitions() -> None:
    # A search box called `query` is not SQL; an optional statement is not a statement tool.
    assert (
        statement_semantics(
            _tool("search", "Search products", {"query": {"type": "string"}}, ["query"])
        )
        is None
    )
    assert statement_semantics(_tool("run_sql", "Run SQL", Q, [])) is None
    # Contradictory kinds (SELECT only ... INSERT rows) accept any statement rather than guess.
    both = _tool("run", "Run a SELECT only; it may INSERT rows", Q, ["query"])
    assert statement_semantics(both).verb == "any"  # type: ignore[union-attr]
    # A non-string `query` (hostile schema) is not a statement.
    assert statement_semantics(_tool("q", "SQL", {"query": {"type": "integer"}}, ["query"])) is None
    # Table tools only count in a tool set with a statement tool.
    assert sql_tool_set(MCPSpec(name="x", tools=[SQLITE.tools[3], SQLITE.tools[4]])) == {}
    assert table_semantics(_tool("list_tables", "", {"x": {"type": "string"}}, ["x"])) is None
    # Fifty parameters: still the one statement argument.
    props = {f"p{i}": {"type": "string"} for i in range(49)} | Q
    many = _tool("exec_sql", "Execute SQL", props, [*props])
    assert statement_semantics(many).statement_argument == "query"  # type: ignore[union-attr]


@pytest.fixture(scope="module")
def sqlite_bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from weft_envsynth import synthesize_spec

    res = synthesize_spec(SQLITE, tmp_path_factory.mktemp("sql"))
    assert res.bundle is not None and res.status == "certified", res.uncertified
    return Path(res.bundle)


def _run(
    bundle: Path, tmp: Path, calls: list[tuple[str, dict[str, Any]]], setup: str | None = None
) -> list[tuple[bool, Any]]:
    from fastmcp import Client

    from weft_core.binding import SessionBinding, bind_session, release_session
    from weft_envsynth.loader import import_bundle, unload_bundle

    db = tmp / "state.sqlite"
    shutil.copyfile(bundle / "seed.sqlite", db)
    if setup:
        conn = sqlite3.connect(db)
        try:
            conn.executescript(setup)
            conn.commit()
        finally:
            conn.close()
    mod = import_bundle(bundle)
    out: list[tuple[bool, Any]] = []

    async def go() -> None:
        with bind_session(
            SessionBinding(session_id=f"t-{tmp.name}", db_path=db, workspace=tmp / "ws")
        ):
            async with Client(mod.create_server()) as c:
                for name, args in calls:
                    r = await c.call_tool(name, args, raise_on_error=False)
                    out.append((bool(r.is_error), r.structured_content))

    try:
        asyncio.run(go())
    finally:
        release_session(f"t-{tmp.name}")
        unload_bundle(mod)
    return out


def test_statements_run_on_the_sessions_own_tables(sqlite_bundle: Path, tmp_path: Path) -> None:
    bundle_table = (
        sqlite3.connect(sqlite_bundle / "seed.sqlite")
        .execute(
            "SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%' LIMIT 1"
        )
        .fetchone()[0]
    )
    got = _run(
        sqlite_bundle,
        tmp_path,
        [
            ("list_tables", {}),
            ("create_table", {"query": "CREATE TABLE pets (id INTEGER PRIMARY KEY, name TEXT)"}),
            ("write_query", {"query": "INSERT INTO pets (name) VALUES ('rex'), ('tom')"}),
            ("write_query", {"query": "UPDATE pets SET name = 'max' WHERE name = 'tom'"}),
            ("read_query", {"query": "SELECT name FROM pets ORDER BY id"}),
            ("list_tables", {}),
            ("describe_table", {"table_name": "pets"}),
            ("read_query", {"query": "DELETE FROM pets"}),  # wrong kind for this tool
            ("read_query", {"query": "SELECT 1; DROP TABLE pets"}),  # two statements
            ("read_query", {"query": f'SELECT * FROM "{bundle_table}"'}),  # the bundle's own
            ("describe_table", {"table_name": bundle_table}),
            ("read_query", {"query": "SELECT * FROM nowhere"}),
            ("read_query", {"query": "SELECT count(*) AS n FROM pets"}),
        ],
    )
    assert got[0] == (False, {"tables": []})
    assert [e for e, _ in got[1:7]] == [False] * 6
    assert got[2][1] == {"affected_rows": 2} and got[3][1] == {"affected_rows": 1}
    assert got[4][1] == {"rows": [{"name": "rex"}, {"name": "max"}], "count": 2}
    assert got[5][1] == {"tables": [{"name": "pets"}]}
    assert [c["name"] for c in got[6][1]["columns"]] == ["id", "name"]
    assert all(e for e, _ in got[7:12])  # refused, and nothing was deleted or dropped:
    assert got[12] == (False, {"rows": [{"n": 2}], "count": 1})


def test_runtime_bookkeeping_tables_are_invisible(sqlite_bundle: Path, tmp_path: Path) -> None:
    # A repository (weft_vcs_*) or record graph (weft_graph_*) kept by the runtime is no table
    # of the user's.
    got = _run(
        sqlite_bundle,
        tmp_path,
        [
            ("read_query", {"query": "SELECT 1"}),
            ("read_query", {"query": "SELECT * FROM weft_vcs_head"}),
            ("read_query", {"query": "SELECT * FROM weft_graph_record"}),
            ("list_tables", {}),
        ],
        setup="CREATE TABLE weft_vcs_head (id INTEGER PRIMARY KEY, ref TEXT); "
        "CREATE TABLE weft_graph_record (seq INTEGER PRIMARY KEY, body TEXT)",
    )
    assert got[0][0] is False and got[1][0] is True and got[2][0] is True
    assert got[3] == (False, {"tables": []})


def test_schema_changes_and_memo_writes_confirm_themselves(
    sqlite_bundle: Path, tmp_path: Path
) -> None:
    # The real server answers "Table created successfully" / "Insight added to memo": a write
    # is confirmed in words (the statement's object and name; the description's verb and place).
    got = _run(
        sqlite_bundle,
        tmp_path,
        [
            ("create_table", {"query": 'CREATE TABLE IF NOT EXISTS "my pets" (id INTEGER)'}),
            ("append_insight", {"insight": "sales peak on mondays"}),
            ("append_insight", {"insight": "returns fall in june"}),
            ("list_tables", {}),
        ],
    )
    assert got[0] == (
        False,
        {
            "ok": True,
            "message": "Table my pets created successfully",
            "statement": 'CREATE TABLE IF NOT EXISTS "my pets"',
        },
    )
    assert got[1][0] is False and got[1][1]["message"] == "Business insight added to the memo"
    assert got[2][1]["insight"]["insight"] == "returns fall in june"
    # The memo is the bundle's, not a table of the user's database.
    assert got[3] == (False, {"tables": [{"name": "my pets"}]})


def test_a_query_in_another_language_is_not_sql() -> None:
    # From the Toucan corpus (mcp-xpath): "Select" and a `query` argument, but an XPath query.
    xpath = _tool(
        "xpath",
        "Select query XML content using XPath",
        {
            "xml": {"type": "string", "description": "The XML content to query"},
            "query": {"type": "string", "description": "The XPath query to execute"},
        },
        ["xml", "query"],
    )
    assert statement_semantics(xpath) is None
    # Naming SQL as well keeps it a statement tool.
    both = _tool("q", "Run an SQL query (or a GraphQL one)", Q, ["query"])
    assert statement_semantics(both) is not None


def test_a_statement_tool_with_other_required_arguments_certifies(tmp_path: Path) -> None:
    # From the Toucan corpus (postgresql-mcp-server): the statement checks must fill the
    # connection string, or every call is invalid and the whole server is rejected.
    from weft_envsynth import synthesize_spec

    spec = MCPSpec(
        name="pg",
        tools=[
            _tool(
                "execute_custom_query",
                "Execute a custom SQL query against the database",
                {
                    "connectionString": {
                        "type": "string",
                        "description": "PostgreSQL connection string",
                    },
                    "query": {"type": "string", "description": "SQL query to execute"},
                    "values": {"type": "array", "items": {"type": "string"}},
                },
                ["connectionString", "query"],
            )
        ],
    )
    res = synthesize_spec(spec, tmp_path)
    assert res.status == "certified", res.uncertified
