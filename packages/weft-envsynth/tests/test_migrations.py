"""Schema revisions after certification are alembic migrations that carry snapshots forward."""

from __future__ import annotations

import copy
import shutil
import sqlite3
from pathlib import Path

from fastmcp import Client

from weft_core.binding import SessionBinding, bind_session, release_session
from weft_core.models import EnvBundleManifest, MCPSpec
from weft_envsynth.loader import import_bundle
from weft_envsynth.migrations import db_revision, head_revision, upgrade_snapshot
from weft_envsynth.pipeline import synthesize_spec


def _v2(spec: MCPSpec) -> MCPSpec:
    tools = []
    for t in spec.tools:
        if t.name in {"create_ticket", "update_ticket"}:
            schema = copy.deepcopy(t.input_schema)
            schema["properties"]["due_date"] = {
                "type": "string",
                "format": "date",
                "description": "When the ticket is due.",
            }
            t = t.model_copy(update={"input_schema": schema})
        tools.append(t)
    return spec.model_copy(update={"tools": tools, "content_hash": None})


async def test_v1_snapshot_upgrades_to_v2_without_losing_rows(
    tmp_path: Path, helpdesk_spec: MCPSpec
) -> None:
    out = tmp_path / "envs"
    r1 = synthesize_spec(helpdesk_spec, out, rounds=1)
    assert r1.status == "certified"
    v1 = Path(r1.bundle or "")
    v1_head = head_revision(v1 / "migrations")

    # a snapshot made under version 1, with a row written through the v1 server
    snap = tmp_path / "snapshot-v1.sqlite"
    shutil.copyfile(v1 / "seed.sqlite", snap)
    with bind_session(SessionBinding("v1", snap, tmp_path / "ws")):
        async with Client(import_bundle(v1).create_server()) as c:
            res = await c.call_tool(
                "create_ticket",
                {"customer_id": "CUS-0003", "subject": "Legacy row", "priority": "low"},
            )
            legacy_id = res.structured_content["ticket"]["ticket_id"]
    release_session("v1")
    before = sqlite3.connect(snap).execute("SELECT * FROM ticket ORDER BY ticket_id").fetchall()
    assert db_revision(snap) == v1_head

    r2 = synthesize_spec(_v2(helpdesk_spec), out, rounds=1)
    assert r2.status == "certified"
    v2 = Path(r2.bundle or "")
    assert v2 == v1  # same place; version 1 moved to the history
    assert EnvBundleManifest.load(v2 / "manifest.json").version == 2
    assert (out / ".history" / "helpdesk-v1" / "manifest.json").exists()
    versions = sorted(p.name for p in (v2 / "migrations" / "versions").glob("*.py"))
    assert len(versions) == 2 and "schema_revision" in versions[1]
    v2_head = head_revision(v2 / "migrations")
    assert v2_head != v1_head

    assert upgrade_snapshot(v2, snap) == v2_head
    conn = sqlite3.connect(snap)
    cols = [r[1] for r in conn.execute("PRAGMA table_info(ticket)")]
    assert "due_date" in cols
    after = conn.execute(
        f"SELECT {', '.join(c for c in cols if c != 'due_date')} FROM ticket ORDER BY ticket_id"
    ).fetchall()
    assert len(after) == len(before) and {r[0] for r in after} == {r[0] for r in before}
    conn.close()

    # the upgraded snapshot serves the v2 tools, old rows included
    with bind_session(SessionBinding("v2", snap, tmp_path / "ws")):
        async with Client(import_bundle(v2).create_server()) as c:
            got = await c.call_tool("get_ticket", {"ticket_id": legacy_id})
            assert got.structured_content["ticket"]["subject"] == "Legacy row"
            upd = await c.call_tool(
                "update_ticket", {"ticket_id": legacy_id, "due_date": "2026-12-01"}
            )
            assert upd.structured_content["ticket"]["due_date"] == "2026-12-01"
    release_session("v2")
