"""The state diff of a checkpoint: which rows and files a turn changed since the previous one.

Each session keeps, beside its live DB, the DB copy and the file map of the last checkpoint
verified (`checkpoint-last.*`) and of the one before it (`checkpoint-base.*`), plus a small
mark naming them. Verifying checkpoint C diffs the state now against:

- the last verified checkpoint's state when that was another checkpoint (which then becomes
  the base), so each node of a SimUser rollout gets exactly its own turn's changes;
- the same base again when C itself was the last one verified: agentic replay verifies the
  pending node after every replayed call, and the call at which it passes must see everything
  since the previous node passed, not only its own call;
- the initial snapshot before any checkpoint (`since="initial"`).

A session whose state version has not moved since the last checkpoint (in a multi-MCP turn,
every MCP the turn did not write) gets an empty diff without diffing. The DB copy the verifier
just read becomes the new `checkpoint-last.sqlite` (a rename, no extra
copy); the diff itself runs in SQL (`weft_core.state.diff_sqlite`). The files travel with
snapshot / restore / fork (`_copy_state`), so a restored group diffs against the checkpoint
state it was snapshotted with; a group reloaded after eviction has none and diffs from initial.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from pydantic import ValidationError

from weft_core.state import (
    INITIAL,
    CheckpointDiff,
    SessionChanges,
    StateDiff,
    WorkspaceState,
    capture_workspace,
    diff_sqlite,
    diff_workspace,
)
from weft_megamcp._session import HostedSession

MARK = "checkpoint.json"
LAST_DB = "checkpoint-last.sqlite"
BASE_DB = "checkpoint-base.sqlite"
LAST_FILES = "checkpoint-last-files.json"
BASE_FILES = "checkpoint-base-files.json"
CHECKPOINT_FILES = (MARK, LAST_DB, BASE_DB, LAST_FILES, BASE_FILES)
"""Per-session files a snapshot, restore or fork carries along with the state."""

FILE_TEXT_LIMIT = 2048
"""Workspace files up to this size keep their text in the diff; larger ones only their hash."""


def capture_files(session: HostedSession) -> WorkspaceState:
    """The session's workspace as the diff compares it (hashes, text of small files)."""
    state = capture_workspace(session.workspace, text_limit=FILE_TEXT_LIMIT)
    return state.model_copy(update={"source": None})


def _write(path: Path, text: str) -> None:
    """Replace `path` atomically but without fsync: these are scratch files beside the state (a
    lost one only makes the next diff start from initial), and two fsyncs per session per
    checkpoint measured ~100 ms on a busy disk."""
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def _mark(root: Path) -> dict[str, object] | None:
    try:
        data = json.loads((root / MARK).read_text(encoding="utf-8"))
    except (FileNotFoundError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _files(path: Path) -> WorkspaceState:
    try:
        return WorkspaceState.model_validate_json(path.read_text(encoding="utf-8"))
    except (FileNotFoundError, ValidationError):
        return WorkspaceState()


def _rotate(root: Path) -> None:
    """The last checkpoint's state becomes the base (only what exists moves)."""
    for last, base in ((LAST_DB, BASE_DB), (LAST_FILES, BASE_FILES)):
        if (root / last).exists():
            os.replace(root / last, root / base)
        else:
            (root / base).unlink(missing_ok=True)


def session_changes(
    session: HostedSession,
    checkpoint: str,
    db_copy: Path | None,
    files: WorkspaceState,
    initial_db: Path | None,
    max_rows: int,
) -> tuple[str, SessionChanges]:
    """(since, changes) of one session at `checkpoint`; `db_copy` (the copy the verifier read)
    is moved in as the new last-checkpoint DB. `max_rows` caps the rows kept."""
    root = session.root
    mark = _mark(root)
    unchanged = False
    if mark is None:
        since = INITIAL
    elif mark.get("last") == checkpoint:
        since = str(mark.get("since", INITIAL))
    else:
        _rotate(root)
        since = str(mark.get("last", INITIAL))
        # No write since the last checkpoint (most sessions of a multi-MCP turn): nothing to
        # diff, and the base's files are also the last state's.
        unchanged = mark.get("state_version") == session.state_version
    mark_text = json.dumps(
        {"last": checkpoint, "since": since, "state_version": session.state_version}
    )
    if unchanged:
        if db_copy is not None:
            os.replace(db_copy, root / LAST_DB)
        if (root / BASE_FILES).exists():
            shutil.copyfile(root / BASE_FILES, root / LAST_FILES)
        _write(root / MARK, mark_text)
        return since, SessionChanges()
    base_db = initial_db if since == INITIAL else root / BASE_DB
    if base_db is not None and not base_db.exists():
        base_db = None  # the session had no DB at its base
    base_files = WorkspaceState() if since == INITIAL else _files(root / BASE_FILES)
    db = StateDiff()
    if db_copy is not None:
        db = diff_sqlite(base_db, db_copy, max_rows=max_rows)
        os.replace(db_copy, root / LAST_DB)
    else:
        (root / LAST_DB).unlink(missing_ok=True)
    _write(root / LAST_FILES, files.model_dump_json())
    # Written last: a crash before it leaves the previous mark, and the next verification
    # rotates again from whatever last state exists.
    _write(root / MARK, mark_text)
    return since, SessionChanges(db=db, files=diff_workspace(base_files, files))


def shown_rows(changes: SessionChanges) -> int:
    return sum(len(t.inserts) + len(t.updates) + len(t.deletes) for t in changes.db.tables.values())


def checkpoint_diff(
    sessions: dict[str, HostedSession],
    checkpoint: str,
    db_copies: dict[str, Path],
    files: dict[str, WorkspaceState],
    initial_dbs: dict[str, Path | None],
    *,
    max_rows: int,
) -> CheckpointDiff:
    """The diff of every session at `checkpoint`, `max_rows` changed rows in all."""
    since = INITIAL
    left = max_rows
    out: dict[str, SessionChanges] = {}
    for m, s in sorted(sessions.items()):
        since, changes = session_changes(
            s, checkpoint, db_copies.get(m), files[m], initial_dbs.get(m), left
        )
        left = max(0, left - shown_rows(changes))
        out[m] = changes
    return CheckpointDiff(since=since, mcps=out, max_rows=max_rows)
