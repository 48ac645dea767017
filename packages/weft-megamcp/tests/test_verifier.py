"""Server-side verification: checks per checkpoint, Python verifiers, secrecy from agents."""

from __future__ import annotations

import httpx
import pytest

from weft_core.models import (
    CallMade,
    DiffContains,
    FieldEquals,
    NoOtherChanges,
    RowExists,
    Verifier,
    WorkspaceFile,
)
from weft_megamcp.client import MegaMCPClient
from weft_megamcp.exceptions import MegaMCPUserError
from weft_megamcp.host import MegaMCPHost
from weft_megamcp.registry import MCPRecord

pytestmark = pytest.mark.integration


def _final_checks(email: str) -> Verifier:
    return Verifier.final(
        [
            FieldEquals(
                id="email",
                table="contact",
                where={"id": 1},
                field="email",
                value={"$binding": "target.email"},
            ),
            DiffContains(
                id="diff", table="contact", change="update", where={"id": 1}, fields=["email"]
            ),
            NoOtherChanges(id="no-other", allowed=[{"table": "contact", "change": "update"}]),
            CallMade(id="called", tool="update_email", arguments={"contact_id": 1}),
            WorkspaceFile(id="note", path="done.txt", contains="ok"),
        ],
        bindings={"target": {"email": email}},
    )


async def test_checks_pass_and_fail_with_reasons(client: MegaMCPClient, notes: MCPRecord):
    final = _final_checks("ada@new.org")
    verifier = final.model_copy(
        update={
            "checkpoints": final.checkpoints
            | {"step1": [RowExists(id="grace", table="contact", where={"name": "Grace"})]}
        }
    )
    good = await client.create_group([notes.mcp_id], verifier=verifier, task_id="t-update")
    bad = (await client.fork(good, 1))[0]
    m = notes.mcp_id
    step = await client.checkpoint_verify(good, "step1")
    assert not step.passed and step.reward == 0.0 and step.outcomes[0].check_id == "grace"
    await client.call_tool(good, m, "add_contact", {"name": "Grace", "email": "g@x.y"})
    assert (await client.checkpoint_verify(good, "step1")).passed
    await client.call_tool(good, m, "delete_contact", {"contact_id": 3})
    await client.call_tool(good, m, "update_email", {"contact_id": 1, "email": "ada@new.org"})
    await client.call_tool(good, m, "write_note", {"path": "done.txt", "text": "ok"})
    result = await client.verify(good)
    assert result.passed and result.reward == 1.0, result.outcomes
    assert (await client.info(good)).status == "frozen"

    await client.call_tool(bad, m, "update_email", {"contact_id": 1, "email": "wrong@x.y"})
    await client.call_tool(bad, m, "delete_contact", {"contact_id": 2})
    result = await client.verify(bad)
    assert not result.passed and result.reward == 0.0
    failed = {o.check_id for o in result.outcomes if not o.passed}
    assert failed == {"email", "no-other", "note"}
    assert all(o.reason for o in result.outcomes if not o.passed)


async def test_python_verifier_runs_in_the_host(client: MegaMCPClient, notes: MCPRecord):
    source = """
def verify(evidence, checkpoint, bindings):
    ev = evidence["notes_crm"]
    rows = ev.final.tables["contact"]
    n = len(rows)
    ok = n == bindings["expected"]
    return {"outcomes": [{"check_id": "count", "kind": "python", "passed": ok, "reason": f"{n} contacts"}],
            "reward": 1.0 if ok else 0.25}
"""
    vid = await client.put_verifier("python", source)
    g = await client.create_group([notes.mcp_id], verifier=vid, bindings={"expected": 3})
    await client.call_tool(g, notes.mcp_id, "add_contact", {"name": "C", "email": "c@x.y"})
    res = await client.verify(g)
    assert res.passed and res.reward == 1.0 and res.outcomes[0].reason == "3 contacts"
    g2 = await client.create_group([notes.mcp_id], verifier=vid, bindings={"expected": 3})
    res = await client.verify(g2)
    assert not res.passed and res.reward == 0.25


async def test_broken_verifiers_report_errors(client: MegaMCPClient, notes: MCPRecord):
    vid = await client.put_verifier(
        "python", "def verify(evidence, checkpoint, bindings):\n    raise RuntimeError('boom')\n"
    )
    g = await client.create_group([notes.mcp_id], verifier=vid)
    res = await client.verify(g)
    assert not res.passed and res.error and "boom" in res.error
    g2 = await client.create_group(
        [notes.mcp_id],
        verifier=Verifier.final([RowExists(table="contact", where={"nope": 1})]),
    )
    res = await client.verify(g2)
    assert not res.passed
    res = await client.checkpoint_verify(g2, "missing")
    assert not res.passed and "no checkpoint 'missing'" in (res.error or "")
    # A malformed verifier is refused at the admin boundary, naming the bad check.
    with pytest.raises(MegaMCPUserError, match="not_a_check"):
        await client._req(
            "POST",
            "/admin/groups",
            {
                "mcps": {notes.mcp_id: None},
                "verifier": {"checkpoints": {"final": [{"kind": "not_a_check"}]}},
            },
        )
    # ... and so is a malformed registered verifier, at upload.
    with pytest.raises(MegaMCPUserError, match="malformed"):
        await client.put_verifier("checks", '{"checkpoints": {"final": [{"kind": "nope"}]}}')


async def test_agents_cannot_reach_the_verifier(
    client: MegaMCPClient, notes: MCPRecord, host: MegaMCPHost
):
    secret = "SECRET-EXPECTED-EMAIL@x.y"
    g = await client.create_group([notes.mcp_id], verifier=_final_checks(secret))
    s = g.session(notes.mcp_id)
    async with httpx.AsyncClient(
        base_url=host.url, headers={"Authorization": f"Bearer {s.token}"}
    ) as http:
        for method, path in [
            ("POST", f"/admin/groups/{g.group_id}/verify"),
            ("GET", f"/admin/groups/{g.group_id}"),
            ("GET", f"/admin/groups/{g.group_id}/ledger"),
            ("GET", "/admin/mcps"),
        ]:
            resp = await http.request(method, path, json={})
            assert resp.status_code == 401, path
    tools = await client.list_tools(g, notes.mcp_id)
    assert secret not in str(tools)
    for t in ("list_contacts", "where_am_i"):
        res = await client.call_tool(g, notes.mcp_id, t, {})
        assert secret not in res.text and "verifier" not in res.text.lower()
    info = await client.info(g)
    assert secret not in info.model_dump_json()
