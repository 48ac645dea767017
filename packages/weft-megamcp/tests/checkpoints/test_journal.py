"""A local store's checkpoint journal: torn and corrupt records, fencing, the fast fence check."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

from weft_megamcp.checkpoints import CheckpointError, CheckpointStore, FencingError
from weft_megamcp.checkpoints import store as store_mod
from weft_megamcp.checkpoints.journal import (
    JOURNAL_NAME,
    append_record,
    encode_record,
    parse_blob_key,
    read_blob,
    records,
    scan,
)
from weft_megamcp.checkpoints.pages import sync_pages

from .conftest import make_db, row_ids


def _journal(store: CheckpointStore, session: str, generation: int) -> Path:
    return Path(store._gen_dir(session, generation)) / JOURNAL_NAME


def _patched_puts(store: CheckpointStore, tmp_path: Path, rows: int) -> list[int]:
    """A full checkpoint, then one page patch per added row; returns the journal's size after
    each put."""
    db = make_db(tmp_path / "live.sqlite", rows=50)
    con = sqlite3.connect(db)
    con.execute("PRAGMA journal_mode=DELETE")  # compared in place, as the checkpointer does
    con.close()
    base = tmp_path / "base.sqlite"
    shutil.copyfile(db, base)
    lease = store.acquire("s1", "w")
    ref = store.put(lease, db, state_version=1)
    sizes = [_journal(store, "s1", 1).stat().st_size]
    for i in range(rows):
        con = sqlite3.connect(db)
        con.execute("INSERT INTO item (name) VALUES (?)", (f"added{i}",))
        con.commit()
        con.close()
        patch = sync_pages(db, base)
        assert patch is not None
        ref = store.put(lease, None, db_patch=patch.data, patch_of=ref, state_version=i + 2)
        sizes.append(_journal(store, "s1", 1).stat().st_size)
    return sizes


def test_records_hold_the_blobs_and_the_latest_is_the_last_whole_one(tmp_path: Path) -> None:
    store = CheckpointStore(tmp_path / "objects")
    _patched_puts(store, tmp_path, rows=3)
    ref = store.latest("s1")
    assert ref is not None and ref.state_version == 4 and len(ref.db_patches) == 3
    for patch in ref.db_patches:
        located = parse_blob_key(patch.key)
        assert located is not None and located[0] == str(_journal(store, "s1", 1))
    store.restore_latest("s1", tmp_path / "out.sqlite")
    assert len(row_ids(tmp_path / "out.sqlite")) == 53
    # The seal, the full copy's record and one per patch, each with the checkpoint it wrote.
    held = records(str(_journal(store, "s1", 1)))
    assert [r.end for r in held[:-1]] == [r.start for r in held[1:]]
    assert [r.manifest for r in held][-1] == ref.model_dump_json().encode()
    assert len(held) == 5
    # One file per generation: no object was created beside the journal for the patches.
    names = sorted(p.name for p in _journal(store, "s1", 1).parent.iterdir())
    assert names[-1] == JOURNAL_NAME and len(names) == 2  # the full DB snapshot and it


@pytest.mark.parametrize("damage", ["torn", "flipped"])
def test_a_damaged_last_record_leaves_the_one_before(tmp_path: Path, damage: str) -> None:
    """A crash mid-append (the record cut short) or a record whose bytes never all reached the
    disk (a flipped bit): the record before it is the latest, and the owner's next put cuts the
    damage off before appending."""
    store = CheckpointStore(tmp_path / "objects")
    sizes = _patched_puts(store, tmp_path, rows=3)
    journal = _journal(store, "s1", 1)
    if damage == "torn":
        with journal.open("r+b") as fh:
            fh.truncate(sizes[-1] - 10)
    else:
        with journal.open("r+b") as fh:
            fh.seek(sizes[-2] + 60)
            byte = fh.read(1)[0]
            fh.seek(sizes[-2] + 60)
            fh.write(bytes([byte ^ 0x40]))
    assert len(records(str(journal))) == len(sizes)  # the seal and all but the damaged put
    fresh = CheckpointStore(tmp_path / "objects")  # a restarted reader knows nothing cached
    ref = fresh.latest("s1")
    assert ref is not None and ref.state_version == 3
    fresh.restore_latest("s1", tmp_path / "out.sqlite")
    assert len(row_ids(tmp_path / "out.sqlite")) == 52
    lease = fresh.acquire("s1", "w")  # the owner restarts: a new generation sealed on it
    assert fresh.latest("s1") == ref
    later = fresh.put(lease, make_db(tmp_path / "new.sqlite", rows=2), state_version=9)
    assert fresh.latest("s1") == later
    # The damaged generation's journal still ends with the damage: it is never appended to
    # again (its owner is fenced), and scanning it still finds the record before.
    assert scan(str(journal)).end == sizes[-2]


def test_an_owner_cuts_its_own_torn_tail_before_appending(tmp_path: Path) -> None:
    store = CheckpointStore(tmp_path / "objects")
    sizes = _patched_puts(store, tmp_path, rows=1)
    journal = str(_journal(store, "s1", 1))
    with open(journal, "ab") as fh:  # half a record of a put that failed part-way
        fh.write(b"WJR1\x00\x10\x00\x00garbage")
    store._tails.clear()  # as after the failed put: the end is scanned again
    lease = store.current_lease("s1")
    assert lease is not None
    ref = store.put(lease, make_db(tmp_path / "other.sqlite", rows=4), state_version=5)
    assert scan(journal).end > sizes[-1]
    assert CheckpointStore(tmp_path / "objects").latest("s1") == ref


def test_a_stale_owner_appending_to_its_journal_stays_invisible(tmp_path: Path) -> None:
    store = CheckpointStore(tmp_path / "objects")
    _patched_puts(store, tmp_path, rows=1)
    old = store.current_lease("s1")
    assert old is not None
    before = store.latest("s1")
    thief = CheckpointStore(tmp_path / "objects")  # another host
    new = thief.acquire("s1", "b", steal=True)
    assert thief.latest("s1") == before  # the seal carries the last whole record over
    # the old owner's record lands in its own generation, bypassing every check
    journal = str(_journal(store, "s1", old.generation))
    stale = before.model_copy(update={"state_version": 99, "seq": 50})  # type: ignore[union-attr]
    end = scan(journal).end
    append_record(
        journal, end, encode_record(end, [], lambda _: stale.model_dump_json().encode(), journal)
    )
    assert scan(journal).manifest is not None
    assert thief.latest("s1") == before and store.latest("s1") == before
    with pytest.raises(FencingError, match="stale"):
        store.put(old, make_db(tmp_path / "x.sqlite", rows=1))
    assert thief.put(new, make_db(tmp_path / "y.sqlite", rows=1)).generation == new.generation


def test_a_takeover_during_the_append_fails_the_put(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The owner passed its first check, then another host took the session and sealed it
    before the record was whole: the record is not in the new generation, so put() must not
    report it published."""
    store = CheckpointStore(tmp_path / "objects")
    lease = store.acquire("s1", "a")
    first = store.put(lease, make_db(tmp_path / "a.sqlite", rows=1), state_version=1)
    thief = CheckpointStore(tmp_path / "objects")
    real = store_mod.append_record

    def steal_then_append(path: str, end: int, record: bytes) -> tuple[int, bool]:
        monkeypatch.setattr(store_mod, "append_record", real)  # the thief's seal appends too
        thief.acquire("s1", "b", steal=True)
        return real(path, end, record)

    monkeypatch.setattr(store_mod, "append_record", steal_then_append)
    with pytest.raises(FencingError, match="stale"):
        store.put(lease, make_db(tmp_path / "b.sqlite", rows=2), state_version=2)
    assert thief.latest("s1") == first


