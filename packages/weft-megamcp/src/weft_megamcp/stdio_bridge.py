"""stdio bridge: one MegaMCP session, spoken over stdio (`weft-megamcp stdio --url URL --token T`).

Some agent harnesses only launch MCP servers as subprocesses speaking stdio. The bridge is such a
subprocess: a fastmcp proxy whose backend is a fastmcp Client on the session's streamable-HTTP
URL carrying the session's bearer token. Every stdio request (tools/list, tools/call, ...) is
forwarded to that one session; results and isError results come back unchanged. The bridge opens
the backend connection before serving, so a wrong URL or token fails at start with one clear line
instead of on the first tool call. A host that is not reachable *yet* (refused connection, timeout,
dropped connection: it is starting, or too loaded to answer) is retried until `connect_within_s`;
an answer that says no (bad token, unknown session) is final at once.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlparse

from fastmcp import Client, FastMCP
from fastmcp.client.transports import StreamableHttpTransport
from fastmcp.server import create_proxy
from mcp.shared.exceptions import MCPError
from mcp_types import CONNECTION_CLOSED, REQUEST_TIMEOUT

from weft_megamcp.exceptions import MegaMCPRuntimeError, MegaMCPUserError

__all__ = ["TOKEN_ENV", "BridgeError", "build_bridge", "main_stdio", "run_bridge"]

TOKEN_ENV = "WEFT_MEGAMCP_SESSION_TOKEN"
_log = logging.getLogger(__name__)


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


def _chain(exc: BaseException) -> Iterator[BaseException]:
    """`exc`, its causes and contexts, and the members of exception groups among them."""
    seen: set[int] = set()
    todo = [exc]
    while todo:
        e = todo.pop()
        if id(e) in seen:
            continue
        seen.add(id(e))
        yield e
        todo.extend(x for x in (e.__cause__, e.__context__) if x is not None)
        todo.extend(getattr(e, "exceptions", ()))


def _not_yet(exc: BaseException) -> bool:
    """True when the failure says the host could not be reached, not that it refused us."""
    for e in _chain(exc):
        if isinstance(e, MCPError) and e.code not in (CONNECTION_CLOSED, REQUEST_TIMEOUT):
            return False  # the host answered (401, unknown session, ...): retrying cannot help
    return any(
        isinstance(e, OSError | TimeoutError | MCPError) or _is_transport_error(e)
        for e in _chain(exc)
    )


def _is_transport_error(exc: BaseException) -> bool:
    # The MCP SDK's HTTP transport is httpx or its fork httpx2 (per SDK version): match either's
    # TransportError (connect/read/write errors, timeouts) without importing a private dependency.
    return any(
        c.__name__ == "TransportError" and c.__module__.split(".")[0] in ("httpx", "httpx2")
        for c in type(exc).__mro__
    )


async def _connect(
    url: str, token: str, *, timeout_s: float, connect_within_s: float
) -> Client[Any]:
    deadline = time.monotonic() + connect_within_s
    pause = 0.25
    while True:
        client = backend_client(url, token, timeout_s=timeout_s)
        try:
            await client.__aenter__()  # type: ignore[no-untyped-call]
            return client
        except Exception as exc:
            # httpx-level detail (401, connection refused) is in the message; never echo the token.
            why = f"{exc.__class__.__name__}: {str(exc).replace(token, '***')[:300]}"
            if not _not_yet(exc) or time.monotonic() + pause > deadline:
                raise MegaMCPRuntimeError(
                    f"cannot reach the MegaMCP session at {url}: {why}"
                ) from None
            _log.warning("MegaMCP session at %s not reachable yet (%s); retrying", url, why)
        await asyncio.sleep(pause)
        pause = min(pause * 2, 4.0)


async def run_bridge(
    url: str, token: str | None, *, timeout_s: float = 120.0, connect_within_s: float = 60.0
) -> None:
    """Serve the session on this process's stdin/stdout until stdin closes."""
    token = _check(url, token)
    client = await _connect(url, token, timeout_s=timeout_s, connect_within_s=connect_within_s)
    try:
        # One session per bridge, so reusing the connection is safe and saves a connect per call.
        await build_bridge(client).run_stdio_async(show_banner=False, log_level="WARNING")
    finally:
        await client.__aexit__(None, None, None)  # type: ignore[no-untyped-call]


def main_stdio(url: str, token: str | None, connect_within_s: float = 60.0) -> int:
    """Entry point of `weft-megamcp stdio`; MegaMCP errors propagate to the CLI's handler."""
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING)  # stdout is the protocol
    try:
        asyncio.run(run_bridge(url, token, connect_within_s=connect_within_s))
    except KeyboardInterrupt:
        return 130
    return 0


def _main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m weft_megamcp.stdio_bridge")
    p.add_argument("--url", required=True, help="the session's MCP URL (…/mcp)")
    p.add_argument("--token", help=f"the session's bearer token (default ${TOKEN_ENV})")
    p.add_argument(
        "--connect-within",
        type=float,
        default=60.0,
        metavar="SECONDS",
        help="keep retrying a host that is not reachable yet this long (default 60)",
    )
    args = p.parse_args(argv)
    try:
        return main_stdio(args.url, args.token, args.connect_within)
    except (MegaMCPUserError, MegaMCPRuntimeError) as exc:
        print(f"weft-megamcp stdio: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(_main())
