"""Checkpoints, eviction/reload, fencing and crash recovery from the latest persisted checkpoint."""

from __future__ import annotations

import asyncio
import sqlite3

import pytest

from weft_core.models import RowExists, Verifier
from weft_megamcp.checkpoints import CheckpointStore, FencingError
from weft_megamcp.client import MegaMCPClient
from weft_megamcp.host import MegaMCPHost
from weft_megamcp.models import GroupHandle, RuntimeState
from weft_megamcp.registry import MCPRecord

pytestmark = pytest.mark.integration


def _names(db) -> list[str]:
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return [r[0] for r in con.execute("select name from contact order by id")]
    finally:
        con.close()


async def test_mutations_are_checkpointed_asynchronously(
    client: MegaMCPClient, group: GroupHandle, notes: MCPRecord, host: MegaMCPHost
):
    m = notes.mcp_id
    for i in range(5):
        await client.call_tool(group, m, "add_contact", {"name": f"burst{i}", "email": f"{i}@x.y"})
    durable = await client.checkpoint(group)
    assert durable == {m: 5}
    assert host.core is not None
    store: CheckpointStore = host.core.checkpoints
    session = host.core.manager.get(group.group_id).sessions[m]
    ref = store.latest(session.session_id)
    assert ref is not None and ref.state_version == 5
    assert ref.seq <= 3  # the burst was debounced into few uploads
    restored = host.settings.data_dir / "restored.sqlite"
    store.fetch(ref, restored)
    assert _names(restored)[-5:] == [f"burst{i}" for i in range(5)]


async def test_evict_then_reload_transparently(
    client: MegaMCPClient, notes: MCPRecord, host: MegaMCPHost
):
    m = notes.mcp_id
    g = await client.create_group([m])
    await client.call_tool(g, m, "add_contact", {"name": "Survivor", "email": "s@x.y"})
    await client.call_tool(g, m, "write_note", {"path": "deep/plan.md", "text": "keep me"})
    await client.evict(g)
    assert host.core is not None
    session = host.core.manager.get(g.group_id).sessions[m]
    assert not session.db_path.exists() and not session.workspace.exists()
    assert (await client.info(g)).runtime == RuntimeState.EVICTED
    res = await client.call_tool(g, m, "list_contacts")  # same token; reload from the checkpoint
    assert "Survivor" in res.text
    assert (await client.call_tool(g, m, "read_note", {"path": "deep/plan.md"})).text == "keep me"
    assert [e.tool for e in (await client.ledger(g))[m]] == [
        "add_contact",
        "write_note",
        "list_contacts",
        "read_note",
    ]


async def test_evicted_frozen_group_still_verifies(client: MegaMCPClient, notes: MCPRecord):
    m = notes.mcp_id
    g = await client.create_group(
        [m],
        verifier=Verifier.final([RowExists(table="contact", where={"name": "Z"})]),
    )
    await client.call_tool(g, m, "add_contact", {"name": "Z", "email": "z@x.y"})
    await client.freeze(g)
    await client.evict(g)
    assert (await client.verify(g)).passed


async def test_fork_state_survives_eviction(client: MegaMCPClient, notes: MCPRecord):
    m = notes.mcp_id
    g = await client.create_group([m])
    await client.call_tool(g, m, "add_contact", {"name": "Inherited", "email": "i@x.y"})
    (child,) = await client.fork(g, 1)
    await client.evict(child)
    assert "Inherited" in (await client.call_tool(child, m, "list_contacts")).text


async def test_restore_is_checkpointed(client: MegaMCPClient, notes: MCPRecord):
    m = notes.mcp_id
    g = await client.create_group([m])
    await client.call_tool(g, m, "add_contact", {"name": "KeepMe", "email": "k@x.y"})
    snap = await client.snapshot(g)
    await client.call_tool(g, m, "add_contact", {"name": "Undone", "email": "u@x.y"})
    await client.checkpoint(g)
    await client.restore(g, snap)
    await client.evict(g)
    text = (await client.call_tool(g, m, "list_contacts")).text
    assert "KeepMe" in text and "Undone" not in text


async def test_a_fenced_owner_cannot_write(
    client: MegaMCPClient, notes: MCPRecord, host: MegaMCPHost
):
    m = notes.mcp_id
    g = await client.create_group([m])
    await client.call_tool(g, m, "add_contact", {"name": "One", "email": "1@x.y"})
    await client.checkpoint(g)
    assert host.core is not None
    store = host.core.checkpoints
    session = host.core.manager.get(g.group_id).sessions[m]
    old = host.core.recovery.checkpointers[session.session_id]
    # Another worker takes the session over (as after a suspected crash).
    store.acquire(session.session_id, "worker-b", steal=True)
    with pytest.raises(FencingError):
        store.put(old.lease, session.db_path, state_version=99)
    await client.call_tool(
        g, m, "add_contact", {"name": "Two", "email": "2@x.y"}
    )  # triggers a checkpoint attempt
    with pytest.raises(FencingError):
        await old.flush()
    res = await client.call_tool(g, m, "list_contacts")
    assert res.is_error and "moved to another worker" in res.text
    ref = store.latest(session.session_id)
    assert ref is not None and ref.state_version == 1  # nothing of the fenced owner became visible


