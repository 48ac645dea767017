"""Idle management: offload and reload of a group's runtime, and the lock that keeps a
transition (offload, evict) from interleaving with a reload or a tool call.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncIterator

from weft_megamcp._session import HostedGroup, HostedSession
from weft_megamcp.exceptions import GroupStateError
from weft_megamcp.groups.core import GroupCore
from weft_megamcp.models import RuntimeState


class IdleGroups(GroupCore):
    """Loads a group's runtime on demand and lets idle groups go."""

    @contextlib.asynccontextmanager
    async def idle_transition(
        self, group: HostedGroup, *from_states: RuntimeState
    ) -> AsyncIterator[bool]:
        """Hold the group for a change of `runtime` (offload, evict): yields False (and holds
        nothing more) unless the group is in one of `from_states`; else holds it so no reload,
        other transition or tool call interleaves, releases every session's runtime, yields True.

        A transition awaits I/O midway (checkpoint upload, metadata pack); without this lock a
        call arriving then saw the new state early and reloaded files the transition was about to
        delete, or ran a tool on a DB being removed.
        """
        async with group.reload_lock:
            if group.runtime not in from_states:
                yield False
                return
            async with await self._quiesce(group):
                yield True

    @contextlib.asynccontextmanager
    async def _serving(self, group: HostedGroup, session: HostedSession) -> AsyncIterator[None]:
        """Hold `session.lock` on a loaded group: a transition that won the lock first is undone."""
        while True:
            await self._ensure_loaded(group)
            group.touch()
            await session.lock.acquire()
            if group.runtime == RuntimeState.LOADED:
                break
            session.lock.release()
        try:
            yield
        finally:
            session.lock.release()

    async def offload(self, group_id: str) -> None:
        """Drop a group's runtime (engines, session processes); sessions, tokens and files stay."""
        group = self.get(group_id)
        if group.runtime != RuntimeState.LOADED:
            return
        async with self.idle_transition(group, RuntimeState.LOADED) as holding:
            if holding:
                group.runtime = RuntimeState.OFFLOADED
        if not holding:
            return
        in_use = {
            (s.mcp_id, s.version)
            for g in list(self.groups.values())  # creation adds groups from threads
            if g.runtime == RuntimeState.LOADED
            for s in g.sessions.values()
            if not s.dedicated
        }
        self.modules.unload_unused(in_use)

    async def ensure_loaded(self, group: HostedGroup) -> None:
        """Reload the group's runtime if it was offloaded or evicted (a no-op when loaded)."""
        await self._ensure_loaded(group)

    async def _ensure_loaded(self, group: HostedGroup) -> None:
        if group.runtime == RuntimeState.LOADED:
            return
        async with group.reload_lock:
            await self._reload(group)

    async def _reload(self, group: HostedGroup) -> None:
        if group.runtime == RuntimeState.LOADED:  # a caller queued on the lock before us did it
            return
        if group.runtime == RuntimeState.EVICTED:
            if self.reload_hook is None:
                raise GroupStateError(
                    f"group {group.group_id} was evicted and no checkpoint store is configured"
                )
            await self.reload_hook(group)
        group.runtime = RuntimeState.LOADED

    def idle_groups(self, older_than_s: float, state: RuntimeState) -> list[HostedGroup]:
        now = time.monotonic()
        return [
            g
            for g in list(self.groups.values())  # creation adds groups from threads
            if g.runtime == state and now - g.last_used > older_than_s
        ]
