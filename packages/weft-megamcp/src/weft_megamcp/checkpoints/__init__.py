"""Checkpoints and recovery (paper §3.3.3 "State recovery"): a generation-fenced CheckpointStore
over fsspec, a DebouncedCheckpointer for live sessions, and a Reaper for interrupted shutdowns."""

from weft_megamcp.checkpoints._errors import (
    CheckpointError,
    CheckpointNotFoundError,
    FencingError,
    LeaseHeldError,
    WorkspaceArchiveError,
)
from weft_megamcp.checkpoints.checkpointer import (
    DebouncedCheckpointer,
    backup_sqlite,
    snapshot_sqlite,
)
from weft_megamcp.checkpoints.reaper import Reaper, ReapReport, ShutdownJournal
from weft_megamcp.checkpoints.store import (
    CheckpointRef,
    CheckpointStore,
    Lease,
    PagePatchRef,
    SessionStatus,
    check_workspace_tarball,
    install_workspace,
    tar_workspace,
)

__all__ = [
    "CheckpointError",
    "CheckpointNotFoundError",
    "CheckpointRef",
    "CheckpointStore",
    "DebouncedCheckpointer",
    "FencingError",
    "Lease",
    "LeaseHeldError",
    "PagePatchRef",
    "ReapReport",
    "Reaper",
    "SessionStatus",
    "ShutdownJournal",
    "WorkspaceArchiveError",
    "backup_sqlite",
    "check_workspace_tarball",
    "install_workspace",
    "snapshot_sqlite",
    "tar_workspace",
]
