"""Per-checkpoint state diffs from a real host: rows and files each turn changed, since the
previous checkpoint, through the admin API and the typed client."""

from __future__ import annotations

from pathlib import Path

import pytest

from weft_core.models import RowExists, Verifier
from weft_megamcp.client import MegaMCPClient
from weft_megamcp.host import MegaMCPHost
from weft_megamcp.registry import MCPRecord
from weft_megamcp.settings import MegaMCPSettings

pytestmark = pytest.mark.integration


def _verifier(*checkpoints: str) -> Verifier:
    check = RowExists(id="ada", table="contact", where={"id": 1})
    return Verifier(checkpoints={c: [check] for c in checkpoints})


async def test_each_checkpoint_diffs_against_the_previous_one(
    client: MegaMCPClient, notes: MCPRecord
) -> None:
    m = notes.mcp_id
    group = await client.create_group([m], verifier=_verifier("n1", "n2", "n3", "n4"))

    first = await client.checkpoint_verify(group, "n1")
    assert first.passed and first.state_diff is not None
    assert first.state_diff.since == "initial" and first.state_diff.empty

    added = await client.call_tool(group, m, "add_contact", {"name": "Grace", "email": "g@x.y"})
    grace = str(added.structured["id"])
    second = (await client.checkpoint_verify(group, "n2")).state_diff
    assert second is not None and second.since == "n1"
    contact = second.mcps[m].db.tables["contact"]
    assert set(contact.inserts) == {grace} and contact.inserts[grace]["name"] == "Grace"
    assert not contact.updates and not contact.deletes

    # Verifying n2 again (agentic replay does, after every call) still starts from n1.
    await client.call_tool(group, m, "update_email", {"contact_id": 1, "email": "ada@new.org"})
    again = (await client.checkpoint_verify(group, "n2")).state_diff
    assert again is not None and again.since == "n1"
    contact = again.mcps[m].db.tables["contact"]
    assert set(contact.inserts) == {grace}
    assert contact.updates["1"].changed["email"].old == "ada@example.com"
    assert contact.updates["1"].changed["email"].new == "ada@new.org"
    assert contact.updates["1"].new["name"] == "Ada Lovelace"

    await client.call_tool(group, m, "delete_contact", {"contact_id": 2})
    await client.call_tool(group, m, "write_note", {"path": "done.txt", "text": "ok"})
    third = (await client.checkpoint_verify(group, "n3")).state_diff
    assert third is not None and third.since == "n2"
    contact = third.mcps[m].db.tables["contact"]
    assert list(contact.deletes) == ["2"] and contact.deletes["2"]["name"] == "Alan Turing"
    assert not contact.inserts and not contact.updates  # n2's changes are not n3's
    assert third.mcps[m].files.added["done.txt"].text == "ok"

    # A turn without writes diffs to nothing (without diffing); writing after it, then
    # verifying the same checkpoint, still diffs from n3.
    quiet = (await client.checkpoint_verify(group, "n4")).state_diff
    assert quiet is not None and quiet.since == "n3" and quiet.empty
    await client.call_tool(group, m, "add_contact", {"name": "Hedy", "email": "h@x.y"})
    late = (await client.checkpoint_verify(group, "n4")).state_diff
    assert late is not None and late.since == "n3"
    assert [r["name"] for r in late.mcps[m].db.tables["contact"].inserts.values()] == ["Hedy"]
    assert not late.mcps[m].files.added  # done.txt was n3's
    await client.close(group)


async def test_restore_puts_the_baseline_back(client: MegaMCPClient, notes: MCPRecord) -> None:
    m = notes.mcp_id
    group = await client.create_group([m], verifier=_verifier("n1", "n2"))
    await client.call_tool(group, m, "add_contact", {"name": "Grace", "email": "g@x.y"})
    await client.checkpoint_verify(group, "n1")
    snap = await client.snapshot(group)
    await client.call_tool(group, m, "delete_contact", {"contact_id": 1})
    await client.restore(group, snap)
    await client.call_tool(group, m, "delete_contact", {"contact_id": 2})
    diff = (await client.checkpoint_verify(group, "n2")).state_diff
    assert diff is not None and diff.since == "n1"
    assert list(diff.mcps[m].db.tables["contact"].deletes) == ["2"]  # not Ada: restored away
    child = (await client.fork(group, 1))[0]
    await client.call_tool(child, m, "update_email", {"contact_id": 1, "email": "a@b.c"})
    forked = (await client.checkpoint_verify(child, "n1")).state_diff
    assert forked is not None and forked.since == "n2"  # the parent's last checkpoint
    assert set(forked.mcps[m].db.tables["contact"].updates) == {"1"}
    await client.close(child)
    await client.close(group)


async def test_cap_and_off_switch(tmp_path: Path, bundle_dir: Path) -> None:
    for max_rows, expect in ((1, "capped"), (0, "off")):
        settings = MegaMCPSettings(
            data_dir=tmp_path / f"h{max_rows}",
            admin_token="admin-secret-token",
            checkpoint_diff_max_rows=max_rows,
        )
        async with (
            MegaMCPHost.running(settings) as host,
            MegaMCPClient(host.url, host.admin_token) as client,
        ):
            m = (await client.register(bundle_dir)).mcp_id
            group = await client.create_group([m], verifier=_verifier("n1"))
            for name in ("A", "B", "C"):
                await client.call_tool(group, m, "add_contact", {"name": name, "email": "e@x.y"})
            diff = (await client.checkpoint_verify(group, "n1")).state_diff
            if expect == "off":
                assert diff is None
            else:
                assert diff is not None and diff.truncated and diff.max_rows == 1
                contact = diff.mcps[m].db.tables["contact"]
                assert len(contact.inserts) == 1 and contact.omitted == {"inserts": 2}
                assert contact.counts()["inserts"] == 3
            await client.close(group)


async def test_checkpoint_copies_are_removed_and_are_the_state_at_the_checkpoint(
    host: MegaMCPHost, client: MegaMCPClient, notes: MCPRecord
) -> None:
    """Each verification reads its own copy (diff on or off), and none outlives it."""
    assert host.core is not None
    m = notes.mcp_id
    grace = RowExists(id="grace", table="contact", where={"name": "Grace"})
    verifier = Verifier(checkpoints={"before": [grace], "after": [grace]})
    group = await client.create_group([m], verifier=verifier)
    assert not (await client.checkpoint_verify(group, "before")).passed
    await client.call_tool(group, m, "add_contact", {"name": "Grace", "email": "g@x.y"})
    assert (await client.checkpoint_verify(group, "after")).passed
    host.core.manager.diff_max_rows = 0
    assert (await client.checkpoint_verify(group, "after")).passed
    assert not list(host.core.manager.groups_dir.glob(".megamcp-ckpt-*"))
