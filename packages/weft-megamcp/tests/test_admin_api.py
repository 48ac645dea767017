"""Hostile input to the admin API: clear 4xx errors naming what was wrong; the host goes on."""

from __future__ import annotations

import httpx
import pytest

from weft_megamcp.client import MegaMCPClient
from weft_megamcp.exceptions import AuthError, MegaMCPUserError, NotFoundError
from weft_megamcp.host import MegaMCPHost
from weft_megamcp.registry import MCPRecord

pytestmark = pytest.mark.integration


async def test_bad_requests_get_clear_errors(
    client: MegaMCPClient, notes: MCPRecord, host: MegaMCPHost, tmp_path
):
    with pytest.raises(NotFoundError, match="'nope' is not registered"):
        await client.create_group(["nope"])
    with pytest.raises(MegaMCPUserError, match="version after '@' must be an integer"):
        await client.create_group([f"{notes.mcp_id}@x"])
    with pytest.raises(NotFoundError, match="version 9"):
        await client.create_group([f"{notes.mcp_id}@9"])
    with pytest.raises(MegaMCPUserError, match="at least one MCP"):
        await client.create_group([])
    with pytest.raises(MegaMCPUserError, match="no such file"):
        await client.register(tmp_path / "missing")
    with pytest.raises(NotFoundError):
        await client.put_snapshot("nope", tmp_path / "x.sqlite")
    (tmp_path / "x.sqlite").write_text("not sqlite")
    with pytest.raises(MegaMCPUserError, match="not a SQLite database"):
        await client.put_snapshot(notes.mcp_id, tmp_path / "x.sqlite")
    with pytest.raises(MegaMCPUserError, match="'checks' or 'python'"):
        await client.put_verifier("shell", "rm -rf /")
    with pytest.raises(NotFoundError):
        await client.create_group({notes.mcp_id: "/not/a/blob/uri"})
    async with httpx.AsyncClient(base_url=host.url) as http:
        resp = await http.post(
            "/admin/groups",
            content=b"{not json",
            headers={
                "Authorization": f"Bearer {host.admin_token}",
                "content-type": "application/json",
            },
        )
        assert resp.status_code == 422
        resp = await http.get("/admin/mcps", headers={"Authorization": "Bearer wrong"})
        assert resp.status_code == 401
    bad = MegaMCPClient(host.url, "wrong-admin-token")
    try:
        with pytest.raises(AuthError):
            await bad.mcps()
    finally:
        await bad.aclose()
    # After all that, the host serves normally.
    g = await client.create_group([notes.mcp_id])
    assert not (await client.call_tool(g, notes.mcp_id, "list_contacts")).is_error
