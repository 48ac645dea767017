"""Page patches: a patch rebuilds the later copy byte for byte; checkpoints that upload only
changed pages restore exactly the live state; malformed or tampered patches are refused."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from weft_megamcp.checkpoints import (
    CheckpointError,
    CheckpointRef,
    CheckpointStore,
    DebouncedCheckpointer,
    snapshot_sqlite,
)
from weft_megamcp.checkpoints.journal import parse_blob_key
from weft_megamcp.checkpoints.pages import apply_patch, sync_pages

from .conftest import make_db, row_ids


def _db(path: Path, rows: int, *, wal: bool = False) -> Path:
    con = sqlite3.connect(path)
    if wal:
        con.execute("PRAGMA journal_mode=WAL")
    con.execute("CREATE TABLE item (id INTEGER PRIMARY KEY, name TEXT)")
    con.executemany("INSERT INTO item (name) VALUES (?)", [(f"n{i:05d}" * 8,) for i in range(rows)])
    con.commit()
    con.close()
    return path


def _sql(path: Path, *statements: str) -> None:
    con = sqlite3.connect(path, isolation_level=None)  # autocommit: VACUUM runs outside one
    for statement in statements:
        con.execute(statement)
    con.close()


@pytest.mark.parametrize("wal", [False, True])
@pytest.mark.parametrize(
    "change",
    [
        ("UPDATE item SET name = 'changed' WHERE id = 7",),
        ("INSERT INTO item (name) SELECT name || 'x' FROM item",),  # the file grows
        ("DELETE FROM item WHERE id > 40", "VACUUM"),  # the file shrinks
        ("CREATE TABLE other (k TEXT)", "INSERT INTO other VALUES ('v')"),
    ],
)
def test_a_patch_turns_the_earlier_copy_into_the_later_one(
    tmp_path: Path, wal: bool, change: tuple[str, ...]
) -> None:
    live = _db(tmp_path / "live.sqlite", 400, wal=wal)
    before, after = tmp_path / "before.sqlite", tmp_path / "after.sqlite"
    snapshot_sqlite(live, before)
    _sql(live, *change)
    snapshot_sqlite(live, after)
    base = tmp_path / "base.sqlite"
    shutil.copyfile(before, base)
    patch = sync_pages(after, base)
    assert patch is not None and patch.changed_pages > 0
    assert patch.db_bytes == after.stat().st_size
    assert base.read_bytes() == after.read_bytes()  # the base now equals the later copy
    rebuilt = tmp_path / "rebuilt.sqlite"
    shutil.copyfile(before, rebuilt)
    apply_patch(rebuilt, patch.data)
    assert rebuilt.read_bytes() == after.read_bytes()
    assert sync_pages(after, base) == type(patch)(patch.data[:19], 0, patch.db_bytes)


def test_a_one_row_update_patches_a_few_pages_of_a_large_db(tmp_path: Path) -> None:
    live = _db(tmp_path / "live.sqlite", 5000)
    before, after = tmp_path / "before.sqlite", tmp_path / "after.sqlite"
    snapshot_sqlite(live, before)
    _sql(live, "UPDATE item SET name = 'x' WHERE id = 2500")
    snapshot_sqlite(live, after)
    patch = sync_pages(after, before)
    assert patch is not None
    assert patch.changed_pages <= 3  # the leaf page and the header page (change counter)
    assert len(patch.data) < after.stat().st_size // 20


def test_files_that_are_not_comparable_page_by_page_get_no_patch(tmp_path: Path) -> None:
    db = _db(tmp_path / "db.sqlite", 50)
    junk = tmp_path / "junk.sqlite"
    junk.write_bytes(b"not a database" * 1000)
    empty = tmp_path / "empty.sqlite"
    empty.write_bytes(b"")
    other = tmp_path / "other.sqlite"
    con = sqlite3.connect(other)
    con.execute("PRAGMA page_size = 1024")
    con.execute("CREATE TABLE t (x)")
    con.commit()
    con.close()
    for src, base in ((junk, db), (db, junk), (db, empty), (db, other)):
        kept = base.read_bytes()
        assert sync_pages(src, base) is None
        assert base.read_bytes() == kept  # left untouched: the caller makes a full copy


@pytest.mark.parametrize(
    ("mangle", "message"),
    [
        (lambda p: b"NOTPAGES!!\n" + p[11:], "not a page patch"),
        (lambda p: p[:-1], "does not match its body"),
        (
            lambda p: p[:11] + (4096).to_bytes(4, "little") + (1).to_bytes(4, "little") + p[19:],
            "beyond",
        ),
    ],
)
def test_a_malformed_patch_is_refused_before_anything_is_written(
    tmp_path: Path, mangle: object, message: str
) -> None:
    live = _db(tmp_path / "live.sqlite", 300)
    before, after = tmp_path / "before.sqlite", tmp_path / "after.sqlite"
    snapshot_sqlite(live, before)
    _sql(live, "UPDATE item SET name = 'y' WHERE id = 250")
    snapshot_sqlite(live, after)
    base = tmp_path / "base.sqlite"
    shutil.copyfile(before, base)
    patch = sync_pages(after, base)
    assert patch is not None
    original = before.read_bytes()
    with pytest.raises(CheckpointError, match=message):
        apply_patch(before, mangle(patch.data), where="the test patch")  # type: ignore[operator]
    assert before.read_bytes() == original


async def _write(
    ckpt: DebouncedCheckpointer, db: Path, statement: str, version: int
) -> CheckpointRef | None:
    """One committed write, then wait until a checkpoint covers it."""
    _sql(db, statement)
    ckpt.notify_mutation(version)
    return await ckpt.wait_durable(version, timeout=30)


async def test_checkpoints_upload_changed_pages_and_restore_the_live_state(
    store: CheckpointStore, tmp_path: Path
) -> None:
    db = make_db(tmp_path / "live.sqlite", rows=3000)
    lease = store.acquire("s1", "w")
    ckpt = DebouncedCheckpointer(store, lease, db, debounce_s=0, max_delay_s=0, max_patches=3)
    refs = []
    for i in range(1, 7):
        refs.append(
            await _write(ckpt, db, f"UPDATE item SET name = 'v{i}' WHERE id = {i * 400}", i)
        )
        store.restore_latest("s1", tmp_path / "r.sqlite")
        restored = sqlite3.connect(tmp_path / "r.sqlite")
        assert restored.execute(f"SELECT name FROM item WHERE id = {i * 400}").fetchone() == (
            f"v{i}",
        )
        restored.close()
        assert row_ids(tmp_path / "r.sqlite") == row_ids(db)
    # full, then three patches on it, then the chain is full: a new full copy and a patch on it
    assert [len(r.db_patches) for r in refs if r is not None] == [0, 1, 2, 3, 0, 1]
    assert ckpt.patches == 4
    assert refs[3] is not None and refs[3].db_key == refs[0].db_key  # type: ignore[union-attr]
    patch_bytes = [p.size for p in refs[3].db_patches]
    assert max(patch_bytes) < refs[3].db_bytes // 10  # a few pages, not the DB


async def test_a_new_owner_starts_from_a_full_copy_and_restores_the_chain(
    store: CheckpointStore, tmp_path: Path
) -> None:
    db = make_db(tmp_path / "live.sqlite", rows=2000)
    first = DebouncedCheckpointer(
        store, store.acquire("s1", "a"), db, debounce_s=0, max_delay_s=0, max_patches=8
    )
    for i in range(1, 4):
        await _write(first, db, f"DELETE FROM item WHERE id = {i}", i)
    assert first.patches == 2
    # another worker takes the session over: it restores the patched chain, then its own first
    # checkpoint is a whole copy (it has no base copy of what the store holds)
    restored = tmp_path / "taken.sqlite"
    ref = store.restore_latest("s1", restored)
    assert len(ref.db_patches) == 2 and row_ids(restored) == row_ids(db)
    second = DebouncedCheckpointer(
        store,
        store.acquire("s1", "b", steal=True),
        restored,
        debounce_s=0,
        max_delay_s=0,
        max_patches=8,
    )
    second.version = second.durable_version = ref.state_version
    new = await _write(second, restored, "DELETE FROM item WHERE id = 10", 4)
    assert new is not None and new.db_patches == [] and new.seq == ref.seq + 1
    store.restore_latest("s1", tmp_path / "again.sqlite")
    assert row_ids(tmp_path / "again.sqlite") == row_ids(restored)


async def test_a_tampered_or_missing_patch_fails_the_restore(tmp_path: Path) -> None:
    store = CheckpointStore(tmp_path / "objects")
    db = make_db(tmp_path / "live.sqlite", rows=2000)
    ckpt = DebouncedCheckpointer(
        store, store.acquire("s1", "w"), db, debounce_s=0, max_delay_s=0, max_patches=4
    )
    for i in range(1, 3):
        await _write(ckpt, db, f"UPDATE item SET name = 'z' WHERE id = {i * 100}", i)
    ref = store.latest("s1")
    assert ref is not None and len(ref.db_patches) == 1
    located = parse_blob_key(ref.db_patches[0].key)
    assert located is not None  # a local store keeps a patch in its generation's journal
    journal, offset, length = located
    with open(journal, "r+b") as fh:  # flip one bit of the patch's last byte
        fh.seek(offset + length - 1)
        last = fh.read(1)[0]
        fh.seek(offset + length - 1)
        fh.write(bytes([last ^ 1]))
    dest = tmp_path / "r.sqlite"
    with pytest.raises(CheckpointError, match="fails its sha256"):
        store.fetch(ref, dest)
    Path(journal).unlink()
    with pytest.raises(CheckpointError, match="is missing"):
        store.fetch(ref, dest)
    assert not dest.exists()  # nothing half-written where the DB goes


class _FlakyStore(CheckpointStore):
    """A real local store whose next `put` fails once, the way a storage hiccup does."""

    fail_next = False

    def put(self, *args: Any, **kwargs: Any) -> CheckpointRef:
        if self.fail_next:
            self.fail_next = False
            raise OSError("the store is unreachable")
        return super().put(*args, **kwargs)


async def test_a_failed_upload_voids_the_base_and_the_next_checkpoint_is_whole(
    tmp_path: Path,
) -> None:
    store = _FlakyStore(tmp_path / "objects")
    db = make_db(tmp_path / "live.sqlite", rows=2000)
    ckpt = DebouncedCheckpointer(
        store, store.acquire("s1", "w"), db, debounce_s=0, max_delay_s=0, max_patches=8
    )
    ckpt.retry_s = 0.01
    _sql(db, "UPDATE item SET name = 'a' WHERE id = 5")
    ckpt.notify_mutation(1)
    await ckpt.wait_durable(1, timeout=30)
    _sql(db, "UPDATE item SET name = 'b' WHERE id = 6")
    store.fail_next = True  # the patch of this write is synced into the base, then lost
    ckpt.notify_mutation(2)
    ref = await ckpt.wait_durable(2, timeout=30)
    assert ref is not None and ref.db_patches == []  # retried as a whole copy, not a patch
    _sql(db, "UPDATE item SET name = 'c' WHERE id = 7")
    ckpt.notify_mutation(3)
    ref = await ckpt.wait_durable(3, timeout=30)
    assert ref is not None and len(ref.db_patches) == 1
    store.restore_latest("s1", tmp_path / "r.sqlite")
    con = sqlite3.connect(tmp_path / "r.sqlite")
    assert con.execute("SELECT name FROM item WHERE id IN (5, 6, 7) ORDER BY id").fetchall() == [
        ("a",),
        ("b",),
        ("c",),
    ]
    con.close()
    await ckpt.close()
    assert not list((tmp_path / "objects" / "s1" / "scratch").iterdir())  # no base left behind
