"""stdio bridge: one MegaMCP session, spoken over stdio (`weft-megamcp stdio --url URL --token T`).

Some agent harnesses only launch MCP servers as subprocesses speaking stdio. The bridge is such a
subprocess: a fastmcp proxy whose backend is a fastmcp Client on the session's streamable-HTTP
URL carrying the session's bearer token. Every stdio request (tools/list, tools/call, ...) is
forwarded to that one session; results and isError results come back unchanged. The bridge opens
the backend connection before serving, so a wrong URL or token fails at start with one clear line
instead of on the first tool call.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
from typing import Any
from urllib.parse import urlparse

from fastmcp import Client, FastMCP
from fastmcp.client.transports import StreamableHttpTransport
from fastmcp.server import create_proxy

from weft_megamcp.exceptions import MegaMCPRuntimeError, MegaMCPUserError

__all__ = ["TOKEN_ENV", "BridgeError", "build_bridge", "main_stdio", "run_bridge"]

TOKEN_ENV = "WEFT_MEGAMCP_SESSION_TOKEN"


class BridgeError(MegaMCPUserError):
    """The bridge's URL or token is unusable."""


def _check(url: str, token: str | None) -> str:
    parsed = urlparse(url or "")
    if parsed.scheme not in ("http", "https") or not parsed.netloc:
        raise BridgeError(f"--url must be an http(s) URL of a MegaMCP session, got {url!r}")
    token = token or os.environ.get(TOKEN_ENV)
    if not token or any(c.isspace() for c in token):
        raise BridgeError(f"--token (or {TOKEN_ENV}) must be the session's bearer token")
    return token


def backend_client(url: str, token: str, *, timeout_s: float = 120.0) -> Client[Any]:
    return Client(StreamableHttpTransport(url, auth=token), timeout=timeout_s)


def build_bridge(client: Client[Any], name: str = "megamcp-session") -> FastMCP[Any]:
    """A proxy server forwarding every request to `client` (connected or not)."""
    return create_proxy(client, name=name)


async def run_bridge(url: str, token: str | None, *, timeout_s: float = 120.0) -> None:
    """Serve the session on this process's stdin/stdout until stdin closes."""
    token = _check(url, token)
    client = backend_client(url, token, timeout_s=timeout_s)
    try:
        await client.__aenter__()  # type: ignore[no-untyped-call]
    except Exception as exc:
        # httpx-level detail (401, connection refused) is in the message; never echo the token.
        raise MegaMCPRuntimeError(
            f"cannot reach the MegaMCP session at {url}: {exc.__class__.__name__}: "
            f"{str(exc).replace(token, '***')[:300]}"
        ) from None
    try:
        # One session per bridge, so reusing the connection is safe and saves a connect per call.
        await build_bridge(client).run_stdio_async(show_banner=False, log_level="WARNING")
    finally:
        await client.__aexit__(None, None, None)  # type: ignore[no-untyped-call]


def main_stdio(url: str, token: str | None) -> int:
    """Entry point of `weft-megamcp stdio`; MegaMCP errors propagate to the CLI's handler."""
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING)  # stdout is the protocol
    try:
        asyncio.run(run_bridge(url, token))
    except KeyboardInterrupt:
        return 130
    return 0


def _main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m weft_megamcp.stdio_bridge")
    p.add_argument("--url", required=True, help="the session's MCP URL (…/mcp)")
    p.add_argument("--token", help=f"the session's bearer token (default ${TOKEN_ENV})")
    args = p.parse_args(argv)
    try:
        return main_stdio(args.url, args.token)
    except (MegaMCPUserError, MegaMCPRuntimeError) as exc:
        print(f"weft-megamcp stdio: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(_main())
