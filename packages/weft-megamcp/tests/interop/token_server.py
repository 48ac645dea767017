"""A plain fastmcp server over streamable HTTP on 127.0.0.1 behind a bearer-token check.

usage: python token_server.py TOKEN [PORT]   (prints "PORT <n>" on stdout once listening)

Used by the stdio-bridge and legacy-interop tests as a stand-in upstream that is not MegaMCP, so
those tests pin the protocol behaviour of the current stack itself.
"""

from __future__ import annotations

import socket
import sys

import uvicorn
from fastmcp import FastMCP
from starlette.types import ASGIApp, Receive, Scope, Send


def make_server() -> FastMCP:
    mcp = FastMCP("token-demo")
    notes: list[str] = []  # one process per test: state across calls is the point here

    @mcp.tool
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @mcp.tool
    def remember(text: str) -> dict:
        """Store a note and return how many are stored."""
        notes.append(text)
        return {"count": len(notes), "last": text}

    @mcp.tool
    def fail(reason: str) -> str:
        """Always fails with the given reason."""
        raise ValueError(reason)

    return mcp


class BearerGuard:
    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self.expected = f"Bearer {token}".encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            scope["type"] == "http"
            and dict(scope["headers"]).get(b"authorization") != self.expected
        ):
            await send(
                {
                    "type": "http.response.start",
                    "status": 401,
                    "headers": [
                        (b"content-type", b"application/json"),
                        (b"www-authenticate", b"Bearer"),
                    ],
                }
            )
            await send({"type": "http.response.body", "body": b'{"error":"invalid_token"}'})
            return
        await self.app(scope, receive, send)


def main(token: str, port: int = 0) -> None:
    app = make_server().http_app(path="/mcp")
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    sock.listen(128)
    print(f"PORT {sock.getsockname()[1]}", flush=True)
    config = uvicorn.Config(BearerGuard(app, token), log_level="warning", lifespan="on")
    uvicorn.Server(config).run(sockets=[sock])


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 0)
