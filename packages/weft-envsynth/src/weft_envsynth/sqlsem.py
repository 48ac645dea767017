"""SQL semantics for SQL-oriented tool sets: tools that take an SQL statement, list the tables or
describe one, bound to a database the session owns (its own tables in the session DB, beside the
bundle's), with the statement kinds the definition allows.

A tool is a statement tool when one string argument is the statement (named `query`, `sql`,
`statement`, or described as SQL) and its definition speaks of SQL or names statement kinds
(SELECT, INSERT, UPDATE, DELETE, CREATE TABLE); the kinds it names are the kinds it accepts. A
definition that names another query language (XPath, JSONPath, GraphQL, Cypher, a regex, ...) and
not SQL is not a statement tool. A tool
set with a statement tool also gets its table tools: listing tables (no required argument, a
list verb and "table" in the name) and describing one (a describe/schema verb and a table argument).
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field

from weft_core.models import MCPSpec, ToolSpec, WeftModel
from weft_envsynth._internal import words as W
from weft_envsynth._internal.jsonschema import schema_type

SqlVerb = Literal["select", "write", "create", "any", "tables", "describe"]

_STATEMENT_ARGS = {"query", "sql", "statement", "sql_query", "sql_statement"}
_KINDS = {
    "select": re.compile(r"\bselect\b", re.I),
    "write": re.compile(r"\b(insert|update|delete)\b", re.I),
    "create": re.compile(r"\bcreate table\b", re.I),
}
_SQL = re.compile(r"\bsql(ite)?\b", re.I)
# A statement in another query language is not SQL, whatever verbs its description uses
# ("Select query XML content using XPath").
_OTHER_LANGUAGE = re.compile(
    r"\b(xpath|xquery|jsonpath|jmespath|jq|graphql|cypher|sparql|gremlin|regex|regular expression|"
    r"css selector|lucene|kql|promql|logql|mongo(db)? (query|filter))\b",
    re.I,
)


class SqlSemantics(WeftModel):
    """What an SQL-oriented tool does and which argument carries the statement or table."""

    verb: SqlVerb
    statement_argument: str | None = Field(default=None, description="The SQL statement.")
    table_argument: str | None = Field(default=None, description="The table a describe names.")
    evidence: str = ""


def _arg_text(tool: ToolSpec, arg: str) -> str:
    sch = tool.properties.get(arg)
    return str(sch.get("description", "")) if isinstance(sch, dict) else ""


def statement_semantics(tool: ToolSpec) -> SqlSemantics | None:
    strings = [a for a, s in tool.properties.items() if schema_type(s) == "string"]
    stmt = next(
        (
            a
            for a in strings
            if W.identifier(a) in _STATEMENT_ARGS or _SQL.search(_arg_text(tool, a))
        ),
        None,
    )
    if stmt is None or stmt not in tool.required:
        return None
    text = f"{tool.description} {_arg_text(tool, stmt)}"
    if _OTHER_LANGUAGE.search(text) and not _SQL.search(text):
        return None
    kinds = [k for k, rx in _KINDS.items() if rx.search(text)]
    if not kinds and not _SQL.search(text):
        return None
    # A definition naming several kinds, or none (just "SQL"), accepts any statement.
    verb: SqlVerb = kinds[0] if len(kinds) == 1 else "any"  # type: ignore[assignment]
    return SqlSemantics(verb=verb, statement_argument=stmt, evidence=f"statement kinds {kinds}")


def table_semantics(tool: ToolSpec) -> SqlSemantics | None:
    words = set(W.split_words(tool.name))
    if not words & {"table", "tables"}:
        return None
    if words & {"list", "show", "get", "all"} and "tables" in words and not tool.required:
        return SqlSemantics(verb="tables", evidence="lists the tables")
    table_args = [a for a in tool.required if "table" in W.split_words(a)]
    if words & {"describe", "schema", "info", "columns"} and len(table_args) == 1:
        return SqlSemantics(
            verb="describe", table_argument=table_args[0], evidence="describes one table"
        )
    return None


def sql_tool_set(spec: MCPSpec) -> dict[str, SqlSemantics]:
    """The SQL-oriented tools of `spec` (empty unless it has at least one statement tool)."""
    statements = {t.name: s for t in spec.tools if (s := statement_semantics(t))}
    if not statements:
        return {}
    tables = {
        t.name: s for t in spec.tools if t.name not in statements and (s := table_semantics(t))
    }
    return {**statements, **tables}
