"""Write fencing: a host that lost a session's lease stops acknowledging its writes.

Leases are generation-fenced in the checkpoint store (`weft_megamcp.checkpoints`); before this
module a stale owner learned of a takeover only when its next checkpoint upload failed, and
went on acknowledging writes until then (seconds, into files the new owner serves). Now:

- **before a call runs** the session's lease is confirmed (at most once per
  `lease_check_interval_s`; 0 = before every call): a host that is no longer the owner refuses
  the call without running it;
- **before a write is acknowledged** (a call whose effects changed the session's state) the
  lease is read again, never from a cache, and the first write of a session here takes the
  lease first (refused when another host holds it). A fenced write is answered as an error,
  is not ledgered, does not advance the state version and triggers no checkpoint.

The bound: no write is acknowledged unless this host was the session's owner after the write
committed — after a takeover completes, a fenced host acknowledges 0 writes. A call already in
flight at the takeover (it passed its first check before) or, with an interval > 0, one starting
less than `lease_check_interval_s` after it may still run and change the local files, but it is
never acknowledged; on a data dir the new owner shares, the new owner's copy was restored from
its checkpoint after it took the lease.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING

from fastmcp.exceptions import ToolError

from weft_megamcp._session import HostedSession
from weft_megamcp.checkpoints import CheckpointError, FencingError

if TYPE_CHECKING:
    from weft_megamcp.recovery import SessionRecovery

FENCED_MESSAGE = (
    "this session is now served by another host (its lease was taken over); "
    "the call was not acknowledged"
)


class LeaseFence:
    """Confirms a session's lease before its calls run and before its writes are acknowledged."""

    def __init__(self, recovery: SessionRecovery, *, interval_s: float = 1.0) -> None:
        self.recovery = recovery
        self.interval_s = interval_s
        self._confirmed: dict[str, float] = {}  # session id -> monotonic time of the last check
        self.refused = 0  # calls and writes refused because the lease was lost

    def _fenced(self, session: HostedSession) -> ToolError:
        self._confirmed.pop(session.session_id, None)
        self.refused += 1
        return ToolError(FENCED_MESSAGE)

    def _owned_elsewhere(self, session: HostedSession) -> bool:
        """True when the session's current lease is not this host's (storage I/O: a thread)."""
        rec = self.recovery
        ck = rec.checkpointers.get(session.session_id)
        if ck is not None and ck.failure is None:
            try:
                rec.store.check_fence(ck.lease)
            except FencingError as exc:
                ck.failure = exc  # sticky: its checkpointer stops as well
                return True
            return False
        if ck is not None:
            return True  # its checkpointer already found the lease lost
        current = rec.store.current_lease(session.session_id)
        return current is not None and current.owner != rec.owner

    async def before_call(self, session: HostedSession) -> None:
        """Refuse a call of a session this host no longer owns (checked at most every
        `interval_s`)."""
        now = time.monotonic()
        last = self._confirmed.get(session.session_id)
        if last is not None and now - last < self.interval_s:
            return
        if await self._lost(session):
            raise self._fenced(session)
        self._confirmed[session.session_id] = now

    async def _lost(self, session: HostedSession) -> bool:
        try:
            if self.recovery.store.local:
                # A few stats and one small read: cheaper than handing it to a thread, which
                # every acknowledged write would otherwise pay.
                return self._owned_elsewhere(session)
            return await asyncio.to_thread(self._owned_elsewhere, session)
        except (CheckpointError, OSError):
            return True  # fail closed: a lease that cannot be read is not confirmed

    async def before_ack(self, session: HostedSession) -> None:
        """Confirm (or, for the first write here, take) the lease before a write is
        acknowledged; raises ToolError when another host owns the session."""
        rec = self.recovery
        await rec._settle(session.session_id)
        ck = rec.checkpointers.get(session.session_id)
        if ck is not None and ck.failure is None:
            lost = await self._lost(session)
        else:
            lost = not await self._take(session)
        if lost:
            raise self._fenced(session)
        self._confirmed[session.session_id] = time.monotonic()

    async def _take(self, session: HostedSession) -> bool:
        """Acquire the lease for the first write here; False when another host holds it."""
        rec = self.recovery
        try:
            lease = await asyncio.to_thread(rec.store.acquire, session.session_id, rec.owner)
        except (CheckpointError, OSError):
            return False
        ck = rec.checkpointers.get(session.session_id)
        if ck is None or ck.failure is not None:
            rec.checkpointers[session.session_id] = rec._make(session, lease)
        return True

    def forget(self, session_id: str) -> None:
        self._confirmed.pop(session_id, None)
