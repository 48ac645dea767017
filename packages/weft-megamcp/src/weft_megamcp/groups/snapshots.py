"""Snapshots, restore and fork: plain copies of each session's DB, workspace and ledger; and
export: a live group's (or a snapshot's) DBs and workspaces stored in the object store by
content, so a new group on any host sharing the store starts from them."""

from __future__ import annotations

import asyncio
import json
import shutil
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from weft_megamcp._session import (
    DB_NAME,
    LEDGER_NAME,
    WORKSPACE_NAME,
    HostedGroup,
    HostedSession,
)
from weft_megamcp.checkpoint_diff import CHECKPOINT_FILES
from weft_megamcp.checkpoints.checkpointer import snapshot_sqlite
from weft_megamcp.exceptions import MegaMCPUserError, NotFoundError
from weft_megamcp.groups.core import _new_id
from weft_megamcp.groups.idle import IdleGroups
from weft_megamcp.models import GroupHandle, GroupStatus, SessionSnapshot


def _copy_state(src: Path, dst: Path) -> None:
    """Copy a session's DB, workspace, ledger and checkpoint-diff baselines from folder `src` to
    folder `dst` (plain copies)."""
    dst.mkdir(parents=True, exist_ok=True)
    for name in (DB_NAME, DB_NAME + "-wal", DB_NAME + "-journal", LEDGER_NAME, *CHECKPOINT_FILES):
        if (src / name).exists():
            shutil.copyfile(src / name, dst / name)
        else:
            (dst / name).unlink(missing_ok=True)
    if (dst / WORKSPACE_NAME).exists():
        shutil.rmtree(dst / WORKSPACE_NAME)
    if (src / WORKSPACE_NAME).exists():
        shutil.copytree(src / WORKSPACE_NAME, dst / WORKSPACE_NAME, symlinks=True)
    else:
        (dst / WORKSPACE_NAME).mkdir()


