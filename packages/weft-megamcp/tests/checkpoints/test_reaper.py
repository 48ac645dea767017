"""Shutdown journal and Reaper: interrupted shutdowns are finished, idempotently."""

from __future__ import annotations

from pathlib import Path

import pytest

from weft_megamcp.checkpoints import (
    CheckpointError,
    CheckpointStore,
    FencingError,
    Lease,
    Reaper,
    ShutdownJournal,
)

from .conftest import make_db, row_ids


def test_clean_shutdown_needs_no_reaper(store: CheckpointStore, tmp_path: Path) -> None:
    lease = store.acquire("s1", "w")
    journal = ShutdownJournal(store, lease)
    journal.begin(["final_checkpoint"])
    with pytest.raises(CheckpointError, match="not done"):
        journal.finish()
    journal.step_done("final_checkpoint")
    journal.finish()
    assert store.status("s1").state == "closed"


async def test_reaper_finishes_interrupted_shutdown(store: CheckpointStore, tmp_path: Path) -> None:
    # worker "w" began closing s1 (DB still local, final checkpoint not uploaded) and died
    local = {
        "s1": make_db(tmp_path / "s1.sqlite", rows=4),
        "s2": make_db(tmp_path / "s2.sqlite", rows=1),
    }
    dead = store.acquire("s1", "w")
    ShutdownJournal(store, dead).begin(["final_checkpoint", "drop_local_state"])
    # s2 is open and must be left alone; s3 closed already
    store.acquire("s2", "w")
    s3 = store.acquire("s3", "w")
    j3 = ShutdownJournal(store, s3)
    j3.begin([])
    j3.finish()

    calls: list[tuple[str, str]] = []

    def final_checkpoint(sid: str, lease: Lease) -> None:
        calls.append(("final_checkpoint", sid))
        store.put(lease, local[sid], state_version=4)

    async def drop_local_state(sid: str, lease: Lease) -> None:
        calls.append(("drop_local_state", sid))
        local[sid].unlink(missing_ok=True)  # idempotent

    reaper = Reaper(
        store, {"final_checkpoint": final_checkpoint, "drop_local_state": drop_local_state}
    )
    report = await reaper.reap()
    assert report.finished == ["s1"]
    assert report.steps_run == {"s1": ["final_checkpoint", "drop_local_state"]}
    assert report.failed == {}
    assert store.status("s1").state == "closed"
    assert store.status("s2").state == "open"
    assert not local["s1"].exists()
    store.restore_latest("s1", tmp_path / "r.sqlite")
    assert row_ids(tmp_path / "r.sqlite") == [1, 2, 3, 4]
    # the dead owner is fenced out of the session it abandoned
    with pytest.raises(FencingError):
        ShutdownJournal(store, dead).step_done("drop_local_state")

    # idempotent: a second sweep does nothing
    again = await reaper.reap()
    assert again.finished == [] and again.failed == {}
    assert len(calls) == 2


async def test_reaper_resumes_after_a_partial_run(store: CheckpointStore, tmp_path: Path) -> None:
    lease = store.acquire("s1", "w")
    journal = ShutdownJournal(store, lease)
    journal.begin(["a", "b"])
    journal.step_done("a")  # crashed after step a

    ran: list[str] = []
    failing = {"b": True}

    def step_b(sid: str, lease: Lease) -> None:
        ran.append("b")
        if failing["b"]:
            raise OSError("disk busy")

    reaper = Reaper(store, {"a": lambda s, lease: ran.append("a"), "b": step_b})
    first = await reaper.reap()
    assert "disk busy" in first.failed["s1"]
    assert store.status("s1").state == "closing"
    failing["b"] = False
    second = await reaper.reap()
    assert second.finished == ["s1"]
    assert ran == ["b", "b"]  # step a was done before the crash and never re-run


async def test_unknown_step_is_reported_not_fatal(store: CheckpointStore) -> None:
    for sid in ("s1", "s2"):
        ShutdownJournal(store, store.acquire(sid, "w")).begin(["mystery" if sid == "s1" else "ok"])
    report = await Reaper(store, {"ok": lambda s, lease: None}).reap()
    assert "no handler" in report.failed["s1"]
    assert report.finished == ["s2"]
