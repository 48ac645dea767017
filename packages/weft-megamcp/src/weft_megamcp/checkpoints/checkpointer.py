"""DebouncedCheckpointer: asynchronous, coalesced checkpoints of one live session.

The host calls `notify_mutation(state_version)` after every mutating tool call. A checkpoint runs
`debounce_s` after the last mutation of a burst (but no later than `max_delay_s` after the first
unsaved one), so a burst of writes costs one upload. A checkpoint takes a consistent copy of the
live DB with the sqlite3 backup API into a temp file (writers keep going), tars the workspace,
and puts both through the CheckpointStore under the session's lease.

Acknowledgement contract: `durable_version` is the highest state version covered by a completed
(published) checkpoint; `await wait_durable(v)` returns once a checkpoint covering `v` is
published. A write whose version was acknowledged this way is in every later `latest()`.
Versions are read *before* the backup starts, so a checkpoint never claims a write it missed.
If the lease is lost (FencingError) the checkpointer stops and every waiter gets the error.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sqlite3
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from weft_megamcp.checkpoints._errors import CheckpointError, FencingError
from weft_megamcp.checkpoints.store import CheckpointRef, CheckpointStore, Lease

__all__ = ["DebouncedCheckpointer", "backup_sqlite"]

log = logging.getLogger(__name__)


def backup_sqlite(src: str | Path, dest: str | Path) -> None:
    """A consistent copy of a live SQLite DB (WAL or rollback journal) via the backup API."""
    source = sqlite3.connect(f"file:{Path(src)}?mode=ro", uri=True, timeout=30)
    try:
        target = sqlite3.connect(str(dest))
        try:
            source.backup(target)
        finally:
            target.close()
    finally:
        source.close()


class DebouncedCheckpointer:
    def __init__(
        self,
        store: CheckpointStore,
        lease: Lease,
        db_path: str | Path | None,
        *,
        workspace: str | Path | None = None,
        debounce_s: float = 0.5,
        max_delay_s: float = 5.0,
        on_checkpoint: Callable[[CheckpointRef], None] | None = None,
    ) -> None:
        if debounce_s < 0 or max_delay_s < debounce_s:
            raise ValueError("need 0 <= debounce_s <= max_delay_s")
        self.store = store
        self.lease = lease
        self.db_path = Path(db_path) if db_path is not None else None
        self.workspace = Path(workspace) if workspace is not None else None
        self.debounce_s = debounce_s
        self.max_delay_s = max_delay_s
        self.on_checkpoint = on_checkpoint
        self.version = 0  # latest state version notified
        self.durable_version = 0
        self.last_ref: CheckpointRef | None = None
        self.checkpoints = 0
        self.failure: FencingError | None = None  # sticky: the lease is lost
        self.last_error: Exception | None = None  # transient: retried
        self.retry_s = 1.0
        self._retry_pending = False
        self._first_dirty: float | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._running: asyncio.Task[None] | None = None
        self._changed = asyncio.Condition()
        self._closed = False

    @property
    def dirty(self) -> bool:
        return self.version > self.durable_version

    def notify_mutation(self, state_version: int | None = None) -> None:
        """Record a mutation (call from the event loop thread after the write committed)."""
        if self._closed:
            raise CheckpointError("checkpointer is closed")
        if self.failure is not None:
            raise self.failure
        self.version = (
            self.version + 1 if state_version is None else max(self.version, state_version)
        )
        loop = asyncio.get_running_loop()
        now = loop.time()
        if self._first_dirty is None:
            self._first_dirty = now
        if self._timer is not None:
            self._timer.cancel()
        delay = min(self.debounce_s, max(0.0, self._first_dirty + self.max_delay_s - now))
        self._timer = loop.call_later(delay, self._fire)

    def _fire(self) -> None:
        self._timer = None
        if self._running is None or self._running.done():
            self._running = asyncio.get_running_loop().create_task(self._run())
        # else: the running checkpoint re-checks `dirty` when it ends

    async def _run(self) -> None:
        while self.dirty and self.failure is None:
            self._first_dirty = None
            await self._checkpoint_once()
            if self._retry_pending:
                return

    async def _checkpoint_once(self) -> None:
        version = self.version
        try:
            ref = await asyncio.to_thread(self._snapshot_and_put, version)
        except FencingError as exc:
            self.failure = exc
            log.warning("checkpointer stopped: %s", exc)
        except Exception as exc:  # a storage hiccup: stay dirty and retry later
            log.warning("checkpoint of %s failed: %s", self.lease.session_id, exc)
            self.last_error = exc
            if not self._closed:
                loop = asyncio.get_running_loop()
                self._timer = loop.call_later(max(self.debounce_s, self.retry_s), self._fire)
            self._retry_pending = True
        else:
            self.last_error = None
            self._retry_pending = False
            self.durable_version = max(self.durable_version, version)
            self.last_ref = ref
            self.checkpoints += 1
            if self.on_checkpoint is not None:
                self.on_checkpoint(ref)
        async with self._changed:
            self._changed.notify_all()

    def _snapshot_and_put(self, version: int) -> CheckpointRef:
        if self.db_path is None:
            return self.store.put(self.lease, None, workspace=self.workspace, state_version=version)
        with tempfile.TemporaryDirectory(prefix="weft-ckpt-") as tmp:
            snap = Path(tmp) / "snapshot.sqlite"
            backup_sqlite(self.db_path, snap)
            return self.store.put(self.lease, snap, workspace=self.workspace, state_version=version)

    async def wait_durable(self, version: int, timeout: float | None = None) -> CheckpointRef:
        """Wait until a published checkpoint covers `version`; raises the checkpointer's failure."""
        deadline = None if timeout is None else time.monotonic() + timeout
        async with self._changed:
            while self.durable_version < version:
                if self.failure is not None:
                    raise self.failure
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    raise TimeoutError(f"version {version} not checkpointed in time")
                await asyncio.wait_for(self._changed.wait(), remaining)
        assert self.last_ref is not None
        return self.last_ref

    async def flush(self) -> CheckpointRef | None:
        """Checkpoint now if anything is unsaved and wait for it (shutdown, offload, evict).
        Raises FencingError if the lease is lost, CheckpointError if the upload fails."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._running is not None:
            with contextlib.suppress(Exception):
                await self._running
        if self.failure is not None:
            raise self.failure
        if self.dirty:
            self._retry_pending = False
            self._running = asyncio.get_running_loop().create_task(self._run())
            await self._running
            if self._timer is not None:  # flush reports failure instead of retrying later
                self._timer.cancel()
                self._timer = None
        if self.failure is not None:
            raise self.failure
        if self.dirty and self.last_error is not None:
            raise CheckpointError(f"checkpoint failed: {self.last_error}") from self.last_error
        return self.last_ref

    async def close(self) -> CheckpointRef | None:
        try:
            return await self.flush()
        finally:
            self._closed = True