def test_the_fast_fence_check_sees_a_session_claimed_again(tmp_path: Path) -> None:
    """A lease whose generation number was claimed again after the session was deleted (same
    file name, another token) is stale, though no next generation exists."""
    store = CheckpointStore(tmp_path / "objects")
    old = store.acquire("s1", "a")
    store.check_fence(old)  # confirmed: cached for the fast path
    other = CheckpointStore(tmp_path / "objects")
    other.delete_session("s1")
    again = other.acquire("s1", "b")
    assert again.generation == old.generation
    with pytest.raises(FencingError, match="stale"):
        store.check_fence(old)
    other.delete_session("s1")
    with pytest.raises(FencingError, match="stale"):
        store.check_fence(old)


def test_a_generation_sealed_before_journals_is_read_and_continued(tmp_path: Path) -> None:
    """A store written before journals existed: its generation has only MANIFEST.json."""
    store = CheckpointStore(tmp_path / "objects")
    lease = store.acquire("s1", "w")
    ref = store.put(lease, make_db(tmp_path / "a.sqlite", rows=3), state_version=1)
    journal = _journal(store, "s1", 1)
    journal.unlink()  # as the older layout left it: the checkpoint under its manifest only
    (journal.parent / "MANIFEST.json").write_text(ref.model_dump_json())
    fresh = CheckpointStore(tmp_path / "objects")
    assert fresh.latest("s1") == ref
    later = fresh.put(lease, make_db(tmp_path / "b.sqlite", rows=4), state_version=2)
    assert later.seq == ref.seq + 1 and fresh.latest("s1") == later


