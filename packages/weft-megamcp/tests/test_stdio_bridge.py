"""The stdio bridge: a stdio MCP client subprocess-launches the bridge, which forwards to one
session over streamable HTTP with its bearer token."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastmcp import Client
from fastmcp.client.transports import StdioTransport
from mcp.shared.exceptions import MCPError
from mcp_types import CONNECTION_CLOSED, REQUEST_TIMEOUT

from weft_megamcp.client import MegaMCPClient
from weft_megamcp.models import GroupHandle
from weft_megamcp.registry import MCPRecord
from weft_megamcp.stdio_bridge import BridgeError, _check, _not_yet

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


def bridge(
    url: str, token: str, *, via_cli: bool = False, log_file: Path | None = None
) -> StdioTransport:
    args = ["-m", "weft_megamcp.cli", "stdio"] if via_cli else ["-m", "weft_megamcp.stdio_bridge"]
    return StdioTransport(
        sys.executable,
        [*args, "--url", url, "--token", token],
        env=dict(os.environ),
        log_file=log_file,
    )


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


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
    assert "retrying" not in proc.stderr  # the host said no: waiting cannot change that


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
async def test_bridge_retries_a_host_that_is_not_up_yet(tmp_path: Path) -> None:
    # A harness may launch the bridge before (or while) the host starts: the bridge waits for it.
    port = _free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    log = tmp_path / "bridge.log"
    server: subprocess.Popen[str] | None = None
    transport = bridge(url, TOKEN, log_file=log)

    async def start_host_later() -> None:
        nonlocal server
        await asyncio.sleep(1.5)
        server = subprocess.Popen(
            [sys.executable, str(TOKEN_SERVER), TOKEN, str(port)], stdout=subprocess.PIPE, text=True
        )

    try:
        starter = asyncio.create_task(start_host_later())
        async with Client(transport) as stdio:
            assert (await stdio.call_tool("add", {"a": 1, "b": 2})).data == 3
        await starter
        assert "not reachable yet" in log.read_text()
    finally:
        if server is not None:
            server.terminate()
            server.wait(timeout=30)


def test_only_an_unreachable_host_is_retried() -> None:
    refused = RuntimeError("Client failed to connect: All connection attempts failed")
    refused.__cause__ = ConnectionRefusedError(111, "Connection refused")
    assert _not_yet(refused)
    assert _not_yet(ExceptionGroup("g", [MCPError(CONNECTION_CLOSED, "Connection closed")]))
    assert _not_yet(MCPError(REQUEST_TIMEOUT, "timed out"))
    # the host answered: a bad token (-32603 from a 401) or an unknown session (-32601 from a 404)
    assert not _not_yet(MCPError(-32603, "Server returned an error response"))
    closed_after_refusal = MCPError(CONNECTION_CLOSED, "Connection closed")
    closed_after_refusal.__context__ = MCPError(-32601, "Not Found")
    assert not _not_yet(closed_after_refusal)
    assert not _not_yet(ValueError("a bug is not a reason to wait"))


@pytest.mark.integration
async def test_bridge_to_a_megamcp_session(
    client: MegaMCPClient, notes: MCPRecord, group: GroupHandle, tmp_path: Path
) -> None:
    info = group.session(notes.mcp_id)
    log = tmp_path / "bridge.log"
    try:
        async with Client(bridge(info.url, info.token, via_cli=True, log_file=log)) as stdio:
            assert "add_contact" in {t.name for t in await stdio.list_tools()}
            added = await stdio.call_tool(
                "add_contact", {"name": "Grace", "email": "grace.bridge@example.org"}
            )
            assert added.structured_content is not None
            bad = await stdio.call_tool(
                "add_contact", {"name": "B", "email": "nope"}, raise_on_error=False
            )
            assert bad.is_error
    except Exception as exc:
        # the bridge's own stderr says why it went away; without it a CI failure is opaque
        text = log.read_text() if log.exists() else "(no bridge output)"
        raise AssertionError(f"bridge failed: {exc!r}; its stderr:\n{text[-4000:]}") from exc
    # the write landed in this group's session and nowhere else
    seen = await client.call_tool(group, notes.mcp_id, "list_contacts", {})
    assert "grace.bridge@example.org" in str(seen.structured or seen.content)
    other = await client.create_group({notes.mcp_id: None})
    unseen = await client.call_tool(other, notes.mcp_id, "list_contacts", {})
    assert "grace.bridge@example.org" not in str(unseen.structured or unseen.content)
