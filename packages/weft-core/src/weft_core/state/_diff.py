"""Diff two `DBState`s into inserts, updates (field-level old/new) and deletes per table."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from weft_core._model import WeftModel
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
    omitted: dict[str, int] = Field(
        default_factory=dict,
        description="Changed rows left out by a size cap, per kind ('inserts', 'updates', "
        "'deletes'); `counts()` includes them.",
    )

    @property
    def empty(self) -> bool:
        return not (self.inserts or self.updates or self.deletes or any(self.omitted.values()))

    def counts(self) -> dict[str, int]:
        """Rows changed per kind, those left out by a cap included."""
        return {
            "inserts": len(self.inserts) + self.omitted.get("inserts", 0),
            "updates": len(self.updates) + self.omitted.get("updates", 0),
            "deletes": len(self.deletes) + self.omitted.get("deletes", 0),
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

    @property
    def truncated(self) -> bool:
        """Whether a size cap left changed rows out (each table's `omitted` says how many)."""
        return any(any(t.omitted.values()) for t in self.tables.values())

    def table(self, name: str) -> TableDiff:
        return self.tables.get(name) or TableDiff()

    def summary(self) -> dict[str, dict[str, int]]:
        """`{table: {"inserts": n, "updates": n, "deletes": n}}` for every changed table."""
        return {name: diff.counts() for name, diff in sorted(self.tables.items())}


def _field_changes(old: dict[str, Any], new: dict[str, Any]) -> dict[str, FieldChange]:
    """Fields whose value differs between two versions of a row.

    SQLite values are scalars, compared directly: measured 500x faster than DeepDiff on flat rows
    (1,000 changed rows: ~1 ms against ~500 ms), and a verifier diffs every rollout. Container
    values (a DBState built from JSON) go through DeepDiff so nested changes are found exactly.
    """
    changes: dict[str, FieldChange] = {}
    for name in sorted(old.keys() | new.keys()):
        a, b = old.get(name), new.get(name)
        if isinstance(a, dict | list) or isinstance(b, dict | list):
            # Imported here: DeepDiff brings numpy (26 MiB and 227 modules in every process
            # that imports weft_core.state), and only nested values, which SQLite rows never
            # hold, need it.
            from deepdiff import DeepDiff

            differs = bool(DeepDiff(a, b, ignore_numeric_type_changes=True))
        else:
            differs = a != b or (name in old) != (name in new)
        if differs:
            changes[name] = FieldChange(old=a, new=b)
    return changes


def _diff_table(old: dict[str, dict[str, Any]], new: dict[str, dict[str, Any]]) -> TableDiff:
    result = TableDiff()
    result.inserts = {k: new[k] for k in sorted(new.keys() - old.keys())}
    result.deletes = {k: old[k] for k in sorted(old.keys() - new.keys())}
    for key in sorted(k for k in old.keys() & new.keys() if old[k] != new[k]):
        changed = _field_changes(old[key], new[key])
        if changed:
            result.updates[key] = RowUpdate(old=old[key], new=new[key], changed=changed)
    return result


def diff_db(initial: DBState, final: DBState) -> StateDiff:
    """The changes that turn `initial` into `final`, per table.

    Values compare by Python equality, as checks compare numbers: an INTEGER 1 that reads back
    as REAL 1.0 is not a change.
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
