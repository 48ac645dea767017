"""Checkpoints, eviction and crash recovery of hosted sessions (over the megamcp-ops store).

After every mutating call a session's DebouncedCheckpointer uploads a consistent snapshot of
its DB and workspace to the CheckpointStore under the session's lease (generation-fenced).
Eviction flushes those checkpoints, packs the group's small metadata (group.json, ledgers, final
DBs) into one object-store blob and deletes the session files from local disk; the next call
reloads the latest persisted checkpoint (never a replay). A worker that adopts groups after a
crash steals each lease, so the dead owner is fenced, and resumes each session from its local
files when they are intact and at least as new as the latest checkpoint (a killed worker or host
leaves every committed write in them), else from the latest checkpoint.

The promise, precisely (README "Durability"):
- a write acknowledged to its caller survives a kill -9 of its worker, of the prefork master or
  of the whole host, when the host restarts on the same data dir: the replacement keeps the
  session's local DB, workspace and ledger;
- a write covered by `POST /admin/groups/{g}/checkpoint` (or older than the durability window)
  also survives the loss of the local disk: it is in the latest checkpoint of the object store;
- in both cases the ledger holds exactly the calls whose effects the resumed state holds, except
  a call that was running at the kill: it was never acknowledged, and its effect may or may not
  be in the state.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import logging
import os
import shutil
import socket
import sqlite3
import tarfile
import time
import uuid
from pathlib import Path

from fastmcp.exceptions import ToolError

from weft_megamcp._session import FINAL_DB_NAME, GROUP_FILE, LEDGER_NAME, HostedGroup, HostedSession
from weft_megamcp.checkpoints import (
    CheckpointRef,
    CheckpointStore,
    DebouncedCheckpointer,
    Lease,
    Reaper,
    ReapReport,
    ShutdownJournal,
)
from weft_megamcp.groups import GroupManager
from weft_megamcp.ledger import SessionLedger
from weft_megamcp.models import GroupStatus, RuntimeState
from weft_megamcp.objectstore import ObjectStore
from weft_megamcp.seeding import initial_workspace

log = logging.getLogger("weft_megamcp.recovery")

DROP_LOCAL_STATE = "drop_local_state"
# SQLite's files next to a DB: a stale hot journal beside a DB that was just replaced would be
# "rolled back" into it at the next open, so they go whenever the DB file is replaced.
_SIDECARS = ("-journal", "-wal", "-shm")


def drop_sidecars(db_path: Path) -> None:
    for suffix in _SIDECARS:
        db_path.with_name(db_path.name + suffix).unlink(missing_ok=True)


def _db_intact(db_path: Path) -> bool:
    """True when a session DB opens and passes `PRAGMA quick_check`. A read-write open, so a hot
    rollback journal a killed writer left is rolled back first (what makes the file usable)."""
    try:
        con = sqlite3.connect(str(db_path), timeout=30)
        try:
            rows = con.execute("PRAGMA quick_check").fetchall()
        finally:
            con.close()
    except sqlite3.Error:
        return False
    return rows == [("ok",)]


def local_state_version(s: HostedSession) -> int | None:
    """The state version of a session's files on local disk, or None when they cannot be resumed
    from (evicted, missing, or a DB that fails its integrity check).

    Every acknowledged call was ledgered after its write committed, so the ledger's highest
    version (or group.json's, after a restore that ledgers nothing) is what the files hold."""
    if not s.workspace.is_dir():
        return None
    if s.db_path.exists():
        if not _db_intact(s.db_path):
            return None
    elif s.initial_uri is not None:
        return None
    ledgered = max((e.state_version for e in s.ledger.entries), default=0)
    return max(s.state_version, ledgered)


class SessionRecovery:
    """Owns the checkpointers of one serving process and plugs into its GroupManager."""

    def __init__(
        self,
        manager: GroupManager,
        store: CheckpointStore,
        objects: ObjectStore,
        *,
        debounce_s: float = 0.5,
        max_delay_s: float = 5.0,
        min_interval_s: float = 0.0,
        max_patches: int = 0,
        owner: str | None = None,
    ) -> None:
        self.manager = manager
        self.store = store
        self.objects = objects
        self.debounce_s = debounce_s
        self.max_delay_s = max_delay_s
        self.min_interval_s = min_interval_s
        self.max_patches = max_patches
        self.owner = owner or f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self.checkpointers: dict[str, DebouncedCheckpointer] = {}
        self._starting: dict[str, asyncio.Task[None]] = {}
        manager.mutation_hooks.append(self._on_mutation)
        manager.reload_hook = self.reload
        manager.close_hooks.append(self._on_close)
        manager.fork_hooks.append(self._on_fork)
        manager.restore_hooks.append(self._on_fork)
        manager.call_guards.append(self._guard)

    def _guard(self, session: HostedSession) -> None:
        """A fenced worker (its lease was taken over) must not serve or write the session."""
        ck = self.checkpointers.get(session.session_id)
        if ck is not None and ck.failure is not None:
            raise ToolError("this session moved to another worker; reconnect through the host")

    # ---- live checkpoints ---------------------------------------------------------------------

    def _checkpointer(
        self, session: HostedSession, *, steal: bool = False
    ) -> DebouncedCheckpointer:
        ck = self.checkpointers.get(session.session_id)
        if ck is None or ck.failure is not None:
            lease = self.store.acquire(session.session_id, self.owner, steal=steal)
            ck = self._make(session, lease)
            self.checkpointers[session.session_id] = ck
        return ck

    def _make(self, session: HostedSession, lease: Lease) -> DebouncedCheckpointer:
        ck = DebouncedCheckpointer(
            self.store,
            lease,
            session.db_path if session.db_path.exists() else None,
            workspace=session.workspace,
            debounce_s=self.debounce_s,
            max_delay_s=self.max_delay_s,
            min_interval_s=self.min_interval_s,
            max_patches=self.max_patches,
            gate=lambda: session.state_lock,
        )
        ck.version = ck.durable_version = 0
        return ck

    def _on_mutation(self, group: HostedGroup, session: HostedSession) -> None:
        if group.ephemeral:
            return  # discarded at its close; `_catch_up` checkpoints it if someone asks
        ck = self.checkpointers.get(session.session_id)
        if ck is None or ck.failure is not None:
            # Taking a lease is storage I/O: do it off the event loop, then notify.
            if session.session_id not in self._starting:
                task = asyncio.get_running_loop().create_task(self._start_and_notify(session))
                self._starting[session.session_id] = task
            return
        self._notify(ck, session)

    def _notify(self, ck: DebouncedCheckpointer, session: HostedSession) -> None:
        try:
            if ck.db_path is None and session.db_path.exists():
                ck.db_path = session.db_path
            ck.notify_mutation(session.state_version)
        except Exception as exc:  # a lost lease is reported, the call itself already succeeded
            log.error("session %s: cannot checkpoint: %s", session.session_id, exc)

    async def _start_and_notify(self, session: HostedSession) -> None:
        try:
            lease = await asyncio.to_thread(self.store.acquire, session.session_id, self.owner)
            if (
                session.session_id not in self.checkpointers
                or self.checkpointers[session.session_id].failure
            ):
                self.checkpointers[session.session_id] = self._make(session, lease)
            self._notify(self.checkpointers[session.session_id], session)
        except Exception as exc:
            log.error("session %s: cannot start checkpoints: %s", session.session_id, exc)
        finally:
            self._starting.pop(session.session_id, None)

    async def _settle(self, session_id: str) -> None:
        """Wait for a checkpointer that is being started for the session."""
        task = self._starting.get(session_id)
        if task is not None:
            with contextlib.suppress(Exception):
                await task

    def _on_fork(self, group: HostedGroup) -> None:
        # A fork or restore starts from state the initial snapshot does not hold: checkpoint it.
        for s in group.sessions.values():
            if s.state_version > 0:
                self._on_mutation(group, s)

    async def _catch_up(self, group: HostedGroup, s: HostedSession) -> DebouncedCheckpointer | None:
        """The session's checkpointer, told of every write: an ephemeral group's writes
        scheduled none, so an explicit flush (checkpoint request, graceful stop) notifies them."""
        await self._settle(s.session_id)
        ck = self.checkpointers.get(s.session_id)
        if group.ephemeral and s.state_version > 0 and (ck is None or ck.version < s.state_version):
            if ck is None or ck.failure is not None:
                ck = self._checkpointer(s)
            self._notify(ck, s)
        return ck

    async def flush(self, group: HostedGroup) -> None:
        for s in group.sessions.values():
            ck = await self._catch_up(group, s)
            if ck is not None:
                await ck.flush()

    async def wait_durable(
        self, group: HostedGroup, timeout: float | None = None
    ) -> dict[str, int]:
        """Wait until every session's current state version is in a published checkpoint."""
        out = {}
        for m, s in group.sessions.items():
            ck = await self._catch_up(group, s)
            if ck is not None and s.state_version > 0:
                await ck.wait_durable(s.state_version, timeout)
            out[m] = s.state_version
        return out

    async def release(self, group_id: str) -> None:
        """Hand a group over: make every write durable, stop its checkpointers, drop it here."""
        group = self.manager.get(group_id)
        await self.manager.ensure_loaded(group)
        async with self.manager.quiesced(group):
            for s in group.sessions.values():
                await self._settle(s.session_id)
                if s.state_version > 0:
                    ck = self._checkpointer(s)
                    if ck.durable_version < s.state_version:
                        ck.notify_mutation(s.state_version)
                    await ck.flush()
        for s in group.sessions.values():
            if s.session_id in self.checkpointers:
                await self.checkpointers.pop(s.session_id).close()
        await self.manager.release(group_id)

    async def _stop(self, session_id: str) -> None:
        """Stop a session's checkpointer without a final upload; waits for one in flight."""
        ck = self.checkpointers.pop(session_id, None)
        if ck is None:
            return
        await ck.stop()

    def _delete_checkpoints(self, session_id: str) -> None:
        # A closed session's checkpoints are garbage; on a local store a concurrent writer may
        # still be renaming into the folder, so retry a few times and then give up quietly.
        for attempt in range(5):
            try:
                self.store.delete_session(session_id)
                return
            except OSError as exc:
                if attempt == 4:
                    log.warning("checkpoints of closed session %s not deleted: %s", session_id, exc)
                time.sleep(0.05 * (attempt + 1))

    async def _on_close(self, group: HostedGroup) -> None:
        """Close each session as a journaled shutdown, so a reaper can finish it after a crash."""
        for s in group.sessions.values():
            await self._settle(s.session_id)
            ck = self.checkpointers.get(s.session_id)
            await self._stop(s.session_id)
            if ck is None or ck.failure is not None:
                continue  # never checkpointed here, or another owner holds it now
            await asyncio.to_thread(self._journaled_close, s, ck)

    def _journaled_close(self, s: HostedSession, ck: DebouncedCheckpointer) -> None:
        journal = ShutdownJournal(self.store, ck.lease)
        journal.begin([DROP_LOCAL_STATE])
        shutil.rmtree(s.root, ignore_errors=True)
        # No `step_done` / `finish` records: the delete below removes the journal with the
        # checkpoints, and a crash (or a failed delete) before it leaves the session `closing`
        # with its one idempotent step pending, which the reaper runs again, closes and
        # deletes. Those two fenced, fsynced writes were a third of a session's close.
        self._delete_checkpoints(s.session_id)

    def _local_session_dirs(self) -> dict[str, Path]:
        out: dict[str, Path] = {}
        for gfile in self.manager.groups_dir.glob(f"*/{GROUP_FILE}"):
            try:
                group = HostedGroup.load(gfile.parent)
            except (OSError, ValueError, KeyError):
                continue
            out.update({s.session_id: s.root for s in group.sessions.values()})
        return out

    async def reap(self) -> ReapReport:
        """Finish shutdowns a crash interrupted (idempotent), then drop closed sessions' data."""
        dirs = await asyncio.to_thread(self._local_session_dirs)

        def drop_local_state(session_id: str, _lease: object) -> None:
            if session_id in dirs:
                shutil.rmtree(dirs[session_id], ignore_errors=True)

        report = await Reaper(
            self.store, {DROP_LOCAL_STATE: drop_local_state}, owner=f"reaper:{self.owner}"
        ).reap()
        for sid in await asyncio.to_thread(self.store.sessions):
            if sid not in self.checkpointers and self.store.status(sid).state == "closed":
                await asyncio.to_thread(self._delete_checkpoints, sid)
        # Uploads a kill -9 interrupted; 10 minutes is far past any live writer's put.
        await asyncio.to_thread(self.store.sweep_temporaries, 600.0)
        return report

    # ---- eviction -----------------------------------------------------------------------------

    def _pack_metadata(self, group: HostedGroup) -> str:
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w:gz") as tar:
            tar.add(group.root / GROUP_FILE, arcname=GROUP_FILE)
            for m, s in group.sessions.items():
                for name in (LEDGER_NAME, FINAL_DB_NAME):
                    if (s.root / name).exists():
                        tar.add(s.root / name, arcname=f"{m}/{name}")
        return self.objects.put_bytes(buf.getvalue())

    async def evict(self, group_id: str) -> None:
        """Checkpoint the group, store its metadata, remove its session files from local disk."""
        m = self.manager
        group = m.get(group_id)
        if group.runtime == RuntimeState.EVICTED:
            return
        async with m.idle_transition(group, RuntimeState.LOADED, RuntimeState.OFFLOADED) as holding:
            if not holding:
                return
            for s in group.sessions.values():
                await self._settle(s.session_id)
                if s.state_version > 0:
                    ck = self._checkpointer(s)
                    if ck.durable_version < s.state_version:
                        ck.notify_mutation(s.state_version)
                    await ck.flush()
            group.runtime = RuntimeState.EVICTED
            group.save()
            group.checkpoint_key = await asyncio.to_thread(self._pack_metadata, group)
            group.save()
            for s in group.sessions.values():
                if s.session_id in self.checkpointers:
                    await self.checkpointers.pop(s.session_id).close()
                for name in ("state.sqlite", "state.sqlite-wal", FINAL_DB_NAME):
                    (s.root / name).unlink(missing_ok=True)
                shutil.rmtree(s.workspace, ignore_errors=True)

    async def reload(self, group: HostedGroup) -> None:
        """Bring an evicted group back: latest checkpoint (or initial snapshot) per session."""
        if group.checkpoint_key:
            data = await asyncio.to_thread(self.objects.get_bytes, group.checkpoint_key)
            with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
                tar.extractall(group.root, filter="data")
        for s in group.sessions.values():
            await asyncio.to_thread(self._restore_session, s, steal=True)
        group.runtime = RuntimeState.LOADED
        group.save()
        self._checkpoint_if_ahead(group)

    def _restore_session(self, s: HostedSession, *, steal: bool) -> None:
        s.root.mkdir(parents=True, exist_ok=True)
        old = self.checkpointers.pop(s.session_id, None)
        if old is not None:
            old.abandon()
        # The lease first (a new generation: any previous owner is fenced from here on), then
        # the state.
        ck = self._checkpointer(s, steal=steal)
        ref = self.store.latest(s.session_id)
        s.ledger = SessionLedger(s.root / LEDGER_NAME)
        local = local_state_version(s)
        if local is not None and (ref is None or local >= ref.state_version):
            # The local files hold every committed write (a killed process loses none of them);
            # the checkpoint is older or equal: restoring it would drop acknowledged writes.
            s.state_version = local
        else:
            self._restore_checkpoint(s, ref)
        ck.last_ref = ref
        ck.durable_version = ref.state_version if ref is not None else 0
        ck.durable_version = min(ck.durable_version, s.state_version)
        ck.version = s.state_version  # dirty when the local files are ahead: recover() notifies

    def _restore_checkpoint(self, s: HostedSession, ref: CheckpointRef | None) -> None:
        drop_sidecars(s.db_path)
        if ref is not None:
            s.workspace.mkdir(exist_ok=True)
            self.store.fetch(ref, s.db_path, s.workspace)
            s.state_version = ref.state_version
        else:
            s.db_path.unlink(missing_ok=True)
            if s.initial_uri:
                src, _ = self.manager.registry.snapshot_file(s.initial_uri)
                shutil.copyfile(src, s.db_path)
            shutil.rmtree(s.workspace, ignore_errors=True)
            s.workspace.mkdir(exist_ok=True)
            registry = self.manager.registry
            record = registry.get(s.mcp_id, s.version)
            initial_workspace(registry, record, s.workspace, s.initial_workspace_uri)
            s.state_version = 0
        # The ledger keeps exactly the calls whose effects the restored state holds.
        kept = [e for e in s.ledger.entries if e.state_version <= s.state_version]
        if len(kept) != len(s.ledger.entries):
            s.ledger.replace(kept)

    def _checkpoint_if_ahead(self, group: HostedGroup) -> None:
        """Local files resumed ahead of the latest checkpoint: checkpoint them soon."""
        for s in group.sessions.values():
            ck = self.checkpointers.get(s.session_id)
            if ck is not None and ck.dirty:
                self._notify(ck, s)

    async def recover(self, group: HostedGroup) -> None:
        """Crash recovery of an adopted group: every session from its latest persisted checkpoint."""
        if group.runtime == RuntimeState.EVICTED or group.status == GroupStatus.CLOSED:
            return
        for s in group.sessions.values():
            await asyncio.to_thread(self._restore_session, s, steal=True)
        group.save()
        self._checkpoint_if_ahead(group)
