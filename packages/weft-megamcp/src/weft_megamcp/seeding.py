"""Seed workspaces: a bundle's or module package's `seed_workspace/` folder is where every new
session's workspace starts (the files its file tools were validated against).

The host creates each session's workspace folder itself, so a bundle runtime that copies its
seed only into a missing folder never did: file tasks started empty. The seed is part of the
registered source tree (content-addressed, so it versions with the code) and is copied here
whenever a session starts from its initial state: at group creation, and on recovery when no
checkpoint exists yet.

A session may instead start from a stored initial workspace (a task's grounded files, or a
group's exported snapshot): a content-addressed tarball in the object store, verified by its
sha256 and refused if a member is a link or lands outside the folder, then swapped in whole.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from weft_megamcp.checkpoints._errors import WorkspaceArchiveError
from weft_megamcp.checkpoints.workspace import install_workspace
from weft_megamcp.exceptions import MegaMCPUserError
from weft_megamcp.registry import MCPKind, MCPRecord, Registry

SEED_WORKSPACE = "seed_workspace"


def has_seed_workspace(source_root: Path) -> bool:
    return (source_root / SEED_WORKSPACE).is_dir()


def seed_workspace(registry: Registry, record: MCPRecord, workspace: Path) -> None:
    """Copy the record's seed workspace (if it has one) into a session's workspace."""
    if record.kind == MCPKind.COMMAND or not record.metadata.get(SEED_WORKSPACE):
        return
    src = registry.source_folder(record) / SEED_WORKSPACE
    if src.is_dir():
        workspace.mkdir(parents=True, exist_ok=True)
        shutil.copytree(src, workspace, dirs_exist_ok=True)


def initial_workspace(
    registry: Registry, record: MCPRecord, workspace: Path, uri: str | None
) -> None:
    """Put a session's workspace in its initial state: the stored workspace `uri` names (in
    place of the seed), or the record's seed workspace when `uri` is None."""
    if uri is None:
        seed_workspace(registry, record, workspace)
        return
    data = registry.workspace_tarball(uri)
    try:
        install_workspace(data, workspace)
    except WorkspaceArchiveError as exc:
        raise MegaMCPUserError(f"initial workspace {uri} of {record.mcp_id}: {exc}") from None