async def test_crash_recovery_resumes_from_latest_checkpoint(
    client: MegaMCPClient, notes: MCPRecord, host: MegaMCPHost
):
    """A host whose local disk is lost resumes from the latest checkpoint: the durable write is
    there, a write no checkpoint holds is not (with the local files intact, the replacement
    keeps them instead: tests/faults/test_durability.py)."""
    m = notes.mcp_id
    g = await client.create_group([m])
    await client.call_tool(g, m, "add_contact", {"name": "Durable", "email": "d@x.y"})
    assert (await client.checkpoint(g)) == {m: 1}
    assert host.core is not None
    manager = host.core.manager
    session = manager.get(g.group_id).sessions[m]
    # Simulate kill -9 after an un-checkpointed write: the on-disk DB has a write no checkpoint holds.
    con = sqlite3.connect(session.db_path)
    con.execute("insert into contact (name, email, tier) values ('Torn', 't@x.y', 'basic')")
    con.commit()
    con.close()
    manager.groups.pop(g.group_id)  # the worker's memory is gone
    session.db_path.unlink()  # and its local DB with it
    await host.core.adopt(g.group_id)  # a replacement worker adopts it from the store
    names = [
        c["name"] for c in (await client.call_tool(g, m, "list_contacts")).structured["result"]
    ]
    assert "Durable" in names and "Torn" not in names
    await asyncio.sleep(0)


async def test_close_right_after_writes_while_checkpoints_run(
    client: MegaMCPClient, notes: MCPRecord, host: MegaMCPHost
):
    """Regression: closing many groups while their debounced checkpoints upload never fails."""
    m = notes.mcp_id
    groups = [await client.create_group([m]) for _ in range(8)]

    async def run(i: int, g: GroupHandle) -> None:
        for j in range(4):
            await client.call_tool(
                g, m, "add_contact", {"name": f"c{i}{j}", "email": f"{i}{j}@x.y"}
            )
            await client.call_tool(g, m, "write_note", {"path": f"n{j}.txt", "text": "x" * 1000})
        await asyncio.sleep(0.45 + 0.02 * i)  # land inside the debounce / upload window
        await client.close(g)

    await asyncio.gather(*(run(i, g) for i, g in enumerate(groups)))
    assert host.core is not None
    assert not any(gid in host.core.manager.groups for gid in (g.group_id for g in groups))
    assert not host.core.recovery.checkpointers


async def test_reaper_finishes_an_interrupted_close(
    client: MegaMCPClient, notes: MCPRecord, host: MegaMCPHost
):
    from weft_megamcp.checkpoints import ShutdownJournal

    m = notes.mcp_id
    g = await client.create_group([m])
    await client.call_tool(g, m, "add_contact", {"name": "X", "email": "x@x.y"})
    await client.checkpoint(g)
    assert host.core is not None
    core = host.core
    session = core.manager.get(g.group_id).sessions[m]
    ck = core.recovery.checkpointers[session.session_id]
    # The owner began closing and died before dropping its local state.
    ShutdownJournal(core.checkpoints, ck.lease).begin(["drop_local_state"])
    await core.recovery._stop(session.session_id)  # ...and its process is gone
    assert core.checkpoints.status(session.session_id).state == "closing"
    assert session.root.exists()
    report = await core.recovery.reap()
    assert session.session_id in report.finished
    assert not session.root.exists()
    assert session.session_id not in core.checkpoints.sessions()  # closed data collected
    again = await core.recovery.reap()  # idempotent
    assert session.session_id not in again.finished and not again.failed


async def test_a_close_whose_delete_failed_is_finished_by_the_reaper(
    client: MegaMCPClient, notes: MCPRecord, host: MegaMCPHost, monkeypatch: pytest.MonkeyPatch
):
    """A close writes only its `closing` journal before deleting the session's checkpoints; when
    the delete fails the journal is what remains, and the reaper closes and collects it."""
    m = notes.mcp_id
    assert host.core is not None
    core = host.core
    done = await client.create_group([m])
    await client.call_tool(done, m, "add_contact", {"name": "Y", "email": "y@x.y"})
    await client.checkpoint(done)
    done_sid = core.manager.get(done.group_id).sessions[m].session_id
    await client.close(done)
    assert done_sid not in core.checkpoints.sessions()  # a clean close leaves nothing behind

    g = await client.create_group([m])
    await client.call_tool(g, m, "add_contact", {"name": "X", "email": "x@x.y"})
    await client.checkpoint(g)
    session = core.manager.get(g.group_id).sessions[m]

    def refuse(session_id: str) -> None:
        raise OSError(f"store unavailable for {session_id}")

    monkeypatch.setattr(core.checkpoints, "delete_session", refuse)
    await client.close(g)
    status = core.checkpoints.status(session.session_id)
    assert status.state == "closing" and status.pending_steps == ["drop_local_state"]
    assert not session.root.exists()
    monkeypatch.undo()
    report = await core.recovery.reap()
    assert session.session_id in report.finished, report
    assert session.session_id not in core.checkpoints.sessions()
