"""A host that lost a session's lease acknowledges none of its writes (fencing.py).

The issue: a second host on the same data dir took ownership, yet the old one accepted 16 of
25 writes for about 5 s (until its next checkpoint attempt), into the DB the new host serves.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from weft_megamcp.client import MegaMCPClient
from weft_megamcp.fencing import FENCED_MESSAGE
from weft_megamcp.host import MegaMCPHost
from weft_megamcp.models import GroupHandle
from weft_megamcp.registry import MCPRecord
from weft_megamcp.settings import MegaMCPSettings

MOVED = "this session moved to another worker; reconnect through the host"


async def _writes(client: MegaMCPClient, group: GroupHandle, mcp: str, n: int, tag: str) -> int:
    acked = 0
    for i in range(n):
        res = await client.call_tool(
            group, mcp, "add_contact", {"name": f"{tag}{i}", "email": f"{tag}{i}@x.y"}
        )
        if not res.is_error:
            acked += 1
        else:  # the first refusal says why; later ones come from the stopped checkpointer
            assert res.text in (FENCED_MESSAGE, MOVED), res.text
    return acked


async def test_stolen_lease_refuses_every_write_at_once(
    host: MegaMCPHost, client: MegaMCPClient, group: GroupHandle, notes: MCPRecord
):
    assert host.core is not None
    m = notes.mcp_id
    assert await _writes(client, group, m, 3, "before") == 3
    await client.checkpoint(group)  # this host holds the lease and has published a checkpoint
    ledger_before = len((await client.ledger(group))[m])
    sid = group.sessions[m].session_id
    # Another host takes the session over (what its adopt/recover does: steal the lease).
    host.core.checkpoints.acquire(sid, "another-host", steal=True)
    assert await _writes(client, group, m, 25, "after") == 0
    assert len((await client.ledger(group))[m]) == ledger_before  # nothing ledgered
    info = await client.info(group)
    assert info.sessions[m]["state_version"] == 3


async def test_first_write_takes_the_lease_and_is_refused_when_another_host_holds_it(
    host: MegaMCPHost, client: MegaMCPClient, group: GroupHandle, notes: MCPRecord
):
    assert host.core is not None
    m = notes.mcp_id
    # No write yet: this host holds no lease; another host owns the session already.
    host.core.checkpoints.acquire(group.sessions[m].session_id, "another-host", steal=True)
    assert await _writes(client, group, m, 5, "x") == 0
    listed = await client.call_tool(group, m, "list_contacts")
    assert listed.is_error and listed.text in (FENCED_MESSAGE, MOVED)  # reads are refused as well


@pytest.mark.integration
@pytest.mark.slow
async def test_second_host_on_the_same_data_dir_fences_the_first(tmp_path: Path, bundle_dir: Path):
    data = tmp_path / "shared"
    first = MegaMCPSettings(data_dir=data, admin_token="adm-fence-1", offload_after_s=3600)
    async with (
        MegaMCPHost.running(first) as a,
        MegaMCPClient(a.url, a.admin_token) as ca,
    ):
        rec = await ca.register(bundle_dir)
        g = await ca.create_group([rec.mcp_id])
        m = rec.mcp_id
        assert await _writes(ca, g, m, 5, "a") == 5
        await ca.checkpoint(g)
        # A second, real host on the same data dir resumes every open group at startup: it
        # steals each lease before it serves.
        second = MegaMCPSettings(data_dir=data, admin_token="adm-fence-2", offload_after_s=3600)
        async with (
            MegaMCPHost.running(second, subprocess=True) as b,
            MegaMCPClient(b.url, b.admin_token) as cb,
        ):
            assert await _writes(ca, g, m, 25, "late") == 0  # the old host: 0 of 25 acknowledged
            moved = g.model_copy(
                update={
                    "sessions": {
                        k: s.model_copy(update={"url": f"{b.url}/mcp"})
                        for k, s in g.sessions.items()
                    }
                }
            )
            assert await _writes(cb, moved, m, 2, "b") == 2  # the new owner serves the session
            names = [
                c["name"]
                for c in (await cb.call_tool(moved, m, "list_contacts")).structured["result"]
            ]
            assert not any(n.startswith("late") for n in names), names
            assert [e.tool for e in (await cb.ledger(g.group_id))[m]].count("add_contact") == 7
