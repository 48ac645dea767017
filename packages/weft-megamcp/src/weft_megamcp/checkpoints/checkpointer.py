"""DebouncedCheckpointer: asynchronous, coalesced checkpoints of one live session.

The host calls `notify_mutation(state_version)` after every mutating tool call. A checkpoint runs
`debounce_s` after the last mutation of a burst (but no later than `max_delay_s` after the first
unsaved one), and never sooner than `min_interval_s` after the previous checkpoint started, so a
burst of writes costs one upload and a busy session at most one per interval. A checkpoint
takes a consistent copy of the live DB (`snapshot_sqlite`: a plain file copy under a SQLite read
lock, or the backup API for WAL databases), tars the workspace only when it changed since the
last checkpoint, and puts both through the CheckpointStore under the session's lease.

Page patches (`max_patches` > 0): the checkpointer keeps a private *base* file equal to its
last checkpoint's DB; a checkpoint compares the live DB with it under the same read lock a copy
would take and uploads only the changed pages (`pages.py`), on top of the previous checkpoint's
chain; a full copy is uploaded instead when the chain already has `max_patches` patches or its
patches together would outweigh the DB itself, so a restore reads at most about twice the DB.
The base is trusted only for the checkpoint it was last synced to (a failed upload, a restore
or a new owner voids it), so the first checkpoint of a checkpointer is always a full copy.

Durability window: a write is in a published checkpoint at most `max(max_delay_s,
min_interval_s)` plus one checkpoint's duration after it was acknowledged to the caller; a crash
of the host loses at most the writes of that window (the session resumes from the checkpoint).

Acknowledgement contract: `durable_version` is the highest state version covered by a completed
(published) checkpoint; `await wait_durable(v)` returns once a checkpoint covering `v` is
published. A write whose version was acknowledged this way is in every later `latest()`.

Consistency: a checkpoint labelled `state_version` v holds exactly the effects of versions <= v.
The version is read and the DB and workspace are copied inside `gate` (the session's write gate,
which a tool call holds from before it runs until its version is assigned), so no write can be
half-way between "committed" and "numbered" while the copy is taken. Recovery keeps exactly the
ledger entries with state_version <= v, which therefore match the restored state.
If the lease is lost (FencingError) the checkpointer stops and every waiter gets the error.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
import sqlite3
import time
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from pathlib import Path

from weft_megamcp.checkpoints._errors import CheckpointError, FencingError
from weft_megamcp.checkpoints.pages import PagePatch, sync_pages
from weft_megamcp.checkpoints.store import CheckpointRef, CheckpointStore, Lease
from weft_megamcp.checkpoints.workspace import tar_workspace

__all__ = ["DebouncedCheckpointer", "backup_sqlite", "snapshot_sqlite", "sync_sqlite_pages"]

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


def snapshot_sqlite(src: str | Path, dest: str | Path) -> None:
    """A consistent copy of a live SQLite DB, as cheaply as the journal mode allows.

    In rollback-journal modes a committed database is exactly its main file, and a reader's
    SHARED lock keeps every writer from committing until it is released: a plain file copy under
    that lock is consistent and ~10x cheaper than the backup API. WAL databases keep committed
    pages in the -wal file, so they go through the backup API.
    """
    source = sqlite3.connect(f"file:{Path(src)}?mode=ro", uri=True, timeout=30)
    try:
        mode = source.execute("PRAGMA journal_mode").fetchone()[0]
        if str(mode).lower() == "wal":
            target = sqlite3.connect(str(dest))
            try:
                source.backup(target)
            finally:
                target.close()
            return
        source.execute("BEGIN")
        source.execute("SELECT count(*) FROM sqlite_master").fetchone()  # takes the SHARED lock
        shutil.copyfile(src, dest)
        source.rollback()
    finally:
        source.close()


def sync_sqlite_pages(src: str | Path, base: str | Path) -> PagePatch | None:
    """`pages.sync_pages` from a live SQLite DB: under the read lock `snapshot_sqlite` takes (a
    rollback-journal DB is compared in place, no copy), or from a backup copy for WAL."""
    source = sqlite3.connect(f"file:{Path(src)}?mode=ro", uri=True, timeout=30)
    try:
        mode = source.execute("PRAGMA journal_mode").fetchone()[0]
        if str(mode).lower() == "wal":
            copy = Path(base).with_name(Path(base).name + ".wal-copy")
            try:
                backup_sqlite(src, copy)
                return sync_pages(copy, base)
            finally:
                copy.unlink(missing_ok=True)
        source.execute("BEGIN")
        source.execute("SELECT count(*) FROM sqlite_master").fetchone()  # takes the SHARED lock
        try:
            return sync_pages(src, base)
        finally:
            source.rollback()
    finally:
        source.close()


def _tree_signature(root: Path | None) -> tuple[tuple[str, int, int], ...]:
    if root is None or not root.exists():
        return ()
    out = []
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            p = os.path.join(dirpath, name)
            try:
                st = os.lstat(p)
            except FileNotFoundError:
                continue
            out.append((p, st.st_size, st.st_mtime_ns))
    return tuple(sorted(out))


@dataclass
class _Capture:
    """One consistent copy of a session's state, taken inside the write gate."""

    version: int
    snapshot: Path | None  # the DB copy (None: the session has no DB, or a patch replaces it)
    patch: PagePatch | None  # the DB as a page patch over `patch_of`
    patch_of: CheckpointRef | None
    signature: tuple[tuple[str, int, int], ...]
    workspace_blob: bytes | None  # None: unchanged since `reuse`, or no workspace
    reuse: CheckpointRef | None


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
        min_interval_s: float = 0.0,
        max_patches: int = 0,
        on_checkpoint: Callable[[CheckpointRef], None] | None = None,
        gate: Callable[[], AbstractAsyncContextManager[object]] | None = None,
    ) -> None:
        if debounce_s < 0 or max_delay_s < debounce_s or min_interval_s < 0:
            raise ValueError("need 0 <= debounce_s <= max_delay_s and min_interval_s >= 0")
        if max_patches < 0:
            raise ValueError("max_patches must be >= 0 (0: every checkpoint is a full copy)")
        self.store = store
        self.lease = lease
        self.db_path = Path(db_path) if db_path is not None else None
        self.workspace = Path(workspace) if workspace is not None else None
        self.debounce_s = debounce_s
        self.max_delay_s = max_delay_s
        self.min_interval_s = min_interval_s
        self.max_patches = max_patches
        self.on_checkpoint = on_checkpoint
        self.gate = gate
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
        self._last_started: float | None = None  # loop time the previous checkpoint began
        self._workspace_sig: tuple[tuple[str, int, int], ...] | None = None
        self._waiters = 0  # callers in wait_durable: they turn the debounce off
        # A private copy of `_base_of`'s DB: a patch is taken against it only while that is
        # still `last_ref` (whoever else sets last_ref, e.g. a restore, voids it).
        self._base: Path | None = None
        self._base_of: CheckpointRef | None = None
        self.patches = 0  # checkpoints that uploaded a page patch instead of a full copy

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
        if self._waiters:
            delay = 0.0
        if self._last_started is not None:
            delay = max(delay, self._last_started + self.min_interval_s - now)
        self._timer = loop.call_later(delay, self._fire)

    def _fire(self) -> None:
        self._timer = None
        if self._running is None or self._running.done():
            self._running = asyncio.get_running_loop().create_task(self._run())
        # else: the running checkpoint re-checks `dirty` when it ends

    async def _run(self) -> None:
        try:
            while self.dirty and self.failure is None:
                self._first_dirty = None
                await self._checkpoint_once()
                if self._retry_pending:
                    return
        finally:
            if self._closed:  # abandoned while this checkpoint ran
                self._drop_base()

    async def _checkpoint_once(self) -> None:
        self._last_started = asyncio.get_running_loop().time()
        try:
            async with self.gate() if self.gate is not None else contextlib.nullcontext():
                # Inside the gate no call is between "committed" and "numbered": the version
                # read here is exactly the state the copy holds.
                capture = await asyncio.to_thread(self._capture, self.version)
            ref = await asyncio.to_thread(self._put, capture)
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
            self.durable_version = max(self.durable_version, capture.version)
            self.last_ref = ref
            self.checkpoints += 1
            if self.on_checkpoint is not None:
                self.on_checkpoint(ref)
        async with self._changed:
            self._changed.notify_all()

    def _capture(self, version: int) -> _Capture:
        sig = _tree_signature(self.workspace)
        reuse = self.last_ref if sig == self._workspace_sig else None
        blob = None
        if self.workspace is not None and (reuse is None or reuse.workspace_key is None):
            blob = tar_workspace(self.workspace) if self.workspace.exists() else None
        snap = None
        patch, patch_of = self._patch(), self.last_ref
        if self.db_path is not None and patch is None:
            snap = self.store.scratch_path(self.lease.session_id)
            try:
                snapshot_sqlite(self.db_path, snap)
            except BaseException:
                snap.unlink(missing_ok=True)
                raise
        return _Capture(version, snap, patch, patch_of if patch else None, sig, blob, reuse)

    def _patch(self) -> PagePatch | None:
        """The DB's changes since the last checkpoint as a page patch, or None for a full copy."""
        base_of, base = self.last_ref, self._base
        if (
            self.db_path is None
            or base is None
            or base_of is None
            or base_of is not self._base_of
            or len(base_of.db_patches) >= self.max_patches
        ):
            return None
        self._base_of = None  # the base changes now: trusted again once a checkpoint publishes
        try:
            patch = sync_sqlite_pages(self.db_path, base)
        except FileNotFoundError:  # the base was swept away (an idle session): a full copy
            return None
        if patch is None or sum(p.size for p in base_of.db_patches) + len(patch.data) > (
            patch.db_bytes
        ):
            return None
        return patch

    def _put(self, capture: _Capture) -> CheckpointRef:
        try:
            if capture.snapshot is not None and self.max_patches > 0:
                if self._base is None:
                    self._base = self.store.scratch_path(self.lease.session_id)
                self._base_of = None
                shutil.copyfile(capture.snapshot, self._base)
            ref = self.store.put(
                self.lease,
                capture.snapshot,
                workspace=self.workspace if capture.reuse is not None else None,
                workspace_blob=capture.workspace_blob,
                state_version=capture.version,
                consume=capture.snapshot is not None,
                unchanged_workspace_of=capture.reuse,
                db_patch=capture.patch.data if capture.patch is not None else None,
                patch_of=capture.patch_of,
            )
        finally:
            if capture.snapshot is not None:
                capture.snapshot.unlink(missing_ok=True)
        self._workspace_sig = capture.signature
        if self._base is not None and (capture.snapshot is not None or capture.patch is not None):
            self._base_of = ref
        self.patches += capture.patch is not None
        return ref

    def _drop_base(self) -> None:
        self._base_of = None
        if self._base is not None:
            self._base.unlink(missing_ok=True)
            self._base = None

    async def wait_durable(
        self, version: int, timeout: float | None = None
    ) -> CheckpointRef | None:
        """Wait until a published checkpoint covers `version`; raises the checkpointer's failure.
        Returns the latest checkpoint (None only when `version` is 0 and none was ever taken)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        self._waiters += 1
        try:
            async with self._changed:
                while self.durable_version < version:
                    if self.failure is not None:
                        raise self.failure
                    remaining = None if deadline is None else deadline - time.monotonic()
                    if remaining is not None and remaining <= 0:
                        raise TimeoutError(f"version {version} not checkpointed in time")
                    self._hurry()
                    await asyncio.wait_for(self._changed.wait(), remaining)
        finally:
            self._waiters -= 1
        return self.last_ref

    def _hurry(self) -> None:
        # Someone waits for this version: a debounce timer set before they came (possibly
        # minutes long) must not keep them waiting. A pending retry keeps its back-off and
        # min_interval_s still spaces checkpoints (it protects the store, not the caller).
        if not self.dirty or self._retry_pending or self._closed:
            return
        if self._running is not None and not self._running.done():
            return  # `_run` re-checks `dirty` when its checkpoint ends
        loop = asyncio.get_running_loop()
        delay = 0.0
        if self._last_started is not None:
            delay = max(0.0, self._last_started + self.min_interval_s - loop.time())
        if self._timer is not None:
            if self._timer.when() <= loop.time() + delay:
                return
            self._timer.cancel()
        self._timer = loop.call_later(delay, self._fire)

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

    def abandon(self) -> None:
        """Take no new checkpoint (this session's state is being replaced under a new owner)."""
        self._closed = True
        if self._running is None or self._running.done():
            self._drop_base()

    async def stop(self) -> None:
        """Stop without a final upload; waits for an upload already in flight."""
        self._closed = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._running is not None and not self._running.done():
            with contextlib.suppress(Exception):
                await self._running
        self._drop_base()

    async def close(self) -> CheckpointRef | None:
        try:
            return await self.flush()
        finally:
            self._closed = True
            self._drop_base()
