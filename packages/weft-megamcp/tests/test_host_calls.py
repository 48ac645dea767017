"""Real MCP calls through a real host: tools, ledger, errors, sanitization, tokens."""

from __future__ import annotations

import asyncio
import time

import httpx
import pytest
from fastmcp import Client

from weft_core.models import ErrorKind
from weft_megamcp.client import MegaMCPClient
from weft_megamcp.host import MegaMCPHost
from weft_megamcp.models import GroupHandle
from weft_megamcp.registry import MCPRecord

pytestmark = pytest.mark.integration


async def test_tools_listed_are_the_certified_ones(
    client: MegaMCPClient, group: GroupHandle, notes: MCPRecord
):
    names = {t.name for t in await client.list_tools(group, notes.mcp_id)}
    assert {"add_contact", "list_contacts", "write_note", "where_am_i"} <= names
    assert "purge_all" not in names  # uncertified in the manifest
    res = await client.call_tool(group, notes.mcp_id, "purge_all", {})
    assert res.is_error and "Unknown tool" in res.text


async def test_call_reads_seed_and_writes_private_db(
    client: MegaMCPClient, group: GroupHandle, notes: MCPRecord
):
    res = await client.call_tool(group, notes.mcp_id, "list_contacts")
    assert not res.is_error
    assert [c["name"] for c in res.structured["result"]] == ["Ada Lovelace", "Alan Turing"]
    res = await client.call_tool(
        group, notes.mcp_id, "add_contact", {"name": "Grace", "email": "grace@navy.mil"}
    )
    assert res.structured["id"] == 3
    ledger = (await client.ledger(group))[notes.mcp_id]
    assert [e.tool for e in ledger] == ["list_contacts", "add_contact"]
    assert [e.mutated for e in ledger] == [False, True]
    assert [e.state_version for e in ledger] == [0, 1]
    assert ledger[1].arguments == {"name": "Grace", "email": "grace@navy.mil"}
    assert ledger[1].result["email"] == "grace@navy.mil"
    assert ledger[1].mcp_version == notes.version and ledger[1].group_id == group.group_id


async def test_bad_input_becomes_is_error_and_session_goes_on(
    client: MegaMCPClient, group: GroupHandle, notes: MCPRecord
):
    m = notes.mcp_id
    unknown = await client.call_tool(group, m, "no_such_tool", {})
    bad_args = await client.call_tool(
        group, m, "update_email", {"contact_id": "not-a-number", "email": "x@y"}
    )
    tool_err = await client.call_tool(
        group, m, "update_email", {"contact_id": 99, "email": "x@y.z"}
    )
    bad_email = await client.call_tool(group, m, "add_contact", {"name": "x", "email": "nope"})
    assert all(r.is_error for r in (unknown, bad_args, tool_err, bad_email))
    assert "contact 99 not found" in tool_err.text
    assert "invalid email" in bad_email.text
    kinds = [e.error_kind for e in (await client.ledger(group))[m]]
    assert kinds == [
        ErrorKind.UNKNOWN_TOOL,
        ErrorKind.INVALID_ARGUMENTS,
        ErrorKind.TOOL_ERROR,
        ErrorKind.TOOL_ERROR,
    ]
    ok = await client.call_tool(group, m, "list_contacts")
    assert not ok.is_error and len(ok.structured["result"]) == 2


async def test_errors_never_reveal_internal_paths(
    client: MegaMCPClient, group: GroupHandle, notes: MCPRecord, host: MegaMCPHost
):
    res = await client.call_tool(group, notes.mcp_id, "where_am_i")
    assert res.is_error
    data_dir = str(host.settings.data_dir.resolve())
    assert data_dir not in res.text and "state.sqlite" not in res.text and "/tmp" not in res.text
    assert "cannot open" in res.text
    entry = (await client.ledger(group))[notes.mcp_id][-1]
    assert entry.error_kind == ErrorKind.TOOL_ERROR and data_dir not in str(entry.result)


async def test_workspace_escape_refused(
    client: MegaMCPClient, group: GroupHandle, notes: MCPRecord, tmp_path
):
    for path in ("../../../escape.txt", "/../../escape.txt", "a/../../escape.txt"):
        res = await client.call_tool(group, notes.mcp_id, "write_note", {"path": path, "text": "x"})
        assert res.is_error and "outside the workspace" in res.text, path
    assert not list(tmp_path.rglob("escape.txt"))
    ok = await client.call_tool(
        group, notes.mcp_id, "write_note", {"path": "/notes/a.txt", "text": "hello"}
    )
    assert not ok.is_error
    back = await client.call_tool(group, notes.mcp_id, "read_note", {"path": "notes/a.txt"})
    assert back.text == "hello"


async def _raw_call(url: str, token: str | None) -> httpx.Response:
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    async with httpx.AsyncClient() as http:
        return await http.post(url, json=body, headers=headers)