def test_hostile_blob_keys(tmp_path: Path) -> None:
    assert parse_blob_key("/x/g00000001/JOURNAL#12+5") == ("/x/g00000001/JOURNAL", 12, 5)
    for key in ["/x/g1/NOTES#1+2", "/x/JOURNAL#a+2", "/x/JOURNAL#1-2", "/x/JOURNAL", "JOURNAL#1+2"]:
        assert parse_blob_key(key) is None, key
    journal = tmp_path / JOURNAL_NAME
    journal.write_bytes(b"0123456789")
    assert read_blob(str(journal), 2, 3) == b"234"
    with pytest.raises(FileNotFoundError):
        read_blob(str(journal), 8, 5)  # past the end: the object is gone
    store = CheckpointStore(tmp_path / "objects")
    _patched_puts(store, tmp_path, rows=1)
    ref = store.latest("s1")
    assert ref is not None
    path, offset, length = parse_blob_key(ref.db_patches[0].key) or ("", 0, 0)
    broken = ref.model_copy(
        update={
            "db_patches": [
                ref.db_patches[0].model_copy(update={"key": f"{path}#{offset}+{length + 10**6}"})
            ]
        }
    )
    with pytest.raises(CheckpointError, match="missing"):
        store.fetch(broken, tmp_path / "r.sqlite")


def test_sessions_deleted_while_others_checkpoint(tmp_path: Path) -> None:
    """A host closes sessions (delete_session, which drops their cached tails and leases) while
    its other sessions checkpoint on other threads: the caches are shared, nothing may fail."""
    from concurrent.futures import ThreadPoolExecutor

    store = CheckpointStore(tmp_path / "objects")
    db = make_db(tmp_path / "live.sqlite", rows=2)
    leases = {f"k{i}": store.acquire(f"k{i}", "w") for i in range(8)}
    doomed = [store.acquire(f"d{i}", "w") for i in range(64)]

    def checkpoint(sid: str) -> int:
        for version in range(1, 26):
            store.put(leases[sid], db, state_version=version)
        return version

    def close(i: int) -> None:
        store.put(doomed[i], db, state_version=1)
        store.delete_session(f"d{i}")

    with ThreadPoolExecutor(8) as pool:
        kept = [pool.submit(checkpoint, sid) for sid in leases]
        gone = [pool.submit(close, i) for i in range(len(doomed))]
        assert [f.result() for f in kept] == [25] * len(leases)
        for f in gone:
            f.result()
    for sid in leases:
        assert CheckpointStore(tmp_path / "objects").latest(sid).state_version == 25  # type: ignore[union-attr]
    assert store.sessions() == sorted(leases)


def test_a_full_cache_makes_room_by_dropping_the_oldest_entry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(store_mod, "_CACHE_LIMIT", 3)
    store = CheckpointStore(tmp_path / "objects")
    cache: dict[str, int] = {}
    for key in ("a", "b", "c"):
        store._remember(cache, key, 1)
    store._remember(cache, "a", 2)  # updated: now the most recent
    store._remember(cache, "d", 1)  # full: "b", the oldest, makes room
    assert cache == {"c": 1, "a": 2, "d": 1}
    assert list(cache) == ["c", "a", "d"]