class GroupSnapshots(IdleGroups):
    """Copies a group's state out (snapshot), back in (restore) and into new groups (fork)."""

    async def snapshot(self, group_id: str) -> str:
        """Copy every session's DB, workspace and ledger of a live group; returns the snapshot id."""
        group = self.get(group_id)
        self._require(group, GroupStatus.ACTIVE, GroupStatus.PAUSED, GroupStatus.FROZEN)
        await self._ensure_loaded(group)
        snapshot_id = _new_id("snap")
        tmp = self.snapshots_dir / f".{snapshot_id}.tmp"
        async with await self._quiesce(group):
            meta: dict[str, Any] = {"group_id": group_id, "sessions": {}}
            for m, s in group.sessions.items():
                await asyncio.to_thread(_copy_state, s.root, tmp / m)
                meta["sessions"][m] = {
                    "version": s.version,
                    "state_version": s.state_version,
                    "calls": len(s.ledger),
                }
            (tmp / "meta.json").write_text(json.dumps(meta))
        tmp.rename(self.snapshots_dir / snapshot_id)
        return snapshot_id

    def _snapshot_dir(self, snapshot_id: str) -> tuple[Path, dict[str, Any]]:
        if not snapshot_id.startswith("snap_") or "/" in snapshot_id:
            raise NotFoundError(f"snapshot {snapshot_id!r} does not exist")
        folder = self.snapshots_dir / snapshot_id
        if not (folder / "meta.json").exists():
            raise NotFoundError(f"snapshot {snapshot_id!r} does not exist")
        return folder, json.loads((folder / "meta.json").read_text())

    async def restore(self, group_id: str, snapshot_id: str) -> None:
        """Put a group back to a snapshot of itself (state, workspace, ledger); it becomes active."""
        group = self.get(group_id)
        self._require(group, GroupStatus.ACTIVE, GroupStatus.PAUSED, GroupStatus.FROZEN)
        folder, meta = self._snapshot_dir(snapshot_id)
        if set(meta["sessions"]) != set(group.sessions):
            raise MegaMCPUserError(
                f"snapshot {snapshot_id} holds MCPs {sorted(meta['sessions'])}, not this group's"
            )
        await self._ensure_loaded(group)
        async with await self._quiesce(group):
            for m, s in group.sessions.items():
                # The write gate as well as the call lock: a checkpoint copies the state under
                # the gate only, and must neither read files being replaced nor label restored
                # state with the version from before the restore.
                async with s.state_lock:
                    await asyncio.to_thread(_copy_state, folder / m, s.root)
                    s.final_db.unlink(missing_ok=True)
                    s.ledger = type(s.ledger)(s.root / LEDGER_NAME)
                    # A restore is a new state: versions stay monotonic so checkpoints order
                    # correctly.
                    s.state_version = (
                        max(s.state_version, int(meta["sessions"][m]["state_version"])) + 1
                    )
            group.status = GroupStatus.ACTIVE
            group.save()
        for hook in self.restore_hooks:
            hook(group)

    async def export(
        self, group_id: str, snapshot_id: str | None = None
    ) -> dict[str, SessionSnapshot]:
        """Store each session's DB and workspace in the object store: the group's live state, or
        its snapshot `snapshot_id`. A group created with the returned URIs (`mcps` and
        `workspaces`) starts from exactly that state, on any host sharing the store."""
        group = self.get(group_id)
        self._require(group, GroupStatus.ACTIVE, GroupStatus.PAUSED, GroupStatus.FROZEN)
        if snapshot_id is not None:
            folder, meta = self._snapshot_dir(snapshot_id)
            if meta.get("group_id") != group_id:
                raise MegaMCPUserError(f"snapshot {snapshot_id} is not one of group {group_id}")
            roots = {m: folder / m for m in meta["sessions"]}
            return await asyncio.to_thread(self._store_states, roots)
        await self._ensure_loaded(group)
        async with await self._quiesce(group):
            roots = {m: s.root for m, s in group.sessions.items()}
            return await asyncio.to_thread(self._store_states, roots)

    def _store_states(self, roots: dict[str, Path]) -> dict[str, SessionSnapshot]:
        out: dict[str, SessionSnapshot] = {}
        with tempfile.TemporaryDirectory(prefix="megamcp-export-", dir=self.data_dir) as tmp:
            for m, root in roots.items():
                snap = SessionSnapshot(mcp_id=m)
                db = root / DB_NAME
                # A command-tier server keeps its state in the workspace; its session DB file
                # is empty, which holds no state to export (and is no SQLite file to store).
                wal = db.with_name(db.name + "-wal")
                if db.exists() and (
                    db.stat().st_size > 0 or (wal.exists() and wal.stat().st_size > 0)
                ):
                    copy = Path(tmp) / f"{m}.sqlite"
                    snapshot_sqlite(root / DB_NAME, copy)  # one file, whatever its journal mode
                    rec = self.registry.put_snapshot(m, copy)
                    snap.uri, snap.sha256 = rec.uri, rec.sha256
                if (root / WORKSPACE_NAME).is_dir():
                    snap.workspace_uri = self.registry.put_workspace(m, root / WORKSPACE_NAME).uri
                out[m] = snap
        return out

    async def fork(self, group_id: str, n: int) -> list[GroupHandle]:
        """`n` new groups with the exact current state of `group_id` (each with new tokens)."""
        if not 1 <= n <= 1024:
            raise MegaMCPUserError(f"fork count must be between 1 and 1024, not {n}")
        group = self.get(group_id)
        self._require(group, GroupStatus.ACTIVE, GroupStatus.PAUSED, GroupStatus.FROZEN)
        await self._ensure_loaded(group)
        handles: list[GroupHandle] = []
        async with await self._quiesce(group):
            plans = []
            for _ in range(n):
                gid = _new_id("grp")
                plans.append((gid, {m: _new_id("ses") for m in group.sessions}))

            def copy_one(gid: str, sids: dict[str, str]) -> None:
                for m, s in group.sessions.items():
                    dst = self.groups_dir / gid / m
                    _copy_state(s.root, dst)
                    # The fork's history is the parent's prefix, under the fork's own ids.
                    led = dst / LEDGER_NAME
                    if led.exists():
                        lines = []
                        for line in led.read_text(encoding="utf-8").splitlines():
                            e = json.loads(line)
                            e["session_id"], e["group_id"] = sids[m], gid
                            lines.append(json.dumps(e))
                        led.write_text("".join(x + "\n" for x in lines), encoding="utf-8")

            def copy_all() -> None:
                # Copies are memory-bandwidth bound; a few threads overlap page-cache work.
                with ThreadPoolExecutor(max_workers=min(4, len(plans))) as pool:
                    list(pool.map(lambda plan: copy_one(*plan), plans))

            await asyncio.to_thread(copy_all)
            for gid, sids in plans:
                root = self.groups_dir / gid
                sessions = {
                    m: HostedSession(
                        session_id=sids[m],
                        group_id=gid,
                        mcp_id=m,
                        version=s.version,
                        kind=s.kind,
                        token_sha="",
                        expires_at=0.0,
                        root=root / m,
                        initial_uri=s.initial_uri,
                        initial_sha=s.initial_sha,
                        dedicated=s.dedicated,
                        state_version=s.state_version,
                        initial_workspace_uri=s.initial_workspace_uri,
                    )
                    for m, s in group.sessions.items()
                }
                child = HostedGroup(
                    group_id=gid,
                    task_id=group.task_id,
                    root=root,
                    sessions=sessions,
                    verifier=group.verifier,
                    bindings=group.bindings,
                )
                tokens = {m: self._issue_token(s) for m, s in sessions.items()}
                child.save()
                self.groups[gid] = child
                for fork_hook in self.fork_hooks:
                    fork_hook(child)
                handles.append(
                    GroupHandle(
                        group_id=gid,
                        task_id=group.task_id,
                        sessions={m: self._session_info(s, tokens[m]) for m, s in sessions.items()},
                    )
                )
        return handles
