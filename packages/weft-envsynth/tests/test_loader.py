from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from fastmcp import Client

from weft_core.binding import SessionBinding, bind_session, release_session
from weft_envsynth.errors import BundleError
from weft_envsynth.loader import import_bundle


def test_missing_files_are_a_bundle_error(tmp_path: Path) -> None:
    (tmp_path / "__init__.py").write_text("")
    with pytest.raises(BundleError, match=r"missing models\.py"):
        import_bundle(tmp_path)


async def test_sessions_are_isolated_and_state_changes_reach_the_db(
    tmp_path: Path, helpdesk_bundle: Path
) -> None:
    import sqlite3

    server_mod = import_bundle(helpdesk_bundle)
    dbs = {}
    for sid in ("s1", "s2"):
        dbs[sid] = tmp_path / f"{sid}.sqlite"
        shutil.copyfile(helpdesk_bundle / "seed.sqlite", dbs[sid])
    with bind_session(SessionBinding("s1", dbs["s1"], tmp_path / "ws1")):
        async with Client(server_mod.create_server()) as c:
            tools = {t.name for t in await c.list_tools()}
            assert "create_ticket" in tools
            res = await c.call_tool(
                "create_ticket",
                {"customer_id": "CUS-0002", "subject": "VPN down", "priority": "urgent"},
            )
            new_id = res.structured_content["ticket"]["ticket_id"]
            bad = await c.call_tool("get_ticket", {"ticket_id": "TIC-9999"}, raise_on_error=False)
            assert bad.is_error and bad.content[0].text.startswith("not_found")
            assert str(tmp_path) not in bad.content[0].text
    release_session("s1")
    rows = (
        sqlite3.connect(dbs["s1"])
        .execute("SELECT subject, status FROM ticket WHERE ticket_id=?", (new_id,))
        .fetchall()
    )
    assert rows == [("VPN down", "open")]
    assert sqlite3.connect(dbs["s2"]).execute(
        "SELECT count(*) FROM ticket WHERE ticket_id=?", (new_id,)
    ).fetchone() == (0,)


async def test_two_versions_of_a_bundle_load_side_by_side(
    tmp_path: Path, helpdesk_bundle: Path
) -> None:
    copy = tmp_path / "helpdesk_copy"
    shutil.copytree(helpdesk_bundle, copy)
    (copy / "server.py").write_text((copy / "server.py").read_text() + "\n# v2\n")
    a, b = import_bundle(helpdesk_bundle), import_bundle(copy)
    assert a.__name__ != b.__name__
    assert a.create_server() is not b.create_server()


async def test_workspace_bundle_ships_a_seed_workspace(tmp_path: Path, example) -> None:
    from weft_envsynth.pipeline import synthesize_spec

    result = synthesize_spec(example("files"), tmp_path / "envs", rounds=0)
    assert result.status == "certified"
    bundle = Path(result.bundle or "")
    assert (bundle / "seed_workspace" / "notes" / "todo.txt").is_file()
    ws = tmp_path / "session-ws"
    with bind_session(SessionBinding("w1", tmp_path / "w1.sqlite", ws)):
        async with Client(import_bundle(bundle).create_server()) as c:
            res = await c.call_tool("read_file", {"path": "/notes/todo.txt"})
            assert "review open tickets" in res.structured_content["content"]
            bad = await c.call_tool("read_file", {"path": "../../etc/passwd"}, raise_on_error=False)
            assert bad.is_error and bad.content[0].text.startswith("invalid_path")
            await c.call_tool("write_file", {"path": "/reports/new.md", "content": "# Q2"})
            # A symlink to a host file outside the workspace: listed, its target's size is not.
            outside = tmp_path / "host-secret.bin"
            outside.write_bytes(b"x" * 12345)
            (ws / "link").symlink_to(outside)
            listing = await c.call_tool("list_directory", {"path": "/"})
            items = {i["path"]: i for i in listing.structured_content["items"]}
            assert items["/link"]["type"] == "symlink" and items["/link"]["size"] == 0
            assert "12345" not in json.dumps(listing.structured_content)
    release_session("w1")
    assert (ws / "reports" / "new.md").read_text() == "# Q2"
