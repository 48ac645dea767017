"""Evidence: what a verifier may read about one MCP session after a rollout."""

from __future__ import annotations

import json
import os
from collections.abc import Collection, Iterable, Mapping
from pathlib import Path
from typing import Any

from pydantic import Field, PrivateAttr, ValidationError

from weft_core.exceptions import UserError
from weft_core.models._base import WeftModel
from weft_core.models.check import (
    CallMade,
    Check,
    DBSide,
    DiffContains,
    FieldEquals,
    NoOtherChanges,
    ReturnContains,
    RowAbsent,
    RowCount,
    RowExists,
    WorkspaceFile,
)
from weft_core.models.ledger import LedgerEntry
from weft_core.state import (
    DBState,
    StateDiff,
    WorkspaceDiff,
    WorkspaceState,
    capture_db,
    capture_workspace,
    diff_db,
    diff_workspace,
)


class EvidenceError(UserError):
    """Evidence could not be assembled (e.g. a malformed ledger file)."""


class Evidence(WeftModel):
    """One MCP session's initial and final DB, their diff, its ledger and its workspace.

    `diff` is computed from `initial` and `final` when not given. Any part may be absent; a check
    that needs an absent part fails with a reason saying so.
    """

    mcp: str | None = Field(default=None, description="MCP id, when known.")
    initial: DBState | None = None
    final: DBState | None = None
    diff: StateDiff | None = None
    ledger: list[LedgerEntry] = Field(default_factory=list)
    workspace_before: WorkspaceState | None = None
    workspace_after: WorkspaceState | None = None

    _diff: StateDiff | None = PrivateAttr(default=None)

    def state_diff(self) -> StateDiff | None:
        if self.diff is not None:
            return self.diff
        if self._diff is None and self.initial is not None and self.final is not None:
            self._diff = diff_db(self.initial, self.final)
        return self._diff

    def workspace_diff(self) -> WorkspaceDiff | None:
        if self.workspace_after is None:
            return None
        return diff_workspace(self.workspace_before or WorkspaceState(), self.workspace_after)


def load_ledger(
    source: str | os.PathLike[str] | Iterable[LedgerEntry | Mapping[str, Any]],
) -> list[LedgerEntry]:
    """Ledger entries from objects, dicts, or a `.jsonl` / `.json` file; errors name the entry."""
    if isinstance(source, str | os.PathLike):
        path = Path(source)
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise EvidenceError(f"{path}: cannot read ledger: {exc.strerror}") from None
        items: list[tuple[str, Any]] = []
        if text.lstrip().startswith("["):
            try:
                items = [(f"{path} item {i}", v) for i, v in enumerate(json.loads(text))]
            except ValueError as exc:
                raise EvidenceError(f"{path}: ledger is not valid JSON: {exc}") from None
        else:
            for n, line in enumerate(text.splitlines(), 1):
                if line.strip():
                    try:
                        items.append((f"{path} line {n}", json.loads(line)))
                    except ValueError as exc:
                        raise EvidenceError(f"{path} line {n}: not valid JSON: {exc}") from None
    else:
        items = [(f"ledger entry {i}", v) for i, v in enumerate(source)]
    entries = []
    for where, item in items:
        if isinstance(item, LedgerEntry):
            entries.append(item)
            continue
        try:
            entries.append(LedgerEntry.model_validate(item))
        except ValidationError as exc:
            first = exc.errors()[0]
            loc = ".".join(str(p) for p in first["loc"]) or "(root)"
            raise EvidenceError(f"{where}: not a ledger entry: {loc}: {first['msg']}") from None
    return entries


def evidence_from_paths(
    initial_db: str | os.PathLike[str] | None = None,
    final_db: str | os.PathLike[str] | None = None,
    ledger: str | os.PathLike[str] | Iterable[LedgerEntry | Mapping[str, Any]] | None = None,
    workspace_before: str | os.PathLike[str] | None = None,
    workspace_after: str | os.PathLike[str] | None = None,
    *,
    mcp: str | None = None,
    frozen: bool = False,
    tables: Collection[str] | None = None,
) -> Evidence:
    """Capture evidence from real SQLite files and directories (read-only).

    `frozen=True` opens the DBs as immutable snapshots (no locking); use it only for files no
    process writes any more, such as the DBs of a frozen session group. `tables` limits the DB
    capture to those tables (`tables_read` of the checks that will read this evidence).
    """
    return Evidence(
        mcp=mcp,
        initial=capture_db(initial_db, immutable=frozen, tables=tables)
        if initial_db is not None
        else None,
        final=capture_db(final_db, immutable=frozen, tables=tables)
        if final_db is not None
        else None,
        ledger=load_ledger(ledger) if ledger is not None else [],
        workspace_before=capture_workspace(workspace_before)
        if workspace_before is not None
        else None,
        workspace_after=capture_workspace(workspace_after) if workspace_after is not None else None,
    )


# Checks that read one table of a DB; every other kind that reads a DB reads all of it.
_ONE_TABLE = (RowExists, RowAbsent, FieldEquals, RowCount, DiffContains)
# Checks that read no DB at all (the ledger or the workspace).
_NO_TABLE = (ReturnContains, CallMade, WorkspaceFile)
# Checks that read the one DB side they name.
_ONE_SIDE = (RowExists, RowAbsent, FieldEquals, RowCount)
# Checks that never read the ledger.
_NO_LEDGER = (*_ONE_TABLE, NoOtherChanges, WorkspaceFile)


def _about(check: Check, mcp: str | None) -> bool:
    return mcp is None or check.mcp is None or check.mcp == mcp


def tables_read(checks: Iterable[Check], mcp: str | None = None) -> set[str] | None:
    """The DB tables of `mcp` that `checks` can read, or None when one of them may read any
    table (`no_other_changes`, or a kind not known here). A check naming no MCP may read any
    MCP's evidence, so its table counts for every MCP."""
    out: set[str] = set()
    for check in checks:
        if not _about(check, mcp) or isinstance(check, _NO_TABLE):
            continue
        if not isinstance(check, _ONE_TABLE):
            return None
        out.add(check.table)
    return out


def db_sides_read(checks: Iterable[Check], mcp: str | None = None) -> set[DBSide]:
    """The DB sides of `mcp` ("initial", "final") that `checks` can read: a row check reads its
    `db`, a diff check (or a kind not known here) both, a ledger or workspace check neither.
    A verifier of a multi-MCP task names one or two MCPs per checkpoint; opening every other
    MCP's DBs is what most of such a verification cost."""
    out: set[DBSide] = set()
    for check in checks:
        if not _about(check, mcp) or isinstance(check, _NO_TABLE):
            continue
        if not isinstance(check, _ONE_SIDE):
            return {"initial", "final"}
        out.add(check.db)
    return out


def reads_ledger(checks: Iterable[Check], mcp: str | None = None) -> bool:
    """Whether any of `checks` can read `mcp`'s ledger (a kind not known here may)."""
    return any(not isinstance(c, _NO_LEDGER) and _about(c, mcp) for c in checks)


def reads_workspace(checks: Iterable[Check], mcp: str | None = None) -> bool:
    """Whether any of `checks` can read `mcp`'s workspace."""
    return any(isinstance(c, WorkspaceFile) and _about(c, mcp) for c in checks)
