"""Host crash and restart: kill -9 the whole host; the restarted host resumes every open group
from its latest persisted checkpoint, with the same tokens."""

from __future__ import annotations

import os
import signal

import pytest

from weft_megamcp.client import MegaMCPClient
from weft_megamcp.host import MegaMCPHost, bind_socket
from weft_megamcp.settings import MegaMCPSettings

pytestmark = [pytest.mark.integration, pytest.mark.slow]


@pytest.mark.parametrize("workers", [0, 2])
async def test_kill_9_host_then_resume(tmp_path, bundle_dir, workers):
    probe = bind_socket("127.0.0.1", 0)
    port = probe.getsockname()[1]
    probe.close()
    settings = MegaMCPSettings(
        data_dir=tmp_path / "mm", port=port, workers=workers, admin_token="restart-admin"
    )
    host = await MegaMCPHost.start(settings, subprocess=True)
    try:
        async with MegaMCPClient(host.url, host.admin_token) as client:
            rec = await client.register(bundle_dir)
            g = await client.create_group([rec.mcp_id])
            closed = await client.create_group([rec.mcp_id])
            await client.call_tool(
                g, rec.mcp_id, "add_contact", {"name": "Acked", "email": "a@x.y"}
            )
            await client.call_tool(
                g, rec.mcp_id, "write_note", {"path": "n.txt", "text": "durable"}
            )
            assert await client.checkpoint(g) == {rec.mcp_id: 2}
            await client.close(closed)
        assert host._proc is not None
        os.kill(host._proc.pid, signal.SIGKILL)
        host._proc.wait(timeout=30)
    finally:
        await host.stop()
    host = await MegaMCPHost.start(settings, subprocess=True)
    try:
        async with MegaMCPClient(host.url, host.admin_token) as client:
            res = await client.call_tool(g, rec.mcp_id, "list_contacts")  # the old token
            assert not res.is_error, res.text
            assert "Acked" in res.text
            assert (
                await client.call_tool(g, rec.mcp_id, "read_note", {"path": "n.txt"})
            ).text == "durable"
            assert [e.tool for e in (await client.ledger(g))[rec.mcp_id]][:2] == [
                "add_contact",
                "write_note",
            ]
            with pytest.raises(Exception):  # noqa: B017 - the closed group's token is refused (401)
                await client.call_tool(closed, rec.mcp_id, "list_contacts")
    finally:
        await host.stop()
