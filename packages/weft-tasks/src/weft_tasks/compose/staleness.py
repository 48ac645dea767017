"""Which values a read still reports after earlier nodes wrote to its MCP.

A read is valued from the fixture row it reads in the initial state. An earlier node on the
same MCP may have changed that row by replay time; only then can the value the read reports
differ from the initial one. What an earlier node changes is read from its completion
conditions, never from tool names: a `diff_contains` condition names the kind of change and the
row (`where`), a `field_equals` condition the field an update sets on it. So:

- an insert changes no existing row (a new ticket leaves the others as they were);
- an update changes the fields its `field_equals` conditions set on the rows its `where` names,
  every field when it names none;
- a delete removes the rows its `where` names;
- a writing node whose conditions name no change of that table at all may have changed any
  row of it (its effect is unknown), so nothing of that table is trusted after it.

A long task (twenty nodes over eight MCPs) writes to most tables before its later reads;
judging per row and field rather than per table keeps a read of an untouched row reporting.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from weft_core.models import DiffContains, FieldEquals, TaskNode

_ALL = "*"

# keep(table, initial row, field): whether a read still reports that field of that row
Keep = Callable[[str, Mapping[str, Any], str], bool]


def _resolve(value: Any, bindings: Mapping[str, Any]) -> Any:
    if isinstance(value, dict) and set(value) == {"$binding"}:
        return bindings.get(str(value["$binding"]), value)
    return value


def _names(where: Mapping[str, Any], row: Mapping[str, Any], bindings: Mapping[str, Any]) -> bool:
    """Whether a condition's `where` may name `row`: every value it pins is the row's own (a
    field the row does not show could be anything, so it may)."""
    return all(
        k not in row or _resolve(v, bindings) == row[k] for k, v in where.items() if v is not None
    )


def changed_fields(
    earlier: Sequence[TaskNode],
    mcp: str,
    table: str,
    row: Mapping[str, Any],
    bindings: Mapping[str, Any] | None = None,
) -> set[str]:
    """Fields of `row` (a row of `table` on `mcp` in the initial state) that nodes in `earlier`
    may have changed; `"*"` among them means the whole row (deleted, or changed in fields no
    condition names). `bindings`: 'name.key' -> value, to read `$binding` references."""
    b = bindings or {}
    out: set[str] = set()
    for node in earlier:
        if node.task.mcp != mcp or not node.task.writes or table not in node.task.entities:
            continue
        diffs = [c for c in node.checks if isinstance(c, DiffContains) and c.table == table]
        if not diffs:
            # the node writes and touches the table, but no condition says how
            if not any(isinstance(c, DiffContains) for c in node.checks):
                out.add(_ALL)
            continue
        for d in diffs:
            if d.change == "insert" or not _names(d.where, row, b):
                continue
            if d.change == "delete":
                out.add(_ALL)
                continue
            set_here = {
                c.field
                for c in node.checks
                if isinstance(c, FieldEquals)
                and c.table == table
                and c.db == "final"
                and _names(c.where, row, b)
            } | set(d.fields or [])
            out |= set_here or {_ALL}
    return out


def still_reports(
    earlier: Sequence[TaskNode],
    mcp: str,
    bindings: Mapping[str, Any] | None = None,
) -> Keep:
    """A `keep(table, row, field)` predicate for `flows.reported_values` / `reported_ids`:
    True when no node of `earlier` may have changed `field` of that initial row."""

    def keep(table: str, row: Mapping[str, Any], field: str) -> bool:
        changed = changed_fields(earlier, mcp, table, row, bindings)
        return _ALL not in changed and field not in changed

    return keep
