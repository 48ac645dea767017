"""Batched group operations: calls, checks, freeze and close in one request, ledgered as usual."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from weft_core.models import RowExists, Verifier
from weft_megamcp.client import MegaMCPClient
from weft_megamcp.exceptions import MegaMCPUserError, NotFoundError
from weft_megamcp.models import CallOp, FreezeOp, SetOp, VerifyOp
from weft_megamcp.registry import MCPRecord

pytestmark = pytest.mark.integration


async def test_run_replays_calls_checks_and_closes_in_one_request(
    client: MegaMCPClient, notes: MCPRecord
) -> None:
    m = notes.mcp_id
    verifier = Verifier(
        checkpoints={
            "step1": [RowExists(id="grace", table="contact", where={"name": "Grace"})],
            "final": [RowExists(id="hopper", table="contact", where={"email": "h@x.y"})],
        }
    )
    out = await client.run(
        [m],
        [
            CallOp(mcp=m, tool="add_contact", arguments={"name": "Grace", "email": "g@x.y"}),
            VerifyOp(checkpoint="step1"),
            CallOp(mcp=m, tool="update_email", arguments={"contact_id": 1, "email": "h@x.y"}),
            VerifyOp(),  # freeze + final checks
        ],
        verifier=verifier,
        task_id="t-batch",
    )
    assert out.stopped_at is None and out.closed
    assert [s.op for s in out.steps] == ["call", "verify", "call", "verify"]
    added = out.steps[0].call
    assert added is not None and not added.is_error and added.structured["name"] == "Grace"
    assert out.steps[1].verification is not None and out.steps[1].verification.passed
    final = out.steps[3].verification
    assert final is not None and final.checkpoint == "final" and final.passed
    assert out.handle is not None
    with pytest.raises(NotFoundError):  # closed: nothing left on the host
        await client.info(out.handle)
    with pytest.raises(Exception):  # noqa: B017 - fastmcp raises an HTTP error for the 401
        await client.call_tool(out.handle, m, "list_contacts", {})


async def test_an_env_carries_a_created_id_into_later_calls_host_side(
    client: MegaMCPClient, notes: MCPRecord
) -> None:
    m = notes.mcp_id
    ops: list = [
        SetOp(values={"who": "Ada", "mail": "old@x.y"}),
        CallOp(
            mcp=m,
            tool="add_contact",
            arguments={"name": "{{who}}", "email": "{{mail}}"},
            bind={"cid": "id", "absent": "no.such.path"},
        ),
        # `refs` copies a bound value under another name; a ref to an unset key keeps the literal
        SetOp(
            values={"target": -1, "fallback": "kept"}, refs={"target": "cid", "fallback": "nope"}
        ),
        CallOp(
            mcp=m,
            tool="update_email",
            arguments={"contact_id": "{{target}}", "email": "{{fallback}}-{{who}}@x.y"},
        ),
        CallOp(
            mcp=m, tool="update_email", arguments={"contact_id": "{{absent}}", "email": "a@b.c"}
        ),
        CallOp(mcp=m, tool="list_contacts"),
    ]
    out = await client.run([m], ops, env={})
    assert [s.op for s in out.steps] == ["set", "call", "set", "call", "call"]
    assert out.stopped_at == 4 and out.closed
    created = out.steps[1].call
    assert created is not None and not created.is_error
    assert out.steps[1].arguments == {"name": "Ada", "email": "old@x.y"}
    # the id the create returned reached the update, with its type (an int, not "1")
    assert out.steps[3].arguments == {
        "contact_id": created.structured["id"],
        "email": "kept-Ada@x.y",
    }
    updated = out.steps[3].call
    assert updated is not None and not updated.is_error, updated.text
    assert updated.structured["email"] == "kept-Ada@x.y"
    # a bind the result lacked is only an error where a template needs it, naming it
    assert out.steps[4].call is None and out.steps[4].error is not None
    assert "{{absent}}" in out.steps[4].error
    # without an env, templates are sent as written and `set` is refused
    group = await client.create_group([m])
    plain = await client.batch(
        group,
        [CallOp(mcp=m, tool="add_contact", arguments={"name": "{{who}}", "email": "p@x.y"})],
        close=False,
    )
    assert plain.steps[0].arguments is None
    call = plain.steps[0].call
    assert call is not None and call.structured["name"] == "{{who}}"
    refused = await client.batch(group, [SetOp(values={"a": 1})], close=True)
    assert refused.steps[0].error is not None and "env" in refused.steps[0].error


async def test_batch_stops_at_the_first_failure_and_ledgers_what_ran(
    client: MegaMCPClient, notes: MCPRecord
) -> None:
    m = notes.mcp_id
    group = await client.create_group([m])
    out = await client.batch(
        group,
        [
            CallOp(mcp=m, tool="add_contact", arguments={"name": "A", "email": "a@x.y"}),
            CallOp(mcp=m, tool="add_contact", arguments={"name": "B", "email": "not-an-email"}),
            CallOp(mcp=m, tool="add_contact", arguments={"name": "C", "email": "c@x.y"}),
        ],
    )
    assert out.stopped_at == 1 and not out.closed
    bad = out.steps[1].call
    assert bad is not None and bad.is_error and "invalid email" in bad.text
    ledger = (await client.ledger(group))[m]
    assert [e.tool for e in ledger] == ["add_contact", "add_contact"]
    assert [e.is_error for e in ledger] == [False, True]
    unknown = await client.batch(group, [CallOp(mcp="nope", tool="x"), FreezeOp()], close=True)
    assert unknown.stopped_at == 0 and "no session for MCP 'nope'" in (unknown.steps[0].error or "")
    assert unknown.closed


async def test_a_checkpoint_without_its_diff_keeps_the_verdict_and_the_diff_baseline(
    client: MegaMCPClient, notes: MCPRecord
) -> None:
    m = notes.mcp_id
    grace = RowExists(id="grace", table="contact", where={"name": "Grace"})
    out = await client.run(
        [m],
        [
            CallOp(mcp=m, tool="add_contact", arguments={"name": "Grace", "email": "g@x.y"}),
            VerifyOp(checkpoint="a", diff=False),
            VerifyOp(checkpoint="b"),
        ],
        verifier=Verifier(checkpoints={"a": [grace], "b": [grace]}),
    )
    quick, full = out.steps[1].verification, out.steps[2].verification
    assert quick is not None and quick.passed and quick.state_diff is None
    # the undiffed checkpoint did not move the baseline: b's diff still starts at the initial DB
    assert full is not None and full.passed and full.state_diff is not None
    assert full.state_diff.since == "initial" and not full.state_diff.empty


async def test_run_stores_its_initial_snapshot_in_the_same_request(
    client: MegaMCPClient, notes: MCPRecord, tmp_path: Path
) -> None:
    m = notes.mcp_id
    db = tmp_path / "initial.sqlite"
    con = sqlite3.connect(db)
    con.execute(
        "CREATE TABLE contact (id INTEGER PRIMARY KEY, name VARCHAR NOT NULL, "
        "email VARCHAR NOT NULL, tier VARCHAR NOT NULL)"
    )
    con.execute("insert into contact (name, email, tier) values ('Ada', 'a@x.y', 'gold')")
    con.commit()
    con.close()
    ada = RowExists(id="ada", table="contact", where={"name": "Ada"})
    out = await client.run(
        {m: None},
        [CallOp(mcp=m, tool="list_contacts"), VerifyOp()],
        verifier=Verifier.final([ada]),
        snapshots={m: db},
    )
    listed, final = out.steps[0].call, out.steps[1].verification
    assert listed is not None and "Ada" in listed.text
    assert final is not None and final.passed
    # the row only the stored snapshot holds was there: the session started from it
    with pytest.raises(MegaMCPUserError, match="does not name"):
        await client.run({m: None}, [], snapshots={"other": db})
