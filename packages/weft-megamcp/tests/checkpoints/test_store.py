"""CheckpointStore: immutable keys, atomic publish, generation fencing, verified fetch."""

from __future__ import annotations

from pathlib import Path

import pytest

from weft_megamcp.checkpoints import (
    CheckpointError,
    CheckpointNotFoundError,
    CheckpointStore,
    FencingError,
    LeaseHeldError,
)

from .conftest import make_db, row_ids


def test_put_latest_fetch_roundtrip(store: CheckpointStore, tmp_path: Path) -> None:
    db = make_db(tmp_path / "live.sqlite", rows=3)
    ws = tmp_path / "ws"
    (ws / "sub").mkdir(parents=True)
    (ws / "sub" / "note.txt").write_text("hello")
    lease = store.acquire("s1", "worker-a")
    assert lease.generation == 1
    assert store.latest("s1") is None

    ref = store.put(lease, db, workspace=ws, state_version=7)
    assert ref.seq == 1 and ref.generation == 1 and ref.state_version == 7
    assert ref.db_key is not None and ref.db_key.endswith(
        f"s1/g00000001/0000000001-{ref.db_sha256}.sqlite"
    )
    assert store.latest("s1") == ref

    out_db, out_ws = tmp_path / "restored.sqlite", tmp_path / "restored-ws"
    store.restore_latest("s1", out_db, out_ws)
    assert row_ids(out_db) == [1, 2, 3]
    assert (out_ws / "sub" / "note.txt").read_text() == "hello"


def test_keys_are_immutable_and_seq_increases(store: CheckpointStore, tmp_path: Path) -> None:
    db = make_db(tmp_path / "live.sqlite", rows=1)
    lease = store.acquire("s1", "w")
    first = store.put(lease, db)
    make_db(db, rows=2)
    second = store.put(lease, db)
    assert second.seq == first.seq + 1
    assert first.db_key != second.db_key
    # the first object is still there, unchanged: an older checkpoint stays fetchable
    store.fetch(first, tmp_path / "old.sqlite")
    assert row_ids(tmp_path / "old.sqlite") == [1]
    assert store.latest("s1") == second


def test_stale_generation_cannot_write(store: CheckpointStore, tmp_path: Path) -> None:
    db = make_db(tmp_path / "live.sqlite", rows=1)
    old = store.acquire("s1", "worker-a")
    store.put(old, db, state_version=1)

    with pytest.raises(LeaseHeldError, match="owned by 'worker-a'"):
        store.acquire("s1", "worker-b")
    new = store.acquire("s1", "worker-b", steal=True)
    assert new.generation == old.generation + 1
    # the new owner resumes from what the old one persisted
    latest = store.latest("s1")
    assert latest is not None and latest.state_version == 1

    make_db(db, rows=5)
    with pytest.raises(FencingError, match="stale"):
        store.put(old, db, state_version=99)
    latest = store.latest("s1")
    assert latest is not None and latest.state_version == 1
    assert store.put(new, db, state_version=2).generation == new.generation


def test_stale_writer_that_passed_the_check_stays_invisible(
    store: CheckpointStore, tmp_path: Path
) -> None:
    """A writer that checked its fence just before losing the lease publishes under its old
    generation; latest() reads only the current generation, so the write never surfaces."""
    db = make_db(tmp_path / "live.sqlite", rows=1)
    old = store.acquire("s1", "a")
    store.put(old, db, state_version=1)
    store.acquire("s1", "b", steal=True)
    # simulate the race: publish the old generation's manifest directly, bypassing check_fence
    make_db(db, rows=3)
    stale_ref = store.latest("s1").model_copy(update={"state_version": 50, "seq": 9})  # type: ignore[union-attr]
    store._write_atomic(
        f"{store._gen_dir('s1', old.generation)}/MANIFEST.json",
        stale_ref.model_dump_json().encode(),
    )
    latest = store.latest("s1")
    assert latest is not None and latest.state_version == 1


def test_steal_of_never_checkpointed_session_fences_old_generation(
    store: CheckpointStore, tmp_path: Path
) -> None:
    db = make_db(tmp_path / "live.sqlite", rows=1)
    old = store.acquire("s2", "a")
    store.acquire("s2", "b", steal=True)
    with pytest.raises(FencingError):
        store.put(old, db)
    assert store.latest("s2") is None


def test_concurrent_acquire_gives_distinct_generations(store: CheckpointStore) -> None:
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(8) as pool:
        leases = list(pool.map(lambda i: store.acquire("s3", f"w{i}", steal=True), range(8)))
    gens = sorted(lease.generation for lease in leases)
    assert gens == list(range(1, 9))
    current = store.current_lease("s3")
    assert current is not None and current.generation == 8
    for lease in leases:
        if lease.generation != 8:
            with pytest.raises(FencingError):
                store.check_fence(lease)


def test_corrupt_object_is_refused(store: CheckpointStore, tmp_path: Path) -> None:
    db = make_db(tmp_path / "live.sqlite", rows=2)
    lease = store.acquire("s1", "w")
    ref = store.put(lease, db)
    assert ref.db_key is not None
    store.fs.pipe_file(ref.db_key, b"not sqlite")
    dest = tmp_path / "dest.sqlite"
    dest.write_text("previous")
    with pytest.raises(CheckpointError, match="sha256"):
        store.fetch(ref, dest)
    assert dest.read_text() == "previous"  # nothing half-written
    store.fs.rm(ref.db_key)
    with pytest.raises(CheckpointError, match="missing"):
        store.fetch(ref, dest)


