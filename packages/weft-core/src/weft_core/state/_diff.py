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


def _diff_table(old: dict[str, dict[str, Any]], new: dict[str, dict[str, Any]]) -> TableDiff:
    # Equal rows are dropped before DeepDiff: it is exact but slow, and almost every row of a
    # session DB is untouched.
    old_changed = {k: r for k, r in old.items() if new.get(k) != r}
    new_changed = {k: r for k, r in new.items() if old.get(k) != r}
    result = TableDiff()
    if not old_changed and not new_changed:
        return result
    tree = DeepDiff(old_changed, new_changed, view="tree")
    for report, levels in tree.items():
        for level in levels:
            path = level.path(output_format="list")
            key = str(path[0])
            if len(path) == 1 and report == "dictionary_item_added":
                result.inserts[key] = new[key]
            elif len(path) == 1 and report == "dictionary_item_removed":
                result.deletes[key] = old[key]
            else:
                update = result.updates.get(key)
                if update is None:
                    update = RowUpdate(old=old[key], new=new[key], changed={})
                    result.updates[key] = update
                t1 = None if isinstance(level.t1, NotPresent) else level.t1
                t2 = None if isinstance(level.t2, NotPresent) else level.t2
                update.changed[str(path[1])] = FieldChange(old=t1, new=t2)
    result.inserts = dict(sorted(result.inserts.items()))
    result.updates = dict(sorted(result.updates.items()))
    result.deletes = dict(sorted(result.deletes.items()))
    return result


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