async def test_tokens_missing_unknown_expired_closed_are_refused(
    client: MegaMCPClient, notes: MCPRecord, host: MegaMCPHost
):
    group = await client.create_group([notes.mcp_id])
    s = group.session(notes.mcp_id)
    assert (await _raw_call(s.url, None)).status_code == 401
    assert (await _raw_call(s.url, "forged-token-value")).status_code == 401
    assert (
        await _raw_call(s.url, host.admin_token)
    ).status_code == 401  # admin token is not a session
    with pytest.raises(Exception):  # noqa: B017 - fastmcp raises an HTTP error for 401
        async with Client(s.url, auth="forged-token-value") as c:
            await c.list_tools()
    # expiry: age the session server-side
    assert host.core is not None
    hosted = host.core.manager.get(group.group_id).sessions[notes.mcp_id]
    hosted.expires_at = time.time() - 1
    resp = await _raw_call(s.url, s.token)
    assert resp.status_code == 401 and "expired" in resp.text
    hosted.expires_at = time.time() + 60
    assert (await _raw_call(s.url, s.token)).status_code == 200
    await client.close(group)
    resp = await _raw_call(s.url, s.token)
    assert resp.status_code == 401 and "revoked" in resp.text


async def test_another_sessions_token_reaches_only_that_session(
    client: MegaMCPClient, notes: MCPRecord
):
    a = await client.create_group([notes.mcp_id])
    b = await client.create_group([notes.mcp_id])
    await client.call_tool(a, notes.mcp_id, "add_contact", {"name": "OnlyA", "email": "a@a.a"})
    # Using B's token shows B's state, never A's: tenancy is the token.
    res = await client.call_tool(b, notes.mcp_id, "list_contacts")
    assert "OnlyA" not in res.text


async def test_isolation_concurrent_writes(client: MegaMCPClient, notes: MCPRecord):
    groups = [await client.create_group([notes.mcp_id]) for _ in range(6)]

    async def work(i: int, g: GroupHandle) -> None:
        for j in range(5):
            r = await client.call_tool(
                g, notes.mcp_id, "add_contact", {"name": f"g{i}-{j}", "email": f"{i}.{j}@x.y"}
            )
            assert not r.is_error, r.text
            await client.call_tool(
                g, notes.mcp_id, "write_note", {"path": "mine.txt", "text": f"group {i}"}
            )

    await asyncio.gather(*(work(i, g) for i, g in enumerate(groups)))
    for i, g in enumerate(groups):
        names = [
            c["name"]
            for c in (await client.call_tool(g, notes.mcp_id, "list_contacts")).structured["result"]
        ]
        assert names == ["Ada Lovelace", "Alan Turing"] + [f"g{i}-{j}" for j in range(5)]
        assert (
            await client.call_tool(g, notes.mcp_id, "read_note", {"path": "mine.txt"})
        ).text == f"group {i}"


async def test_paused_and_frozen_groups_refuse_calls(
    client: MegaMCPClient, group: GroupHandle, notes: MCPRecord
):
    await client.pause(group)
    res = await client.call_tool(group, notes.mcp_id, "list_contacts")
    assert res.is_error and "paused" in res.text
    await client.resume(group)
    assert not (await client.call_tool(group, notes.mcp_id, "list_contacts")).is_error
    await client.freeze(group)
    res = await client.call_tool(
        group, notes.mcp_id, "add_contact", {"name": "x", "email": "x@y.z"}
    )
    assert res.is_error and "frozen" in res.text
    assert len((await client.ledger(group))[notes.mcp_id]) == 1  # refused calls did not run


async def test_error_rates_as_json_and_prometheus(
    client: MegaMCPClient, group: GroupHandle, notes: MCPRecord, host: MegaMCPHost
):
    await client.call_tool(group, notes.mcp_id, "list_contacts")
    await client.call_tool(
        group, notes.mcp_id, "update_email", {"contact_id": 42, "email": "a@b.c"}
    )
    stats = await client.stats()
    mcp = next(
        m for m in stats["mcps"] if m["mcp"] == notes.mcp_id and m["mcp_version"] == notes.version
    )
    assert mcp["calls"] == 2 and mcp["errors"] == 1
    async with httpx.AsyncClient() as http:
        text = (
            await http.get(
                f"{host.url}/admin/metrics", headers={"Authorization": f"Bearer {host.admin_token}"}
            )
        ).text
    assert "notes_crm" in text and "update_email" in text


async def test_successful_results_hide_host_paths(
    client: MegaMCPClient, group: GroupHandle, notes: MCPRecord, host: MegaMCPHost
):
    res = await client.call_tool(group, notes.mcp_id, "storage_info")
    assert not res.is_error
    data_dir = str(host.settings.data_dir.resolve())
    assert data_dir not in res.text and data_dir not in str(res.structured)
    assert res.structured["workspace"] == "/"  # the agent's own workspace root, as it names it
    assert res.structured["note"] == "see /api/v1/docs"  # ordinary data is left alone


async def test_unsendable_text_is_refused_and_the_session_client_survives(
    client: MegaMCPClient, group: GroupHandle, notes: MCPRecord
):
    from weft_megamcp.exceptions import MegaMCPUserError

    args = {"name": "Ada", "email": "ada@example.org", "tags": ["ok", "bad\ud800"]}
    with pytest.raises(MegaMCPUserError, match=r"add_contact arguments\.tags\[1\].*UTF-8"):
        await client.call_tool(group, notes.mcp_id, "add_contact", args)
    assert not (await client.call_tool(group, notes.mcp_id, "list_contacts", {})).is_error
    # The transport itself dies on such text (fastmcp closes the connection); a client broken
    # that way, or by any lost connection, reconnects on the next call instead of failing forever.
    raw = await client._client(group.session(notes.mcp_id))
    with pytest.raises(Exception):  # noqa: B017 - whatever the transport raises
        await raw.call_tool("add_contact", {"name": "x\ud800", "email": "x@example.org"})
    after = await client.call_tool(group, notes.mcp_id, "list_contacts", {})
    assert not after.is_error
