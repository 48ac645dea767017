"""What an agent sees when the host's own storage fails under it: a clear isError result that
names no host path (data dir, checkpoint store), even when the failure happens before the
tool runs (reloading an evicted group from a missing or corrupt checkpoint)."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastmcp import Client
from fastmcp.client.transports import StreamableHttpTransport

from weft_megamcp.client import MegaMCPClient
from weft_megamcp.host import MegaMCPHost
from weft_megamcp.registry import MCPRecord

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("damage", ["missing", "corrupt"])
async def test_evicted_group_with_a_broken_checkpoint_leaks_no_path(
    client: MegaMCPClient, notes: MCPRecord, host: MegaMCPHost, damage: str
):
    m = notes.mcp_id
    g = await client.create_group([m])
    await client.call_tool(g, m, "add_contact", {"name": "A", "email": "a@x.y"})
    await client.evict(g)
    assert host.core is not None
    session = host.core.manager.get(g.group_id).sessions[m]
    ref = host.core.checkpoints.latest(session.session_id)
    assert ref is not None and ref.db_key is not None
    blob = Path(ref.db_key)
    if damage == "missing":
        blob.unlink()
    else:
        blob.chmod(0o644)
        blob.write_bytes(b"not the checkpointed database")
    data_dir = str(host.core.data_dir)
    info = g.session(m)
    async with Client(StreamableHttpTransport(info.url, auth=info.token)) as agent:
        for _ in range(2):  # the first call fails reloading; a retry must not leak either
            res = await agent.call_tool("list_contacts", {}, raise_on_error=False)
            text = "\n".join(getattr(c, "text", "") for c in res.content)
            assert res.is_error, text
            assert data_dir not in text and "/checkpoints" not in text, text
            assert "Traceback" not in text and "\n" not in text.strip(), text
            assert "checkpoint" in text  # still says what went wrong
