"""A bundle's seed_workspace/ is where every session's workspace starts (file tasks not empty)."""

from __future__ import annotations

from pathlib import Path

from weft_megamcp.client import MegaMCPClient


async def test_sessions_start_from_the_bundle_seed_workspace(
    client: MegaMCPClient, bundle_dir: Path
):
    seed = bundle_dir / "seed_workspace"
    (seed / "docs").mkdir(parents=True)
    (seed / "docs" / "readme.txt").write_text("seeded text", encoding="utf-8")
    (seed / "todo.txt").write_text("1. call Ada", encoding="utf-8")
    rec = await client.register(bundle_dir)
    m = rec.mcp_id
    a = await client.create_group([m])
    b = await client.create_group([m])
    assert (await client.call_tool(a, m, "read_note", {"path": "docs/readme.txt"})).text == (
        "seeded text"
    )
    # Each session has its own copy: a change in one is not seen by the other.
    await client.call_tool(a, m, "write_note", {"path": "todo.txt", "text": "done"})
    assert (await client.call_tool(b, m, "read_note", {"path": "todo.txt"})).text == "1. call Ada"
    assert (await client.call_tool(a, m, "read_note", {"path": "todo.txt"})).text == "done"
    fork = (await client.fork(b, 1))[0]
    assert (await client.call_tool(fork, m, "read_note", {"path": "docs/readme.txt"})).text == (
        "seeded text"
    )


async def test_seed_workspace_is_part_of_the_version(client: MegaMCPClient, bundle_dir: Path):
    first = await client.register(bundle_dir)
    (bundle_dir / "seed_workspace").mkdir()
    (bundle_dir / "seed_workspace" / "a.txt").write_text("v2 seed", encoding="utf-8")
    second = await client.register(bundle_dir)
    assert second.version == first.version + 1
    old = await client.create_group({f"{first.mcp_id}@{first.version}": None})
    res = await client.call_tool(old, first.mcp_id, "read_note", {"path": "a.txt"})
    assert res.is_error  # the first version had no seed workspace
