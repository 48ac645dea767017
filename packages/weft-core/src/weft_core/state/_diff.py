"""Diff two `DBState`s into inserts, updates (field-level old/new) and deletes per table."""

from __future__ import annotations

from typing import Any

from deepdiff import DeepDiff
from deepdiff.helper import NotPresent
from pydantic import Field

from weft_core.models._base import WeftModel
from weft_core.state._db import DBState


class FieldChange(WeftModel):
    old: Any = None
    new: Any = None


class RowUpdate(WeftModel):
    old: dict[str, Any] = Field(description="The whole row before.")
    new: dict[str, Any] = Field(description="The whole row after.")
    changed: dict[str, FieldChange] = Field(description="Only the fields whose value changed.")


class TableDiff(WeftModel):
    inserts: dict[str, dict[str, Any]] = Field(default_factory=dict, description="key -> new row")
    updates: dict[str, RowUpdate] = Field(default_factory=dict, description="key -> update")
    deletes: dict[str, dict[str, Any]] = Field(default_factory=dict, description="key -> old row")

    @property
    def empty(self) -> bool:
        return not (self.inserts or self.updates or self.deletes)

    def counts(self) -> dict[str, int]:
        return {
            "inserts": len(self.inserts),
            "updates": len(self.updates),
            "deletes": len(self.deletes),
        }


class StateDiff(WeftModel):
    """Changes from an initial to a final DB; only tables with changes appear in `tables`."""

    tables: dict[str, TableDiff] = Field(default_factory=dict)
    tables_added: list[str] = Field(
        default_factory=list, description="Tables only in the final DB."
    )
    tables_removed: list[str] = Field(
        default_factory=list, description="Tables only in the initial DB."
    )

    @property
    def empty(self) -> bool:
        return not self.tables and not self.tables_added and not self.tables_removed

    def table(self, name: str) -> TableDiff:
        return self.tables.get(name) or TableDiff()

    def summary(self) -> dict[str, dict[str, int]]:
        """`{table: {"inserts": n, "updates": n, "deletes": n}}` for every changed table."""
        return {name: diff.counts() for name, diff in sorted(self.tables.items())}


def _field_changes(old: dict[str, Any], new: dict[str, Any]) -> dict[str, FieldChange]:
    """Field-level changes of one row, via DeepDiff (type changes such as 1 -> 1.0 included)."""
    changes: dict[str, FieldChange] = {}
    tree = DeepDiff(old, new, view="tree")
    for levels in tree.values():
        for level in levels:
            path = level.path(output_format="list")
            if not path:  # DeepDiff reports a wholesale replacement at the root; split it by field
                for name in sorted(set(old) | set(new)):
                    if old.get(name) != new.get(name) or (name in old) != (name in new):
                        changes[name] = FieldChange(old=old.get(name), new=new.get(name))
                continue
            t1 = None if isinstance(level.t1, NotPresent) else level.t1
            t2 = None if isinstance(level.t2, NotPresent) else level.t2
            changes[str(path[0])] = FieldChange(old=t1, new=t2)
    return dict(sorted(changes.items()))


def _diff_table(old: dict[str, dict[str, Any]], new: dict[str, dict[str, Any]]) -> TableDiff:
    result = TableDiff()
    result.inserts = {k: new[k] for k in sorted(new.keys() - old.keys())}
    result.deletes = {k: old[k] for k in sorted(old.keys() - new.keys())}
    # Equal rows are skipped before DeepDiff: it is exact but slow, and almost every row of a
    # session DB is untouched.
    for key in sorted(
        k for k in old.keys() & new.keys() if old[k] != new[k] or _types_differ(old[k], new[k])
    ):
        changed = _field_changes(old[key], new[key])
        if changed:
            result.updates[key] = RowUpdate(old=old[key], new=new[key], changed=changed)
    return result


def _types_differ(a: dict[str, Any], b: dict[str, Any]) -> bool:
    # 1 == 1.0 in Python, but a stored INTEGER that became a REAL is a change of state.
    return any(type(v) is not type(b.get(k)) for k, v in a.items())


def diff_db(initial: DBState, final: DBState) -> StateDiff:
    """The changes that turn `initial` into `final`, per table.

    A value that changes type (e.g. 1 to 1.0) counts as an update: the stored state differs.
    """
    diff = StateDiff(
        tables_added=sorted(set(final.tables) - set(initial.tables)),
        tables_removed=sorted(set(initial.tables) - set(final.tables)),
    )
    for table in sorted(set(initial.tables) | set(final.tables)):
        table_diff = _diff_table(initial.tables.get(table, {}), final.tables.get(table, {}))
        if not table_diff.empty:
            diff.tables[table] = table_diff
    return diff
