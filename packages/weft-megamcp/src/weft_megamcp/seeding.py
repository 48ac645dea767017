"""Seed workspaces: a bundle's or module package's `seed_workspace/` folder is where every new
session's workspace starts (the files its file tools were validated against).

The host creates each session's workspace folder itself, so a bundle runtime that copies its
seed only into a missing folder never did: file tasks started empty. The seed is part of the
registered source tree (content-addressed, so it versions with the code) and is copied here
whenever a session starts from its initial state: at group creation, and on recovery when no
checkpoint exists yet.
"""

from __future__ import annotations

import shutil
from pathlib import Path

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
