"""A checkpoint's weft-core checks without a state diff read the live DBs in place (no copies),
and still judge exactly the state at the checkpoint; a Python verifier is still handed copies."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from weft_core.models import FieldEquals, RowAbsent, RowExists, Verifier
from weft_megamcp.client import MegaMCPClient
from weft_megamcp.groups import manager
from weft_megamcp.host import MegaMCPHost
from weft_megamcp.models import CallOp, VerifyOp
from weft_megamcp.registry import MCPRecord

pytestmark = pytest.mark.integration

VERIFIER = Verifier(
    checkpoints={
        "added": [
            RowExists(id="grace", table="contact", where={"name": "Grace"}),
            FieldEquals(
                id="email", table="contact", where={"name": "Grace"}, field="email", value="g@x.y"
            ),
        ],
        "changed": [
            FieldEquals(
                id="email", table="contact", where={"name": "Grace"}, field="email", value="h@x.y"
            ),
            RowAbsent(id="old", table="contact", where={"email": "g@x.y"}),
        ],
    }
)


@pytest.fixture
def copies(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The copies the group manager makes for verifications (the real copy still runs; a group's
    creation also copies its initial DBs, which are not counted)."""
    made: list[str] = []
    real = shutil.copyfile

    def copyfile(src: Any, dst: Any, *args: Any, **kwargs: Any) -> Any:
        if "megamcp-ckpt-" in str(dst):
            made.append(str(dst))
        return real(src, dst, *args, **kwargs)

    monkeypatch.setattr(manager.shutil, "copyfile", copyfile)
    return made


def _ops(m: str, *, diff: bool) -> list[Any]:
    return [
        CallOp(mcp=m, tool="add_contact", arguments={"name": "Grace", "email": "g@x.y"}),
        VerifyOp(checkpoint="added", diff=diff),
        # the verify at "changed" must see this write, so it cannot be reading a stale copy
        CallOp(mcp=m, tool="update_email", arguments={"contact_id": 3, "email": "h@x.y"}),
        VerifyOp(checkpoint="changed", diff=diff),
        VerifyOp(checkpoint="added", diff=diff),  # no longer holds: the email changed
    ]


async def test_checks_read_the_live_state_without_copies(
    host: MegaMCPHost, client: MegaMCPClient, notes: MCPRecord, copies: list[str]
) -> None:
    m = notes.mcp_id
    handle = await client.create_group([m], verifier=VERIFIER)
    out = await client.batch(handle, _ops(m, diff=False))
    verdicts = [s.verification.passed for s in out.steps if s.verification is not None]
    assert [s.error for s in out.steps] == [None] * 5
    assert verdicts == [True, True, False]
    assert copies == []
    assert host.core is not None
    assert not list(host.core.manager.groups_dir.glob(".megamcp-ckpt-*"))
    # the group goes on after a verification in place: its session still writes and reads
    res = await client.call_tool(handle, m, "add_contact", {"name": "Ada", "email": "a@x.y"})
    assert not res.is_error


async def test_a_state_diff_still_verifies_on_copies(
    client: MegaMCPClient, notes: MCPRecord, copies: list[str]
) -> None:
    m = notes.mcp_id
    handle = await client.create_group([m], verifier=VERIFIER)
    out = await client.batch(handle, _ops(m, diff=True))
    verdicts = [s.verification.passed for s in out.steps if s.verification is not None]
    assert verdicts == [True, True, False]
    assert len(copies) == 3  # one copy of the one DB per verification


async def test_a_python_verifier_is_handed_copies_not_the_live_db(
    client: MegaMCPClient, notes: MCPRecord, copies: list[str]
) -> None:
    """User code gets paths it could write to: never the session's own DB."""
    source = """
def verify(evidence, checkpoint, bindings):
    src = evidence["notes_crm"].final.source
    return {"outcomes": [{"check_id": "where", "kind": "python", "passed": "megamcp-ckpt-" in src,
                          "reason": src}], "reward": 1.0}
"""
    vid = await client.put_verifier("python", source)
    handle = await client.create_group([notes.mcp_id], verifier=vid)
    out = await client.batch(handle, [VerifyOp(checkpoint="mid", diff=False)])
    res = out.steps[0].verification
    assert res is not None and res.passed, res
    assert copies


async def test_a_wal_session_db_is_read_with_its_committed_pages(
    host: MegaMCPHost, client: MegaMCPClient, notes: MCPRecord, tmp_path: Path
) -> None:
    """A module that switched its DB to WAL: the verification opens it read-only (not immutable),
    so pages committed to the WAL and not yet copied back into the DB file are seen."""
    import sqlite3

    m = notes.mcp_id
    handle = await client.create_group([m], verifier=VERIFIER)
    assert host.core is not None
    db = host.core.manager.get(handle.group_id).sessions[m].db_path
    conn = sqlite3.connect(db)
    try:
        assert conn.execute("PRAGMA journal_mode=WAL").fetchone()[0] == "wal"
        conn.execute("PRAGMA wal_autocheckpoint=0")  # keep the row in the WAL only
        conn.execute("INSERT INTO contact (name, email, tier) VALUES ('Grace', 'g@x.y', 'basic')")
        conn.commit()
        assert Path(f"{db}-wal").stat().st_size > 0
        res = await client.batch(handle, [VerifyOp(checkpoint="added", diff=False)])
    finally:
        conn.close()
    verification = res.steps[0].verification
    assert verification is not None and verification.passed, verification
