"""A cheap MCP load generator: raw HTTP/1.1 keep-alive connections on asyncio streams.

A fastmcp/httpx client costs the load generator about as much CPU per call as the server spends
answering it; on a 2-core machine that would measure the client. This one writes each request
as bytes and reads the `Content-Length` body back, so at 1,000 sessions it stays a small share
of a core. It speaks the stateless MCP 2026-07-28 transport (one POST per JSON-RPC request, no
handshake) that both MegaMCP's front and a bare FastMCP `http_app(stateless_http=True,
json_response=True)` accept, and the JSON admin API of MegaMCP.
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

PROTOCOL = "2026-07-28"
_META = {
    "io.modelcontextprotocol/protocolVersion": PROTOCOL,
    "io.modelcontextprotocol/clientInfo": {"name": "weft-bench", "version": "1"},
    "io.modelcontextprotocol/clientCapabilities": {},
}


class HTTPError(RuntimeError):
    pass


class RawConnection:
    """One keep-alive HTTP/1.1 connection; requests on it are sequential (one session)."""

    def __init__(self, url: str) -> None:
        parts = urlsplit(url)
        self.host = parts.hostname or "127.0.0.1"
        self.port = parts.port or 80
        self.path = parts.path or "/"
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None

    async def _open(self) -> None:
        self._reader, self._writer = await asyncio.open_connection(self.host, self.port)

    async def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
            self._writer = None

    async def request(
        self, method: str, path: str, body: Any, headers: dict[str, str]
    ) -> tuple[int, dict[str, str], bytes]:
        payload = b"" if body is None else json.dumps(body).encode()
        head = [f"{method} {path} HTTP/1.1", f"host: {self.host}:{self.port}"]
        head += [f"{k}: {v}" for k, v in headers.items()]
        head += ["content-type: application/json", f"content-length: {len(payload)}", "", ""]
        raw = "\r\n".join(head).encode() + payload
        for attempt in (0, 1):  # a keep-alive connection the server closed is reopened once
            if self._writer is None:
                await self._open()
            assert self._reader is not None and self._writer is not None
            try:
                self._writer.write(raw)
                return await self._read_response(self._reader)
            except (ConnectionError, asyncio.IncompleteReadError):
                await self.close()
                if attempt:
                    raise
        raise AssertionError("unreachable")

    async def _read_response(
        self, reader: asyncio.StreamReader
    ) -> tuple[int, dict[str, str], bytes]:
        head = await reader.readuntil(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split(" ", 2)[1])
        hdrs = {}
        for line in lines[1:]:
            if ":" in line:
                k, _, v = line.partition(":")
                hdrs[k.strip().lower()] = v.strip()
        if "content-length" in hdrs:
            body = await reader.readexactly(int(hdrs["content-length"]))
        elif hdrs.get("transfer-encoding", "").lower() == "chunked":
            chunks = []
            while True:
                size = int((await reader.readuntil(b"\r\n")).strip(), 16)
                chunk = await reader.readexactly(size + 2)
                if size == 0:
                    break
                chunks.append(chunk[:-2])
            body = b"".join(chunks)
        else:
            raise HTTPError(f"response without a length: {lines[0]}")
        if hdrs.get("connection", "").lower() == "close":
            await self.close()
        return status, hdrs, body


class MCPSession:
    """tools/call requests of one session (bearer token) over one RawConnection."""

    def __init__(self, url: str, token: str | None, conn: RawConnection | None = None) -> None:
        self.conn = conn or RawConnection(url)
        self.path = urlsplit(url).path or "/mcp"
        self.token = token
        self._id = 0

    async def call(self, tool: str, arguments: dict[str, Any]) -> bool:
        """One tools/call; True when the result is an error (isError or JSON-RPC error)."""
        self._id += 1
        body = {
            "jsonrpc": "2.0",
            "id": self._id,
            "method": "tools/call",
            "params": {"name": tool, "arguments": arguments, "_meta": _META},
        }
        headers = {
            "accept": "application/json, text/event-stream",
            "mcp-protocol-version": PROTOCOL,
            "mcp-method": "tools/call",
            "mcp-name": tool,
        }
        if self.token:
            headers["authorization"] = f"Bearer {self.token}"
        status, _, raw = await self.conn.request("POST", self.path, body, headers)
        if status != 200:
            raise HTTPError(f"tools/call {tool}: HTTP {status}: {raw[:200]!r}")
        data = json.loads(raw)
        if "error" in data:
            return True
        return bool(data.get("result", {}).get("isError"))

    async def close(self) -> None:
        await self.conn.close()


class AdminAPI:
    """MegaMCP's JSON admin API over one RawConnection (create and close groups)."""

    def __init__(self, url: str, admin_token: str) -> None:
        self.conn = RawConnection(url)
        self.headers = {"authorization": f"Bearer {admin_token}"}

    async def post(self, path: str, body: Any = None) -> Any:
        status, _, raw = await self.conn.request("POST", path, body or {}, self.headers)
        if status != 200:
            raise HTTPError(f"POST {path}: HTTP {status}: {raw[:200]!r}")
        return json.loads(raw)

    async def close(self) -> None:
        await self.conn.close()


@dataclass
class Lifecycle:
    ok: bool = False
    latencies_ms: list[float] = field(default_factory=list)
    errors: int = 0
    failure: str | None = None


async def run_trace(
    session: MCPSession, trace: list[tuple[str, dict[str, Any]]], out: Lifecycle
) -> None:
    for tool, args in trace:
        t0 = time.perf_counter()
        out.errors += await session.call(tool, args)
        out.latencies_ms.append((time.perf_counter() - t0) * 1000)