def test_hostile_input(store: CheckpointStore, tmp_path: Path) -> None:
    with pytest.raises(CheckpointError, match="invalid session id"):
        store.acquire("../etc", "w")
    with pytest.raises(CheckpointError, match="invalid session id"):
        store.latest("a/b")
    with pytest.raises(CheckpointNotFoundError, match="no checkpoint"):
        store.restore_latest("never", tmp_path / "x.sqlite")
    store._write_atomic(f"{store.root}/s9/g00000001/MANIFEST.json", b"{not json")
    store._write_atomic(
        f"{store.root}/s9/leases/g00000001.json", b'{"session_id":"s9","owner":"w","generation":1}'
    )
    with pytest.raises(CheckpointError, match="corrupt checkpoint metadata"):
        store.latest("s9")


def test_workspace_tarball_skips_symlinks(store: CheckpointStore, tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("server secret")
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("a")
    (ws / "link").symlink_to(secret)
    lease = store.acquire("s1", "w")
    store.put(lease, None, workspace=ws)
    out = tmp_path / "out"
    out.mkdir()
    (out / "stale.txt").write_text("old")
    store.restore_latest("s1", tmp_path / "unused.sqlite", out)
    assert sorted(p.name for p in out.iterdir()) == ["a.txt"]


def test_reacquire_by_same_owner_bumps_generation(store: CheckpointStore) -> None:
    a = store.acquire("s1", "w")
    b = store.acquire("s1", "w")
    assert b.generation == a.generation + 1
    with pytest.raises(FencingError):
        store.check_fence(a)


def test_killed_uploads_leave_nothing_after_a_sweep(store: CheckpointStore, tmp_path: Path) -> None:
    """A kill -9 mid-put leaves at most temp files in a local store (an object store publishes a
    PUT only when complete); the startup reaper sweeps old ones and spares a live writer's."""
    import os
    import time

    lease = store.acquire("s1", "w")
    ref = store.put(lease, make_db(tmp_path / "a.sqlite", rows=1))
    assert ref.db_key is not None
    assert not [k for k in store.fs.find(store.root) if "/.tmp-" in k]
    if not store._local:
        assert store.sweep_temporaries(0) == 0
        return
    gdir = Path(ref.db_key).parent
    old = [gdir / ".tmp-deadbeef", Path(store.root) / "s1" / "scratch" / ".snap-x.sqlite"]
    for p in old:
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(b"half an upload")
        os.utime(p, (time.time() - 7200, time.time() - 7200))
    young = gdir / ".tmp-live"
    young.write_bytes(b"being written")
    assert store.sweep_temporaries(3600) == 2
    assert not any(p.exists() for p in old) and young.exists()
    assert store.latest("s1") == ref


def test_local_names_are_durable_before_the_record_naming_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """fsync of a file does not cover the name pointing at it: a DB snapshot renamed into the
    generation's folder has its name synced before the journal record naming it is appended,
    the journal's own name is synced when the seal creates it, and a new folder's name is
    synced in its parent."""
    import os

    from weft_megamcp.checkpoints import store as store_mod

    events: list[tuple[str, str]] = []
    real_fsync_dir, real_replace = store_mod._fsync_dir, os.replace
    real_append = store_mod.append_record

    def fsync_dir(path: str | Path) -> None:
        events.append(("fsync", str(path)))
        real_fsync_dir(path)

    def replace(src: str | Path, dst: str | Path) -> None:
        events.append(("rename", Path(dst).name))
        real_replace(src, dst)

    def append(path: str, end: int, record: bytes) -> tuple[int, bool]:
        events.append(("append", Path(path).name))
        return real_append(path, end, record)

    monkeypatch.setattr(store_mod, "_fsync_dir", fsync_dir)
    monkeypatch.setattr(store_mod.os, "replace", replace)
    monkeypatch.setattr(store_mod, "append_record", append)
    local = CheckpointStore(tmp_path / "objects")
    db = make_db(tmp_path / "live.sqlite", rows=2)
    lease = local.acquire("s1", "worker-a")  # seals: the generation's folder and journal
    gdir = local._gen_dir("s1", lease.generation)
    seal = events.index(("append", "JOURNAL"))
    assert events[seal + 1] == ("fsync", gdir), events
    assert ("fsync", str(Path(gdir).parent)) in events[:seal], events
    snapshot = local.scratch_path("s1")  # what a checkpointer hands over: moved, not copied
    snapshot.write_bytes(db.read_bytes())
    ref = local.put(lease, snapshot, consume=True, state_version=1)
    assert ref.db_key is not None and Path(ref.db_key).parent == Path(gdir)
    rename = events.index(("rename", Path(ref.db_key).name))
    record = max(i for i, e in enumerate(events) if e == ("append", "JOURNAL"))
    assert rename < record and ("fsync", gdir) in events[rename + 1 : record], events
    assert local.latest("s1") == ref
