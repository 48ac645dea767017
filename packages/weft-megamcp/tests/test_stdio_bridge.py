"""The stdio bridge: a stdio MCP client subprocess-launches the bridge, which forwards to one
session over streamable HTTP with its bearer token."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastmcp import Client
from fastmcp.client.transports import StdioTransport

from weft_megamcp.client import MegaMCPClient
from weft_megamcp.models import GroupHandle
from weft_megamcp.registry import MCPRecord
from weft_megamcp.stdio_bridge import BridgeError, _check

TOKEN_SERVER = Path(__file__).parent / "interop" / "token_server.py"
TOKEN = "s3cret-session-token"


@pytest.fixture(scope="module")
def upstream() -> Iterator[str]:
    proc = subprocess.Popen(
        [sys.executable, str(TOKEN_SERVER), TOKEN], stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("PORT "), line
        yield f"http://127.0.0.1:{int(line.split()[1])}/mcp"
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def bridge(url: str, token: str, *, via_cli: bool = False) -> StdioTransport:
    args = ["-m", "weft_megamcp.cli", "stdio"] if via_cli else ["-m", "weft_megamcp.stdio_bridge"]
    return StdioTransport(
        sys.executable, [*args, "--url", url, "--token", token], env=dict(os.environ)
    )


@pytest.mark.integration
async def test_bridge_forwards_list_call_and_errors(upstream: str) -> None:
    async with Client(bridge(upstream, TOKEN)) as client:
        names = sorted(t.name for t in await client.list_tools())
        assert names == ["add", "fail", "remember"]
        assert (await client.call_tool("add", {"a": 2, "b": 40})).data == 42
        first = await client.call_tool("remember", {"text": "a"})
        second = await client.call_tool("remember", {"text": "b"})
        assert first.structured_content == {"count": 1, "last": "a"}
        assert second.structured_content == {"count": 2, "last": "b"}  # one upstream session
        failed = await client.call_tool("fail", {"reason": "no such order"}, raise_on_error=False)
        assert failed.is_error
        assert "no such order" in failed.content[0].text  # type: ignore[union-attr]
        bad = await client.call_tool("add", {"a": "x"}, raise_on_error=False)
        assert bad.is_error


@pytest.mark.integration
def test_bridge_with_wrong_token_fails_at_start(upstream: str) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "weft_megamcp.stdio_bridge", "--url", upstream, "--token", "wrong"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2
    assert "cannot reach the MegaMCP session" in proc.stderr
    assert "wrong" not in proc.stderr.split("error:", 1)[1]  # the token is never echoed
    assert proc.stdout == ""  # nothing on the protocol channel


def test_bad_url_and_token_are_user_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("WEFT_MEGAMCP_SESSION_TOKEN", raising=False)
    with pytest.raises(BridgeError, match="http"):
        _check("ftp://x/mcp", "t")
    with pytest.raises(BridgeError, match="bearer token"):
        _check("http://127.0.0.1:1/mcp", None)
    with pytest.raises(BridgeError, match="bearer token"):
        _check("http://127.0.0.1:1/mcp", "two words")
    monkeypatch.setenv("WEFT_MEGAMCP_SESSION_TOKEN", "from-env")
    assert _check("http://127.0.0.1:1/mcp", None) == "from-env"


@pytest.mark.integration
async def test_bridge_to_a_megamcp_session(
    client: MegaMCPClient, notes: MCPRecord, group: GroupHandle
) -> None:
    info = group.session(notes.mcp_id)
    async with Client(bridge(info.url, info.token, via_cli=True)) as stdio:
        assert "add_contact" in {t.name for t in await stdio.list_tools()}
        added = await stdio.call_tool(
            "add_contact", {"name": "Grace", "email": "grace.bridge@example.org"}
        )
        assert added.structured_content is not None
        bad = await stdio.call_tool(
            "add_contact", {"name": "B", "email": "nope"}, raise_on_error=False
        )
        assert bad.is_error
    # the write landed in this group's session and nowhere else
    seen = await client.call_tool(group, notes.mcp_id, "list_contacts", {})
    assert "grace.bridge@example.org" in str(seen.structured or seen.content)
    other = await client.create_group({notes.mcp_id: None})
    unseen = await client.call_tool(other, notes.mcp_id, "list_contacts", {})
    assert "grace.bridge@example.org" not in str(unseen.structured or unseen.content)
