"""Hostile HTTP input to a real host: every answer is a clear 4xx or a failed verification,
never a 500, and nothing an attacker's page or header trick sends gets through."""

from __future__ import annotations

import json

import httpx
import pytest
from fastmcp import Client
from fastmcp.client.transports import StreamableHttpTransport

from weft_core.models import Verifier
from weft_megamcp.client import MegaMCPClient
from weft_megamcp.host import MegaMCPHost
from weft_megamcp.models import GroupHandle
from weft_megamcp.registry import MCPRecord

pytestmark = pytest.mark.integration

ADMIN = {"authorization": "Bearer admin-secret-token"}


@pytest.fixture
async def http(host: MegaMCPHost):
    async with httpx.AsyncClient(base_url=host.url, timeout=30) as c:
        yield c


def _one_line_error(resp: httpx.Response) -> str:
    assert 400 <= resp.status_code < 500, (resp.status_code, resp.text[:300])
    detail = str(resp.json().get("detail", ""))
    assert "\n" not in detail and "Traceback" not in detail
    return detail


async def test_huge_version_numbers_are_not_found(http: httpx.AsyncClient, notes: MCPRecord):
    for version in ("99999999999999999999999999", "-1", "0"):
        resp = await http.get(f"/admin/mcps/{notes.mcp_id}?version={version}", headers=ADMIN)
        assert "not registered" in _one_line_error(resp)
    resp = await http.post(
        "/admin/groups",
        json={"mcps": {f"{notes.mcp_id}@99999999999999999999999": None}},
        headers=ADMIN,
    )
    assert "not registered" in _one_line_error(resp)


@pytest.mark.parametrize(
    "content",
    ["{", "[]", '{"checkpoints": 5}', '{"checkpoints": {"final": [{"kind": "nope"}]}}', "\udcff"],
)
async def test_malformed_checks_verifier_is_refused_at_upload(
    http: httpx.AsyncClient, content: str
):
    body = json.dumps({"kind": "checks", "content": content}, ensure_ascii=True)
    resp = await http.post(
        "/admin/verifiers",
        content=body.encode(),
        headers={**ADMIN, "content-type": "application/json"},
    )
    assert "verifier" in _one_line_error(resp) or "not valid Unicode" in resp.text


async def test_verifier_without_checks_never_passes(
    client: MegaMCPClient, http: httpx.AsyncClient, notes: MCPRecord
):
    resp = await http.post(
        "/admin/verifiers",
        json={"kind": "checks", "content": '{"checkpoints": {}}'},
        headers=ADMIN,
    )
    assert "no checks" in _one_line_error(resp)
    # Nor may a group carry one inline: it could never pass (weft-tasks sends none instead).
    for verifier in (Verifier.final([]), Verifier(checkpoints={"final": [], "step1": []})):
        resp = await http.post(
            "/admin/groups",
            json={"mcps": {notes.mcp_id: None}, "verifier": verifier.model_dump(mode="json")},
            headers=ADMIN,
        )
        assert resp.status_code == 400
        assert "no checks: it can never pass" in _one_line_error(resp)
        resp = await http.post(
            "/admin/runs",
            json={
                "create": {
                    "mcps": {notes.mcp_id: None},
                    "verifier": verifier.model_dump(mode="json"),
                },
                "ops": [],
            },
            headers=ADMIN,
        )
        assert "no checks" in _one_line_error(resp)
    # A checkpoint the verifier does not name is a failed verification, not a pass.
    resp = await http.post(
        "/admin/groups",
        json={
            "mcps": {notes.mcp_id: None},
            "verifier": {
                "checkpoints": {
                    "final": [
                        {"kind": "row_count", "mcp": notes.mcp_id, "table": "contact", "value": 0}
                    ]
                }
            },
        },
        headers=ADMIN,
    )
    assert resp.status_code == 200, resp.text
    gid = resp.json()["group_id"]
    result = await client.checkpoint_verify(gid, "step7")
    assert not result.passed and result.reward == 0.0 and "no check" in (result.error or "")


async def test_ambiguous_authorization_is_refused(http: httpx.AsyncClient, group: GroupHandle):
    token = group.session("notes_crm").token
    dup = httpx.Headers([("authorization", f"Bearer {token}"), ("authorization", "Bearer x")])
    resp = await http.post("/mcp", headers=dup, content=b"{}")
    assert resp.status_code == 400 and "more than one" in resp.text
    resp = await http.get(
        "/admin/groups", headers=[("authorization", "Bearer admin-secret-token"), *ADMIN.items()]
    )
    assert resp.status_code == 400
    resp = await http.get("/admin/groups", headers={"authorization": "Bearer ñandú".encode()})
    assert resp.status_code == 400 and "not ASCII" in resp.text


async def test_dns_rebinding_host_and_origin_are_refused(
    http: httpx.AsyncClient, group: GroupHandle
):
    token = group.session("notes_crm").token
    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        },
    }
    mcp_headers = {
        "authorization": f"Bearer {token}",
        "accept": "application/json, text/event-stream",
    }
    resp = await http.post("/mcp", json=init, headers={**mcp_headers, "host": "evil.example"})
    assert resp.status_code == 421
    resp = await http.get("/admin/groups", headers={**ADMIN, "host": "evil.example:80"})
    assert resp.status_code == 421
    resp = await http.post(
        "/mcp", json=init, headers={**mcp_headers, "origin": "http://evil.example"}
    )
    assert resp.status_code == 403
    ok = await http.post(
        "/mcp", json=init, headers={**mcp_headers, "origin": "http://localhost:1234"}
    )
    assert ok.status_code == 200, ok.text


async def test_session_url_and_server_info(group: GroupHandle, notes: MCPRecord):
    info = group.session("notes_crm")
    assert info.token_url.endswith(f"/s/{info.token}/mcp")
    # No Authorization header at all: the token is in the URL; both protocol eras name the MCP.
    for mode in ("auto", "legacy"):
        async with Client(StreamableHttpTransport(info.token_url), mode=mode) as c:
            tools = await c.list_tools()
            assert {t.name for t in tools} >= {"add_contact"}
            server = c.server_info
            assert server is not None, mode
            assert (server.name, server.version) == (notes.name, str(notes.version)), mode
    async with httpx.AsyncClient(timeout=30) as http:
        bad = await http.post(info.token_url.replace(info.token, "nope"), json={})
        assert bad.status_code == 401
        bad = await http.post(info.token_url.replace("/mcp", "/admin"), json={})
        assert bad.status_code == 404
