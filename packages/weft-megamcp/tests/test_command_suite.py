"""Command suites: several stdio servers that one session runs side by side over one workspace
(a filesystem server and a git server over one repository)."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

import pytest

from weft_megamcp.client import MegaMCPClient
from weft_megamcp.exceptions import MegaMCPUserError

pytestmark = [pytest.mark.integration, pytest.mark.slow]
DATA = Path(__file__).parent / "data"
NOTES = [sys.executable, str(DATA / "stdio_notes.py")]
SHELF = [sys.executable, str(DATA / "stdio_shelf.py")]


async def test_suite_members_share_the_session_workspace(client: MegaMCPClient) -> None:
    rec = await client.register_suite({"notes": NOTES, "shelf": SHELF}, name="desk")
    assert rec.kind == "command"
    assert {t.name for t in rec.tools} == {"note", "read", "shelf", "words", "shelf_calls"}
    assert rec.metadata["tool_members"]["words"] == "shelf"
    a = await client.create_group([rec.mcp_id])
    b = await client.create_group([rec.mcp_id])
    # What one member writes, the other reads: one workspace per session.
    await client.call_tool(a, rec.mcp_id, "note", {"name": "plan.md", "text": "ship the parser"})
    assert (await client.call_tool(a, rec.mcp_id, "shelf")).structured["result"] == ["plan.md"]
    words = await client.call_tool(a, rec.mcp_id, "words", {"name": "plan.md"})
    assert words.structured["result"] == 3
    # ... and another session's workspace is its own.
    assert (await client.call_tool(b, rec.mcp_id, "shelf")).structured["result"] == []
    # A snapshot stops every member; a restore brings back the shared folder.
    snap = await client.snapshot(a)
    await client.call_tool(a, rec.mcp_id, "note", {"name": "extra.md", "text": "x"})
    await client.restore(a, snap)
    assert (await client.call_tool(a, rec.mcp_id, "shelf")).structured["result"] == ["plan.md"]
    assert (await client.call_tool(a, rec.mcp_id, "read", {"name": "plan.md"})).text == (
        "ship the parser"
    )
    # Registering the same suite again is the same version (content-addressed).
    again = await client.register_suite({"shelf": SHELF, "notes": NOTES}, name="desk")
    assert (again.mcp_id, again.version) == (rec.mcp_id, rec.version)


async def test_a_first_read_only_call_is_not_a_change_of_state(client: MegaMCPClient) -> None:
    # The host creates the session DB file before a sandboxed process starts; that empty file is
    # not the tool's doing (it was once ledgered as a mutation of every first call).
    rec = await client.register_suite({"notes": NOTES, "shelf": SHELF}, name="desk3")
    g = await client.create_group([rec.mcp_id])
    await client.call_tool(g, rec.mcp_id, "shelf")
    await client.call_tool(g, rec.mcp_id, "note", {"name": "a.md", "text": "one"})
    await client.call_tool(g, rec.mcp_id, "words", {"name": "a.md"})
    entries = (await client.ledger(g))[rec.mcp_id]
    assert [(e.tool, e.mutated) for e in entries] == [
        ("shelf", False),
        ("note", True),
        ("words", False),
    ]


async def test_a_killed_member_restarts_alone(client: MegaMCPClient) -> None:
    rec = await client.register_suite({"notes": NOTES, "shelf": SHELF}, name="desk2")
    g = await client.create_group([rec.mcp_id])
    await client.call_tool(g, rec.mcp_id, "note", {"name": "a.md", "text": "one"})
    await client.call_tool(g, rec.mcp_id, "shelf")
    assert (await client.call_tool(g, rec.mcp_id, "shelf_calls")).structured["result"] == 1
    pid = _pid_of("stdio_shelf.py")
    os.kill(pid, signal.SIGKILL)
    failed = await client.call_tool(g, rec.mcp_id, "shelf_calls")
    # The call on the dead member fails as an error observation (or already on a fresh one);
    # the next call runs on a fresh shelf process while the notes member keeps its count.
    if failed.is_error:
        failed = await client.call_tool(g, rec.mcp_id, "shelf_calls")
    assert failed.structured["result"] == 0
    assert (await client.call_tool(g, rec.mcp_id, "shelf")).structured["result"] == ["a.md"]
    assert (
        await client.call_tool(g, rec.mcp_id, "note", {"name": "b.md", "text": "two"})
    ).text == "call 2"


async def test_a_tool_two_members_offer_is_refused(client: MegaMCPClient) -> None:
    with pytest.raises(MegaMCPUserError) as err:
        await client.register_suite({"a": NOTES, "b": NOTES}, name="twice")
    msg = str(err.value)
    assert "'note'" in msg and "'a'" in msg and "'b'" in msg and "\n" not in msg, msg


@pytest.mark.parametrize(
    ("members", "needle"),
    [
        ({}, "at least one member"),
        ({"no/slash": NOTES}, "'no/slash'"),
        ({"ok": []}, "suite member 'ok': command must be a non-empty list"),
        ({"ok": ["/nonexistent/server"]}, "suite member 'ok': command '/nonexistent/server'"),
    ],
)
async def test_bad_suites_are_refused_with_one_line(
    client: MegaMCPClient, members: dict[str, list[str]], needle: str
) -> None:
    with pytest.raises(MegaMCPUserError) as err:
        await client.register_suite(members, name="bad")
    assert needle in str(err.value) and "\n" not in str(err.value), str(err.value)


def _parent(pid: int) -> int:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0
    return int(stat.rpartition(")")[2].split()[1])


def _descends_from_us(pid: int) -> bool:
    while pid > 1:
        pid = _parent(pid)
        if pid == os.getpid():
            return True
    return False


def _pid_of(script: str) -> int:
    """This test's server process running `script` (another test process may run one too)."""
    own = os.getpid()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == own:
            continue
        if not _descends_from_us(int(entry.name)):
            continue
        try:
            cmd = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        # The server itself, not the sandbox that started it (bwrap's argv names it too).
        if (
            cmd
            and Path(cmd[0].decode()).name.startswith("python")
            and any(c.decode().endswith(script) for c in cmd)
        ):
            return int(entry.name)
    raise AssertionError(f"no process runs {script}")
