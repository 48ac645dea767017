"""DebouncedCheckpointer: coalescing, acknowledgement, flush, fencing, transient failures."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from weft_megamcp.checkpoints import (
    CheckpointError,
    CheckpointRef,
    CheckpointStore,
    DebouncedCheckpointer,
    FencingError,
    Lease,
)

from .conftest import make_db, row_ids


def _insert(db: Path, name: str) -> None:
    con = sqlite3.connect(db)
    con.execute("INSERT INTO item (name) VALUES (?)", (name,))
    con.commit()
    con.close()


async def test_burst_is_coalesced_and_acknowledged(store: CheckpointStore, tmp_path: Path) -> None:
    db = make_db(tmp_path / "live.sqlite")
    lease = store.acquire("s1", "w")
    ckpt = DebouncedCheckpointer(store, lease, db, debounce_s=0.05, max_delay_s=10)
    for i in range(1, 41):
        _insert(db, f"r{i}")
        ckpt.notify_mutation(i)
    ref = await ckpt.wait_durable(40, timeout=30)
    assert ref.state_version == 40
    assert ckpt.checkpoints == 1  # forty writes inside one debounce window: one upload
    store.restore_latest("s1", tmp_path / "r.sqlite")
    assert row_ids(tmp_path / "r.sqlite") == list(range(1, 41))


async def test_acknowledged_write_is_in_every_later_checkpoint(
    store: CheckpointStore, tmp_path: Path
) -> None:
    db = make_db(tmp_path / "live.sqlite")
    lease = store.acquire("s1", "w")
    ckpt = DebouncedCheckpointer(store, lease, db, debounce_s=0.01, max_delay_s=0.05)
    acked: list[int] = []
    for i in range(1, 13):
        _insert(db, f"r{i}")
        ckpt.notify_mutation()
        if i % 4 == 0:
            await ckpt.wait_durable(ckpt.version, timeout=30)
            acked.append(i)
            store.restore_latest("s1", tmp_path / "r.sqlite")
            assert set(range(1, i + 1)) <= set(row_ids(tmp_path / "r.sqlite"))
    assert acked == [4, 8, 12]


async def test_a_waiter_does_not_wait_out_a_long_debounce(
    store: CheckpointStore, tmp_path: Path
) -> None:
    """Regression (CI, stop 24): POST /checkpoint flushed, then a racing write committed before
    it read the versions to wait for; that write sat behind a 10-minute debounce and the call
    timed out with a 500. A waiter now hurries the checkpoint, whether the write came before
    it began waiting or while it waits."""
    db = make_db(tmp_path / "live.sqlite")
    lease = store.acquire("s1", "w")
    ckpt = DebouncedCheckpointer(store, lease, db, debounce_s=600, max_delay_s=600)
    _insert(db, "before-the-wait")
    ckpt.notify_mutation(1)
    ref = await ckpt.wait_durable(1, timeout=10)
    assert ref is not None and ref.state_version == 1
    waiting = asyncio.create_task(ckpt.wait_durable(2, timeout=10))
    await asyncio.sleep(0.05)
    _insert(db, "during-the-wait")
    ckpt.notify_mutation(2)
    ref = await waiting
    assert ref is not None and ref.state_version == 2
    store.restore_latest("s1", tmp_path / "r.sqlite")
    assert row_ids(tmp_path / "r.sqlite") == [1, 2]
    await ckpt.close()


async def test_max_delay_bounds_a_continuous_burst(store: CheckpointStore, tmp_path: Path) -> None:
    db = make_db(tmp_path / "live.sqlite")
    lease = store.acquire("s1", "w")
    ckpt = DebouncedCheckpointer(store, lease, db, debounce_s=0.2, max_delay_s=0.2)
    # mutations every 20 ms would postpone a pure debounce forever; max_delay must cut in
    for i in range(1, 60):
        _insert(db, f"r{i}")
        ckpt.notify_mutation()
        await asyncio.sleep(0.02)
        if ckpt.checkpoints:
            break
    assert ckpt.checkpoints >= 1
    await ckpt.close()


async def test_flush_checkpoints_now_and_close_refuses_more(
    store: CheckpointStore, tmp_path: Path
) -> None:
    db = make_db(tmp_path / "live.sqlite")
    ws = tmp_path / "ws"
    ws.mkdir()
    lease = store.acquire("s1", "w")
    ckpt = DebouncedCheckpointer(store, lease, db, workspace=ws, debounce_s=60, max_delay_s=60)
    assert await ckpt.flush() is None  # nothing dirty, nothing uploaded
    _insert(db, "x")
    (ws / "f.txt").write_text("v1")
    ckpt.notify_mutation()
    ref = await ckpt.close()
    assert ref is not None and ref.workspace_key is not None
    assert not ckpt.dirty
    with pytest.raises(CheckpointError, match="closed"):
        ckpt.notify_mutation()
    store.restore_latest("s1", tmp_path / "r.sqlite", tmp_path / "rws")
    assert (tmp_path / "rws" / "f.txt").read_text() == "v1"


async def test_lost_lease_stops_the_checkpointer(store: CheckpointStore, tmp_path: Path) -> None:
    db = make_db(tmp_path / "live.sqlite")
    lease = store.acquire("s1", "old-worker")
    ckpt = DebouncedCheckpointer(store, lease, db, debounce_s=0.01, max_delay_s=0.01)
    _insert(db, "a")
    ckpt.notify_mutation()
    await ckpt.wait_durable(1, timeout=30)

    store.acquire("s1", "new-worker", steal=True)
    _insert(db, "b")
    ckpt.notify_mutation()
    with pytest.raises(FencingError):
        await ckpt.wait_durable(2, timeout=30)
    with pytest.raises(FencingError):
        ckpt.notify_mutation()
    with pytest.raises(FencingError):
        await ckpt.flush()
    store.restore_latest("s1", tmp_path / "r.sqlite")
    assert row_ids(tmp_path / "r.sqlite") == [1]  # the stale worker's second write never landed


class FlakyStore(CheckpointStore):
    """A real local store whose next `fail_next` puts fail like a storage outage."""

    fail_next = 0

    def put(self, lease: Lease, db_file: Any, **kw: Any) -> CheckpointRef:
        if self.fail_next:
            self.fail_next -= 1
            raise OSError("object store unavailable")
        return super().put(lease, db_file, **kw)


async def test_transient_failure_is_retried(tmp_path: Path) -> None:
    store = FlakyStore(tmp_path / "objects")
    db = make_db(tmp_path / "live.sqlite")
    lease = store.acquire("s1", "w")
    ckpt = DebouncedCheckpointer(store, lease, db, debounce_s=0.01, max_delay_s=0.01)
    ckpt.retry_s = 0.02
    store.fail_next = 1
    _insert(db, "a")
    ckpt.notify_mutation()
    ref = await ckpt.wait_durable(1, timeout=30)  # the retry after the outage succeeds
    assert ref.state_version == 1
    assert ckpt.last_error is None

    store.fail_next = 1
    _insert(db, "b")
    ckpt.debounce_s = ckpt.max_delay_s = 60
    ckpt.notify_mutation()
    with pytest.raises(CheckpointError, match="unavailable"):
        await ckpt.flush()
    assert ckpt.dirty
    assert (await ckpt.flush()) is not None
    assert not ckpt.dirty


def test_bad_windows_are_refused(store: CheckpointStore, tmp_path: Path) -> None:
    lease = store.acquire("s1", "w")
    with pytest.raises(ValueError, match="debounce"):
        DebouncedCheckpointer(store, lease, None, debounce_s=2, max_delay_s=1)


async def test_min_interval_spaces_checkpoints_and_bounds_the_window(
    store: CheckpointStore, tmp_path: Path
) -> None:
    db = make_db(tmp_path / "live.sqlite")
    lease = store.acquire("s1", "w")
    ckpt = DebouncedCheckpointer(
        store, lease, db, debounce_s=0.01, max_delay_s=0.02, min_interval_s=0.5
    )
    loop = asyncio.get_running_loop()
    _insert(db, "a")
    # The first checkpoint starts after this instant, and the second at least min_interval_s
    # after the first; `first` taken after wait_durable(1) returned would depend on how soon a
    # loaded machine resumes this task.
    first = loop.time()
    ckpt.notify_mutation(1)
    await ckpt.wait_durable(1, timeout=30)
    _insert(db, "b")
    ckpt.notify_mutation(2)
    await asyncio.sleep(0.1)
    assert ckpt.durable_version == 1  # within the interval: not yet
    await ckpt.wait_durable(2, timeout=30)
    assert loop.time() - first >= 0.45
    assert ckpt.checkpoints == 2
    store.restore_latest("s1", tmp_path / "r.sqlite")
    assert row_ids(tmp_path / "r.sqlite") == [1, 2]


async def test_unchanged_workspace_reuses_its_tarball(
    store: CheckpointStore, tmp_path: Path
) -> None:
    db = make_db(tmp_path / "live.sqlite")
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("one")
    lease = store.acquire("s1", "w")
    ckpt = DebouncedCheckpointer(store, lease, db, workspace=ws, debounce_s=0.01, max_delay_s=0.02)
    _insert(db, "a")
    ckpt.notify_mutation(1)
    first = await ckpt.wait_durable(1, timeout=30)
    _insert(db, "b")
    ckpt.notify_mutation(2)
    second = await ckpt.wait_durable(2, timeout=30)
    assert second.db_key != first.db_key
    assert second.workspace_key == first.workspace_key  # DB-only write: no new tarball
    (ws / "a.txt").write_text("two!")
    ckpt.notify_mutation(3)
    third = await ckpt.wait_durable(3, timeout=30)
    assert third.workspace_key != first.workspace_key
    out = tmp_path / "out"
    store.fetch(third, tmp_path / "r.sqlite", out)
    assert (out / "a.txt").read_text() == "two!"


def test_snapshot_sqlite_copies_committed_state_only(tmp_path: Path) -> None:
    from weft_megamcp.checkpoints import snapshot_sqlite

    db = tmp_path / "live.sqlite"
    con = sqlite3.connect(db)
    con.execute("PRAGMA journal_mode=MEMORY")
    con.execute("CREATE TABLE item (id INTEGER PRIMARY KEY, name TEXT)")
    con.execute("INSERT INTO item (name) VALUES ('committed')")
    con.commit()
    con.execute("INSERT INTO item (name) VALUES ('in flight')")  # open transaction, RESERVED
    snapshot_sqlite(db, tmp_path / "snap.sqlite")
    con.rollback()
    con.close()
    assert row_ids(tmp_path / "snap.sqlite") == [1]
    wal = make_db(tmp_path / "wal.sqlite", rows=3)  # WAL: through the backup API
    snapshot_sqlite(wal, tmp_path / "wal-snap.sqlite")
    assert row_ids(tmp_path / "wal-snap.sqlite") == [1, 2, 3]
