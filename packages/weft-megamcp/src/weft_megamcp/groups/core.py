"""The state every part of the group manager shares: the groups of this process, their
sessions' runtimes, token table and hooks, and the primitives the other parts build on
(`_quiesce` / `quiesced`: no call in flight; `_require`: a group status guard).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Protocol

from weft_core.models import LedgerEntry
from weft_megamcp._session import HostedGroup, HostedSession
from weft_megamcp.exceptions import GroupStateError, NotFoundError
from weft_megamcp.groups.tokens import TokenTable
from weft_megamcp.models import GroupStatus, SessionInfo
from weft_megamcp.preempt import LOOP_WATCHDOG
from weft_megamcp.registry import Registry
from weft_megamcp.runtime import ModuleRuntime, ServerRuntime
from weft_megamcp.sanitize import Sanitizer
from weft_megamcp.screening import ScreeningSettings
from weft_megamcp.session_sqlite import apply_to_sessions_under
from weft_megamcp.stdio_runtime import CommandRuntime

log = logging.getLogger("weft_megamcp.groups")

MutationHook = Callable[[HostedGroup, HostedSession], None]


class WriteFence(Protocol):
    """Fencing of a session's calls by its lease (weft_megamcp.fencing.LeaseFence).

    Contract: `before_call` raises ToolError when this process no longer owns the session;
    `before_ack` raises ToolError unless it owns the session after a write committed.
    """

    async def before_call(self, session: HostedSession) -> None: ...

    async def before_ack(self, session: HostedSession) -> None: ...


def _new_id(prefix: str) -> str:
    return f"{prefix}_{secrets.token_hex(8)}"


class GroupCore:
    """The groups served in this process and what every operation on them needs."""

    def __init__(
        self,
        data_dir: Path,
        registry: Registry,
        *,
        token_ttl_s: float = 24 * 3600.0,
        call_timeout_s: float = 60.0,
        sanitizer: Sanitizer | None = None,
        diff_max_rows: int = 200,
        max_result_chars: int = 4 * 1024 * 1024,
        group_max_calls: int = 8,
        tool_threads: int = 256,
        screening: ScreeningSettings | None = None,
        groups_dir: Path | None = None,
    ) -> None:
        self.data_dir = data_dir.resolve()
        self.groups_dir = (groups_dir or self.data_dir / "groups").resolve()
        self.snapshots_dir = self.data_dir / "snapshots"
        self.groups_dir.mkdir(parents=True, exist_ok=True)
        self.snapshots_dir.mkdir(parents=True, exist_ok=True)
        apply_to_sessions_under(self.groups_dir)
        self.registry = registry
        self.token_ttl_s = token_ttl_s
        self.call_timeout_s = call_timeout_s
        self.diff_max_rows = diff_max_rows
        # Per-call resource limits (see MegaMCPSettings for what each bounds).
        self.max_result_chars = max_result_chars
        self.group_max_calls = group_max_calls
        self.tool_threads = tool_threads
        self.watchdog = LOOP_WATCHDOG
        # Per-process session caps of screened modules (the host's settings, not the environ).
        self.screening = screening or ScreeningSettings()
        # Held by running calls only; an idle group's semaphore goes with its last call.
        self._call_slots: weakref.WeakValueDictionary[str, asyncio.Semaphore] = (
            weakref.WeakValueDictionary()
        )
        self.sanitizer = sanitizer or Sanitizer()
        self.sanitizer.add_secret(str(self.data_dir))
        self.sanitizer.add_secret(str(self.groups_dir))
        self.modules = ModuleRuntime(registry)
        self.commands = CommandRuntime(registry)
        self.groups: dict[str, HostedGroup] = {}
        self.tokens = TokenTable(token_ttl_s)
        self.mutation_hooks: list[MutationHook] = []
        self.call_hooks: list[Callable[[HostedSession, LedgerEntry], None]] = []
        self.reload_hook: Callable[[HostedGroup], Awaitable[None]] | None = None
        self.call_guards: list[Callable[[HostedSession], None]] = []
        self.close_hooks: list[Callable[[HostedGroup], Awaitable[None]]] = []
        self.fork_hooks: list[Callable[[HostedGroup], None]] = []
        self.restore_hooks: list[Callable[[HostedGroup], None]] = []
        self.base_url = ""
        # Lease checks before a call runs and before a write is acknowledged (fencing.py).
        self.fence: WriteFence | None = None

    # ---- lookup -------------------------------------------------------------------------------

    def runtime(self, session: HostedSession) -> ServerRuntime:
        return self.commands if session.dedicated else self.modules

    def get(self, group_id: str) -> HostedGroup:
        group = self.groups.get(group_id)
        if group is None:
            raise NotFoundError(f"group {group_id!r} does not exist here")
        return group

    def authenticate(self, token: str | None) -> HostedSession:
        """The session a bearer token opens, or AuthError (missing, unknown, revoked, expired)."""
        return self.tokens.authenticate(token)

    def moved_away(self, token: str) -> bool:
        """True for a token this process does not serve and never revoked (see TokenTable)."""
        return self.tokens.moved_away(token)

    def group_of(self, session: HostedSession) -> HostedGroup:
        return self.get(session.group_id)

    def _session_info(self, session: HostedSession, token: str) -> SessionInfo:
        return SessionInfo(
            session_id=session.session_id,
            mcp_id=session.mcp_id,
            version=session.version,
            url=f"{self.base_url}/mcp",
            token=token,
        )

    def _issue_token(self, session: HostedSession) -> str:
        return self.tokens.issue(session)

    # ---- quiescence ---------------------------------------------------------------------------

    async def _hold(self, group: HostedGroup) -> AsyncExitStack:
        """Hold every session lock of the group (no call in flight); runtimes stay loaded.
        Cancellation-safe like `_quiesce`."""
        stack = AsyncExitStack()
        try:
            for s in group.sessions.values():
                await stack.enter_async_context(s.lock)
        except BaseException:
            await stack.aclose()
            raise
        return stack

    async def _quiesce(self, group: HostedGroup) -> AsyncExitStack:
        """Hold every session lock of the group (no call in flight) and release runtimes.

        Exception- and cancellation-safe: the host's stop cancels the idle loop, which may be
        midway here (a lock held, a runtime release awaited); the locks taken so far must be
        given back, else the shutdown's own quiesce waits for them forever.
        """
        stack = await self._hold(group)
        try:
            for s in group.sessions.values():
                await self.runtime(s).release(s)
        except BaseException:
            await stack.aclose()
            raise
        return stack

    @contextlib.asynccontextmanager
    async def quiesced(self, group: HostedGroup) -> AsyncIterator[None]:
        """Hold the group with no call in flight and its runtimes released (a hand-over flushes
        its checkpoints inside this)."""
        async with await self._quiesce(group):
            yield

    def _require(self, group: HostedGroup, *allowed: GroupStatus) -> None:
        if group.status not in allowed:
            raise GroupStateError(
                f"group {group.group_id} is {group.status}; needs {'/'.join(allowed)}"
            )
