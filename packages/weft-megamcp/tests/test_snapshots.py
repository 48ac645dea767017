"""Snapshot / restore / fork: equality of DB, workspace and ledger; isolation of forks."""

from __future__ import annotations

import sqlite3
import time

import pytest

from weft_megamcp.client import MegaMCPClient
from weft_megamcp.exceptions import GroupStateError, MegaMCPUserError, NotFoundError
from weft_megamcp.host import MegaMCPHost
from weft_megamcp.models import GroupHandle
from weft_megamcp.registry import MCPRecord

pytestmark = pytest.mark.integration


def _rows(host: MegaMCPHost, group: GroupHandle, mcp: str) -> list[tuple]:
    assert host.core is not None
    s = host.core.manager.get(group.group_id).sessions[mcp]
    con = sqlite3.connect(f"file:{s.db_path}?mode=ro", uri=True)
    try:
        return con.execute("select id, name, email, tier from contact order by id").fetchall()
    finally:
        con.close()


async def test_snapshot_restore_roundtrip(
    client: MegaMCPClient, group: GroupHandle, notes: MCPRecord, host: MegaMCPHost
):
    m = notes.mcp_id
    await client.call_tool(group, m, "add_contact", {"name": "Before", "email": "b@x.y"})
    await client.call_tool(group, m, "write_note", {"path": "n.txt", "text": "v1"})
    snap = await client.snapshot(group)
    rows_at_snap = _rows(host, group, m)
    await client.call_tool(group, m, "delete_contact", {"contact_id": 1})
    await client.call_tool(group, m, "write_note", {"path": "n.txt", "text": "v2"})
    await client.call_tool(group, m, "write_note", {"path": "extra.txt", "text": "later"})
    assert _rows(host, group, m) != rows_at_snap
    await client.restore(group, snap)
    assert _rows(host, group, m) == rows_at_snap
    assert (await client.call_tool(group, m, "read_note", {"path": "n.txt"})).text == "v1"
    assert (await client.call_tool(group, m, "read_note", {"path": "extra.txt"})).is_error
    ledger = (await client.ledger(group))[m]
    assert [e.tool for e in ledger[:2]] == ["add_contact", "write_note"]
    assert ledger[2].tool == "read_note"  # history after the snapshot was rolled back


async def test_fork_gives_identical_independent_groups(
    client: MegaMCPClient, group: GroupHandle, notes: MCPRecord, host: MegaMCPHost
):
    m = notes.mcp_id
    await client.call_tool(group, m, "add_contact", {"name": "Parent", "email": "p@x.y"})
    await client.call_tool(group, m, "write_note", {"path": "plan.md", "text": "step 1"})
    forks = await client.fork(group, 4)
    assert len({f.group_id for f in forks}) == 4
    assert len({f.session(m).token for f in forks} | {group.session(m).token}) == 5
    parent_rows = _rows(host, group, m)
    for f in forks:
        assert _rows(host, f, m) == parent_rows
        assert (await client.call_tool(f, m, "read_note", {"path": "plan.md"})).text == "step 1"
        led = (await client.ledger(f))[m]
        assert [e.tool for e in led[:2]] == ["add_contact", "write_note"]
        assert all(e.session_id == f.session(m).session_id for e in led)
    await client.call_tool(forks[0], m, "update_email", {"contact_id": 1, "email": "changed@x.y"})
    assert _rows(host, forks[1], m) == parent_rows and _rows(host, group, m) == parent_rows
    assert _rows(host, forks[0], m) != parent_rows


async def test_fork_20mb_db_into_8(
    client: MegaMCPClient, notes: MCPRecord, host: MegaMCPHost, tmp_path
):
    big = tmp_path / "big.sqlite"
    con = sqlite3.connect(big)
    con.execute(
        "CREATE TABLE contact (id INTEGER PRIMARY KEY, name VARCHAR NOT NULL, email VARCHAR NOT NULL, tier VARCHAR NOT NULL)"
    )
    con.executemany(
        "insert into contact (name, email, tier) values (?, ?, ?)",
        ((f"name {i}" + "x" * 150, f"{i}@x.y", "basic") for i in range(110_000)),
    )
    con.commit()
    con.close()
    assert big.stat().st_size > 20 * 2**20
    uri = await client.put_snapshot(notes.mcp_id, big)
    g = await client.create_group({notes.mcp_id: uri})
    await client.call_tool(g, notes.mcp_id, "add_contact", {"name": "last", "email": "l@x.y"})
    t0 = time.perf_counter()
    forks = await client.fork(g, 8)
    elapsed = time.perf_counter() - t0
    print(f"fork of a {big.stat().st_size / 2**20:.1f} MiB group into 8: {elapsed * 1000:.0f} ms")
    res = await client.call_tool(
        forks[-1], notes.mcp_id, "update_email", {"contact_id": 110_001, "email": "z@x.y"}
    )
    assert not res.is_error and res.structured["name"] == "last"


async def test_bad_snapshot_and_fork_requests(client: MegaMCPClient, group: GroupHandle):
    with pytest.raises(NotFoundError):
        await client.restore(group, "snap_doesnotexist")
    with pytest.raises(NotFoundError):
        await client.restore(group, "../../etc")
    with pytest.raises(MegaMCPUserError, match="between 1 and 1024"):
        await client.fork(group, 0)
    with pytest.raises(NotFoundError):
        await client.snapshot("grp_nope")
    await client.close(group)
    with pytest.raises(NotFoundError):
        await client.fork(group, 2)


async def test_closed_group_cannot_be_resumed(client: MegaMCPClient, group: GroupHandle):
    await client.freeze(group)
    with pytest.raises(GroupStateError):
        await client.resume(group)
