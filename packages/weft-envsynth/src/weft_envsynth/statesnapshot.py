"""MegaMCP initial snapshots from a state document.

A state document (`stateimport`) is loaded on top of the bundle's seed — a copy of
`seed.sqlite` and of `seed_workspace/` — exactly as `weft-envsynth serve --state` loads it, and
the result is what a group starts from: an initial DB stored with `put_snapshot` and an initial
workspace stored with `put_workspace`, whose URIs go to `create_group(mcps=..., workspaces=...)`.

The store is anything with MegaMCP's `put_snapshot`/`put_workspace` (its `GroupService`: the
in-process host or `MegaMCPClient`); both take host-side paths, so the files are built on the
machine the host reads from. The import report travels with the URIs: what did not fit the
schema is named, never dropped.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any, Protocol

from pydantic import Field

from weft_core.models import WeftModel, atomic_write_text
from weft_envsynth.errors import BundleError, EnvSynthUserError
from weft_envsynth.stateimport import StateImportReport, import_state

DB_NAME = "state.sqlite"
WORKSPACE_NAME = "workspace"
REPORT_NAME = "state-report.json"


class InitialStateStore(Protocol):
    """The part of MegaMCP's GroupService that stores initial state."""

    async def put_snapshot(self, mcp_id: str, sqlite_path: str | Path) -> str: ...

    async def put_workspace(self, mcp_id: str, path: str | Path) -> str: ...


class InitialState(WeftModel):
    """A state document built into a bundle's session files, ready for `put_snapshot` /
    `put_workspace`."""

    db_path: Path = Field(description="The initial DB: the seed with the document's rows.")
    workspace: Path | None = Field(
        default=None,
        description="The initial workspace folder; None when the bundle has no seed workspace "
        "and the document has no files (the group then starts from the bundle's seed).",
    )
    report: StateImportReport


class StateSnapshot(WeftModel):
    """Where a state document's initial state is stored, for `create_group`."""

    mcp_id: str
    db_uri: str = Field(description="put_snapshot's URI of the initial DB.")
    workspace_uri: str | None = Field(
        default=None, description="put_workspace's URI of the initial workspace, if any."
    )
    report: StateImportReport

    def mcps(self) -> dict[str, str | None]:
        """`create_group`'s `mcps` for this MCP."""
        return {self.mcp_id: self.db_uri}

    def workspaces(self) -> dict[str, str]:
        """`create_group`'s `workspaces` for this MCP (empty: the bundle's seed workspace)."""
        return {self.mcp_id: self.workspace_uri} if self.workspace_uri else {}


def build_initial_state(
    bundle_dir: str | Path, document: dict[str, Any] | str | Path, out_dir: str | Path
) -> InitialState:
    """Write OUT/state.sqlite, OUT/workspace/ and OUT/state-report.json from the bundle's seed
    and the state document. OUT must not already hold a state (rows would merge silently)."""
    bundle = Path(bundle_dir)
    seed_db = bundle / "seed.sqlite"
    if not (bundle / "manifest.json").is_file() or not seed_db.is_file():
        raise BundleError(f"{bundle}: not an EnvBundle (needs manifest.json and seed.sqlite)")
    out = Path(out_dir)
    db, ws = out / DB_NAME, out / WORKSPACE_NAME
    for p in (db, ws):
        if p.exists():
            raise EnvSynthUserError(f"{p} already exists; give an empty output folder")
    out.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(seed_db, db)
    seed_ws = bundle / "seed_workspace"
    if seed_ws.is_dir():
        shutil.copytree(seed_ws, ws, symlinks=False)
    report = import_state(bundle, document, db_path=db, workspace=ws)
    workspace: Path | None = ws
    if not seed_ws.is_dir() and not any(ws.iterdir()):
        # Nothing to start from but the bundle's own (absent) seed: no workspace URI.
        ws.rmdir()
        workspace = None
    atomic_write_text(out / REPORT_NAME, report.model_dump_json(indent=2))
    return InitialState(db_path=db, workspace=workspace, report=report)


async def snapshot_from_state(
    bundle_dir: str | Path,
    document: dict[str, Any] | str | Path,
    store: InitialStateStore,
    mcp_id: str,
    *,
    work_dir: str | Path | None = None,
) -> StateSnapshot:
    """Store the state document's initial state for `mcp_id` (the bundle as registered with the
    store's host); returns the URIs and the import report. Files are built under `work_dir`
    (kept) or a temporary folder (removed once stored)."""
    if work_dir is not None:
        return await _store(build_initial_state(bundle_dir, document, work_dir), store, mcp_id)
    with tempfile.TemporaryDirectory(prefix="weft-state-") as tmp:
        return await _store(build_initial_state(bundle_dir, document, tmp), store, mcp_id)


async def _store(built: InitialState, store: InitialStateStore, mcp_id: str) -> StateSnapshot:
    db_uri = await store.put_snapshot(mcp_id, built.db_path)
    ws_uri = await store.put_workspace(mcp_id, built.workspace) if built.workspace else None
    return StateSnapshot(mcp_id=mcp_id, db_uri=db_uri, workspace_uri=ws_uri, report=built.report)
