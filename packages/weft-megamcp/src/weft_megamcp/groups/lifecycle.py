"""A group's status changes: pause, resume, freeze, close, release (hand-over), and shutdown."""

from __future__ import annotations

import asyncio
import logging
import shutil

from weft_core.models import LedgerEntry
from weft_megamcp.groups.idle import IdleGroups
from weft_megamcp.models import (
    GroupInfo,
    GroupStatus,
)

log = logging.getLogger("weft_megamcp.groups")


class GroupLifecycle(IdleGroups):
    """Moves groups between statuses and reports on them."""

    async def pause(self, group_id: str) -> None:
        group = self.get(group_id)
        self._require(group, GroupStatus.ACTIVE, GroupStatus.PAUSED)
        async with await self._quiesce(group):
            group.status = GroupStatus.PAUSED
            group.save()

    async def resume(self, group_id: str) -> None:
        group = self.get(group_id)
        self._require(group, GroupStatus.ACTIVE, GroupStatus.PAUSED)
        await self._ensure_loaded(group)
        group.status = GroupStatus.ACTIVE
        group.touch()
        group.save()

    async def freeze(self, group_id: str) -> None:
        """Stop all calls and keep each session's final DB (a copy that never changes again)."""
        group = self.get(group_id)
        if group.status == GroupStatus.FROZEN:
            return
        self._require(group, GroupStatus.ACTIVE, GroupStatus.PAUSED)
        await self._ensure_loaded(group)
        async with await self._quiesce(group):
            for s in group.sessions.values():
                if s.db_path.exists():
                    tmp = s.final_db.with_suffix(".tmp")
                    shutil.copyfile(s.db_path, tmp)
                    tmp.replace(s.final_db)
            group.status = GroupStatus.FROZEN
            group.save()

    async def close(self, group_id: str, *, remove_files: bool = True) -> None:
        group = self.get(group_id)
        async with await self._quiesce(group):
            for s in group.sessions.values():
                self.tokens.revoke(s)
            group.status = GroupStatus.CLOSED
            group.save()  # a crash from here on never resumes the group; the reaper finishes it
            if remove_files:
                for close_hook in self.close_hooks:
                    try:
                        await close_hook(group)
                    except Exception:  # cleanup elsewhere must not keep a group open
                        log.exception("close hook failed for group %s", group_id)
                shutil.rmtree(group.root, ignore_errors=True)
        self.groups.pop(group_id, None)

    async def release(self, group_id: str) -> None:
        """Stop serving a group here without closing it (it moves to another worker)."""
        group = self.get(group_id)
        async with await self._quiesce(group):
            for s in group.sessions.values():
                self.tokens.withdraw(s)
            group.save()
        self.groups.pop(group_id, None)

    async def close_all(self) -> None:
        """Host shutdown: stop every runtime and persist every group; nothing is closed, so a
        restart with the same data dir resumes the groups with their tokens."""
        for group in list(self.groups.values()):
            try:  # best effort per group on the way down, and bounded: a call in flight may
                # finish (it has call_timeout_s), but nothing may hold the shutdown forever
                async with asyncio.timeout(self.call_timeout_s + 5):
                    async with await self._quiesce(group):
                        group.save()
            except Exception as exc:
                log.warning("group %s not persisted at shutdown: %r", group.group_id, exc)
        await self.commands.close()

    def ledger(self, group_id: str) -> dict[str, list[LedgerEntry]]:
        group = self.get(group_id)
        return {m: list(s.ledger.entries) for m, s in group.sessions.items()}

    def info(self, group_id: str) -> GroupInfo:
        g = self.get(group_id)
        return GroupInfo(
            group_id=g.group_id,
            task_id=g.task_id,
            status=g.status,
            runtime=g.runtime,
            sessions={
                m: {
                    "session_id": s.session_id,
                    "version": s.version,
                    "state_version": s.state_version,
                    "calls": len(s.ledger),
                    "kind": str(s.kind),
                }
                for m, s in g.sessions.items()
            },
            created_at=g.created_at,
            last_used=g.last_used,
        )
