"""The stronger tier: screen-failing modules and stdio commands get one process per session."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from weft_megamcp.client import MegaMCPClient

pytestmark = [pytest.mark.integration, pytest.mark.slow]
DATA = Path(__file__).parent / "data"


async def test_screen_failing_module_runs_one_process_per_session(client: MegaMCPClient):
    rec = await client.register(DATA / "global_counter.py")
    assert rec.metadata["screen"]["tier"] == "dedicated_process", rec.metadata["screen"]
    a = await client.create_group([rec.mcp_id])
    b = await client.create_group([rec.mcp_id])
    assert [
        (await client.call_tool(a, rec.mcp_id, "bump")).structured["result"] for _ in range(3)
    ] == [1, 2, 3]
    # Session B has its own process: the global counter of A is not visible.
    assert (await client.call_tool(b, rec.mcp_id, "bump")).structured["result"] == 1


async def test_stdio_command_server(client: MegaMCPClient):
    rec = await client.register_command(
        [sys.executable, str(DATA / "stdio_notes.py")], name="stdio_notes"
    )
    assert rec.kind == "command" and {t.name for t in rec.tools} == {"note", "read"}
    a = await client.create_group([rec.mcp_id])
    b = await client.create_group([rec.mcp_id])
    assert (
        await client.call_tool(a, rec.mcp_id, "note", {"name": "x.txt", "text": "from a"})
    ).text == "call 1"
    assert (
        await client.call_tool(b, rec.mcp_id, "note", {"name": "x.txt", "text": "from b"})
    ).text == "call 1"
    assert (await client.call_tool(a, rec.mcp_id, "read", {"name": "x.txt"})).text == "from a"
    bad = await client.call_tool(a, rec.mcp_id, "note", {"name": "../x", "text": "no"})
    assert bad.is_error and "bad note name" in bad.text and "/tmp" not in bad.text
    missing = await client.call_tool(a, rec.mcp_id, "nope", {})
    assert missing.is_error and "Unknown tool" in missing.text
    snap = await client.snapshot(a)  # stops the process; files are copied
    await client.call_tool(a, rec.mcp_id, "note", {"name": "x.txt", "text": "changed"})
    await client.restore(a, snap)
    assert (await client.call_tool(a, rec.mcp_id, "read", {"name": "x.txt"})).text == "from a"
    # Its state is all in the workspace (the session DB file is empty): an export carries the
    # workspace and no DB, and a group created from it starts there.
    ref = (await client.export(a))[rec.mcp_id]
    assert ref.uri is None and ref.workspace_uri
    c = await client.create_group({rec.mcp_id: None}, workspaces={rec.mcp_id: ref.workspace_uri})
    assert (await client.call_tool(c, rec.mcp_id, "read", {"name": "x.txt"})).text == "from a"


def test_command_placeholders_expand_to_the_session_paths(tmp_path: Path):
    from weft_megamcp.sandbox import Sandbox
    from weft_megamcp.stdio_transport import command_transport

    ws, db = tmp_path / "ws", tmp_path / "s.sqlite"
    ws.mkdir()
    db.touch()
    argv = ["srv", "--db-path", "${WEFT_DB_PATH}", "--root=${WEFT_WORKSPACE}/x"]
    env = {"MEMORY_FILE_PATH": "${WEFT_WORKSPACE}/memory.jsonl"}
    t = command_transport(argv, env, ws, db, sandbox=Sandbox(mode="off"))
    assert t.args == ["--db-path", str(db), f"--root={ws}/x"]
    assert t.env is not None and t.env["MEMORY_FILE_PATH"] == f"{ws}/memory.jsonl"


def test_command_placeholders_name_the_sandbox_paths_when_sandboxed(tmp_path: Path):
    from weft_megamcp.sandbox import Sandbox, SandboxUnavailable
    from weft_megamcp.stdio_transport import command_transport

    ws, db = tmp_path / "ws", tmp_path / "s.sqlite"
    ws.mkdir()
    db.touch()
    argv = ["srv", "--db-path", "${WEFT_DB_PATH}", "--root=${WEFT_WORKSPACE}/x"]
    try:
        t = command_transport(argv, {}, ws, db, sandbox=Sandbox(mode="bwrap"))
    except SandboxUnavailable as exc:
        pytest.skip(f"no usable sandbox on this machine: {exc}")
    # Inside bwrap the session's files are bind mounts at /session/...; the host path of the
    # workspace appears only as a bind source, never as the server's own argument.
    tail = t.args[t.args.index("srv") + 1 :]
    assert tail == ["--db-path", "/session/state.sqlite", "--root=/session/workspace/x"]
