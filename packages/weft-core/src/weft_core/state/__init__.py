"""State capture and diff: SQLite DBs as `{table: {primary key: row}}`, workspaces as file maps.

Captures open databases read-only and never modify them; diffs summarize inserts, updates (with
field-level old/new) and deletes per table, and added/modified/removed files per workspace.
"""

from weft_core.state._checkpoint import INITIAL, CheckpointDiff, SessionChanges
from weft_core.state._db import DBState, StateCaptureError, StateError, TableSchema, capture_db
from weft_core.state._diff import FieldChange, RowUpdate, StateDiff, TableDiff, diff_db
from weft_core.state._sqlite_diff import diff_sqlite
from weft_core.state._workspace import (
    FileChange,
    FileState,
    WorkspaceDiff,
    WorkspaceState,
    capture_workspace,
    diff_workspace,
)

__all__ = [
    "INITIAL",
    "CheckpointDiff",
    "DBState",
    "FieldChange",
    "FileChange",
    "FileState",
    "RowUpdate",
    "SessionChanges",
    "StateCaptureError",
    "StateDiff",
    "StateError",
    "TableDiff",
    "TableSchema",
    "WorkspaceDiff",
    "WorkspaceState",
    "capture_db",
    "capture_workspace",
    "diff_db",
    "diff_sqlite",
    "diff_workspace",
]
