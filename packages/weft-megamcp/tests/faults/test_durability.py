"""Item 4 of issue 18: checkpoints after a resume, ledger/checkpoint consistency, and a replaced
worker keeping every acknowledged write. Real in-process hosts on 127.0.0.1, real SQLite files."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from weft_megamcp.checkpoints import CheckpointRef
from weft_megamcp.checkpoints import checkpointer as checkpointer_mod
from weft_megamcp.client import MegaMCPClient
from weft_megamcp.host import MegaMCPHost
from weft_megamcp.registry import MCPRecord
from weft_megamcp.settings import MegaMCPSettings

# Each test starts a host and registers the bundle (a sandboxed probe): > 60 s seen on a loaded box.
pytestmark = [pytest.mark.integration, pytest.mark.slow]


def _names(db: Path) -> list[str]:
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return [r[0] for r in con.execute("select name from contact order by id")]
    finally:
        con.close()


async def _add(client: MegaMCPClient, g, m: str, name: str) -> None:  # type: ignore[no-untyped-def]
    res = await client.call_tool(g, m, "add_contact", {"name": name, "email": f"{name}@x.y"})
    assert not res.is_error, res.text


async def _listed(client: MegaMCPClient, g, m: str) -> list[str]:  # type: ignore[no-untyped-def]
    res = await client.call_tool(g, m, "list_contacts")
    assert not res.is_error, res.text
    return [c["name"] for c in res.structured["result"]]


@pytest.fixture
async def slow_ckpt_host(tmp_path: Path) -> AsyncIterator[MegaMCPHost]:
    """A host whose checkpoints never run on their own during a test (a 10-minute debounce):
    writes stay acknowledged-but-not-checkpointed until the test asks for a checkpoint."""
    settings = MegaMCPSettings(
        data_dir=tmp_path / "mm",
        admin_token="durability-admin",
        offload_after_s=3600,
        checkpoint_debounce_s=600,
        checkpoint_max_delay_s=600,
        checkpoint_min_interval_s=0,
    )
    async with MegaMCPHost.running(settings) as h:
        yield h


# ---- (a) POST /checkpoint after a resume ------------------------------------------------------


async def test_checkpoint_after_evict_and_resume(client: MegaMCPClient, notes: MCPRecord):
    """Regression: the checkpointer a reload creates had no last checkpoint, so
    `wait_durable` hit an assertion and the admin call answered 500."""
    m = notes.mcp_id
    g = await client.create_group([m])
    await _add(client, g, m, "before")
    assert await client.checkpoint(g) == {m: 1}
    await client.evict(g)
    await client.pause(g)
    await client.resume(g)  # reloads the evicted group from its checkpoint
    assert await client.checkpoint(g) == {m: 1}
    assert "before" in await _listed(client, g, m)
    await _add(client, g, m, "after")
    assert await client.checkpoint(g) == {m: 2}


async def test_checkpoint_after_adoption(
    client: MegaMCPClient, notes: MCPRecord, host: MegaMCPHost
):
    """The same after a restart-style adoption (the path a replacement worker takes)."""
    m = notes.mcp_id
    g = await client.create_group([m])
    await _add(client, g, m, "x")
    assert await client.checkpoint(g) == {m: 1}
    assert host.core is not None
    host.core.manager.groups.pop(g.group_id)
    await host.core.adopt(g.group_id)
    assert await client.checkpoint(g) == {m: 1}


# ---- (b) a checkpoint labelled v holds exactly the writes <= v --------------------------------


def _hold_first_copy(
    host: MegaMCPHost, monkeypatch: pytest.MonkeyPatch
) -> tuple[threading.Event, list[CheckpointRef]]:
    """Hold the first checkpoint's DB copy until the file changes under it (or 3 s pass, which is
    what happens when the copy holds the write gate: the racer waits for it); record every
    published checkpoint. Returns (the copy has begun, the published refs)."""
    assert host.core is not None
    real = checkpointer_mod.snapshot_sqlite
    entered, seen = threading.Event(), []

    def held_snapshot(src: Path, dest: Path) -> None:
        if not seen:
            seen.append(True)
            entered.set()
            before = Path(src).stat().st_mtime_ns
            for _ in range(30):
                if Path(src).stat().st_mtime_ns != before:
                    break
                threading.Event().wait(0.1)
        real(src, dest)

    monkeypatch.setattr(checkpointer_mod, "snapshot_sqlite", held_snapshot)
    published: list[CheckpointRef] = []
    store = host.core.checkpoints
    real_put = store.put

    def recording_put(*args: Any, **kwargs: Any) -> CheckpointRef:
        ref = real_put(*args, **kwargs)
        published.append(ref)
        return ref

    monkeypatch.setattr(store, "put", recording_put)
    return entered, published


async def test_checkpoint_label_matches_its_contents(
    slow_ckpt_host: MegaMCPHost, bundle_dir: Path, monkeypatch: pytest.MonkeyPatch
):
    """Regression: the checkpointer read its version, then copied the DB; a write that
    committed in between was in the copy under the older version, so recovery from that
    checkpoint dropped the write's ledger entry while its effect stayed.

    The first DB copy is held until a second write commits (or 3 s pass, which is what happens
    when the copy holds the write gate: the write waits for it). Then the published checkpoint
    must hold exactly as many new rows as its version says."""
    host = slow_ckpt_host
    assert host.core is not None
    entered, published = _hold_first_copy(host, monkeypatch)
    async with MegaMCPClient(host.url, host.admin_token) as client:
        rec = await client.register(bundle_dir)
        m = rec.mcp_id
        g = await client.create_group([m])
        session = host.core.manager.get(g.group_id).sessions[m]
        initial = len(_names(session.db_path))
        await _add(client, g, m, "first")
        flush = asyncio.create_task(client.checkpoint(g))
        assert await asyncio.to_thread(entered.wait, 30)
        await _add(client, g, m, "second")  # races the held copy
        await flush
        first = published[0]  # the flush may have gone on to a second checkpoint
        copy = host.settings.data_dir / "first.sqlite"
        host.core.checkpoints.fetch(first, copy)
        assert len(_names(copy)) - initial == first.state_version
        # And recovery from the store alone (the local disk lost) keeps a matching ledger.
        assert await client.checkpoint(g) == {m: 2}
        host.core.manager.groups.pop(g.group_id)
        session.db_path.unlink()
        await host.core.adopt(g.group_id)
        restored = host.core.manager.get(g.group_id).sessions[m]
        assert len(restored.ledger) == len(_names(restored.db_path)) - initial == 2


async def test_a_restore_waits_for_the_checkpoint_copying_the_state(
    slow_ckpt_host: MegaMCPHost, bundle_dir: Path, monkeypatch: pytest.MonkeyPatch
):
    """Regression: `restore` copied a snapshot's files over the live session holding only the
    call locks, not the write gate a checkpoint copies under; a checkpoint taken meanwhile held
    (part of) the restored state under the pre-restore version, or failed reading a file being
    replaced ("unable to open database file", seen in ToolSpace's rollback-heavy walks)."""
    host = slow_ckpt_host
    assert host.core is not None
    entered, published = _hold_first_copy(host, monkeypatch)
    async with MegaMCPClient(host.url, host.admin_token) as client:
        rec = await client.register(bundle_dir)
        m = rec.mcp_id
        g = await client.create_group([m])
        session = host.core.manager.get(g.group_id).sessions[m]
        initial = len(_names(session.db_path))
        await _add(client, g, m, "kept")
        snap = await client.snapshot(g)
        await _add(client, g, m, "undone")
        flush = asyncio.create_task(client.checkpoint(g))
        assert await asyncio.to_thread(entered.wait, 30)
        restoring = asyncio.create_task(client.restore(g, snap))  # races the held copy
        await flush
        await restoring
        first = published[0]
        copy = host.settings.data_dir / "first.sqlite"
        host.core.checkpoints.fetch(first, copy)
        assert len(_names(copy)) - initial == first.state_version == 2
        listed = await _listed(client, g, m)  # the group serves the restored state
        assert "kept" in listed and "undone" not in listed


# ---- (c) a replaced worker keeps acknowledged writes -----------------------------------------


async def test_adoption_keeps_acknowledged_writes_not_yet_checkpointed(
    slow_ckpt_host: MegaMCPHost, bundle_dir: Path
):
    """Regression: adoption restored the last checkpoint (here: none, the initial snapshot)
    over the local DB, losing every acknowledged write since."""
    host = slow_ckpt_host
    assert host.core is not None
    async with MegaMCPClient(host.url, host.admin_token) as client:
        rec = await client.register(bundle_dir)
        m = rec.mcp_id
        g = await client.create_group([m])
        for i in range(3):
            await _add(client, g, m, f"acked{i}")
        await client.call_tool(g, m, "write_note", {"path": "n.txt", "text": "kept"})
        session = host.core.manager.get(g.group_id).sessions[m]
        assert host.core.checkpoints.latest(session.session_id) is None  # nothing checkpointed
        host.core.manager.groups.pop(g.group_id)  # the worker's memory is gone
        await host.core.adopt(g.group_id)
        names = await _listed(client, g, m)
        assert [f"acked{i}" for i in range(3)] == [n for n in names if n.startswith("acked")]
        assert (await client.call_tool(g, m, "read_note", {"path": "n.txt"})).text == "kept"
        tools = [e.tool for e in (await client.ledger(g))[m]]
        assert tools[:4] == ["add_contact"] * 3 + ["write_note"]
        # The resumed state is ahead of the store: it is checkpointed, and versions go on.
        assert await client.checkpoint(g) == {m: 4}
        await _add(client, g, m, "later")
        assert await client.checkpoint(g) == {m: 5}


async def test_adoption_restores_the_checkpoint_when_the_local_db_is_corrupt(
    client: MegaMCPClient, notes: MCPRecord, host: MegaMCPHost
):
    m = notes.mcp_id
    g = await client.create_group([m])
    await _add(client, g, m, "durable")
    assert await client.checkpoint(g) == {m: 1}
    assert host.core is not None
    session = host.core.manager.get(g.group_id).sessions[m]
    host.core.manager.groups.pop(g.group_id)
    data = bytearray(session.db_path.read_bytes())
    data[100:4096] = b"\xff" * (4096 - 100)  # the first page's b-tree header is garbage
    session.db_path.write_bytes(bytes(data))
    await host.core.adopt(g.group_id)
    assert "durable" in await _listed(client, g, m)
    assert next(e.tool for e in (await client.ledger(g))[m]) == "add_contact"
