"""The MCP front: one streamable-HTTP endpoint that dispatches by bearer token.

A single small FastMCP ("megamcp") receives every MCP request; its middleware resolves the
request's bearer token to a hosted session and answers `tools/list` and `tools/call` from that
session's own server instance (one FastMCP per loaded module; never one mounted tree). An ASGI
guard in front refuses requests without a valid token before the MCP layer sees them.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from fastmcp import FastMCP
from fastmcp.server.dependencies import get_http_request
from fastmcp.server.middleware import Middleware
from fastmcp.tools.base import Tool, ToolResult
from starlette.types import ASGIApp, Receive, Scope, Send

from weft_megamcp._session import HostedSession
from weft_megamcp.exceptions import AuthError
from weft_megamcp.groups import GroupManager


def bearer(headers: Any) -> str | None:
    value = headers.get("authorization") if headers is not None else None
    if not value:
        return None
    scheme, _, token = value.partition(" ")
    return token.strip() if scheme.lower() == "bearer" and token.strip() else None


class SessionDispatch(Middleware):
    """Answers tools/list and tools/call of the front server from the caller's session."""

    def __init__(self, manager: GroupManager) -> None:
        self.manager = manager

    def _session(self) -> HostedSession:
        return self.manager.authenticate(bearer(get_http_request().headers))

    async def on_list_tools(self, context: Any, call_next: Any) -> Sequence[Tool]:
        return await self.manager.list_tools(self._session())

    async def on_call_tool(self, context: Any, call_next: Any) -> ToolResult:
        session = self._session()
        return await self.manager.call(session, context.message.name, context.message.arguments)


class TokenGuard:
    """ASGI guard: 401 for a missing, unknown, expired or revoked token; else pass through."""

    def __init__(self, app: ASGIApp, manager: GroupManager) -> None:
        self.app = app
        self.manager = manager

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {
            k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])
        }
        try:
            self.manager.authenticate(bearer(headers))
        except AuthError as exc:
            body = json.dumps({"error": "unauthorized", "detail": str(exc)}).encode()
            await send(
                {
                    "type": "http.response.start",
                    "status": 401,
                    "headers": [
                        (b"content-type", b"application/json"),
                        (b"www-authenticate", b'Bearer error="invalid_token"'),
                        (b"content-length", str(len(body)).encode()),
                    ],
                }
            )
            await send({"type": "http.response.body", "body": body})
            return
        await self.app(scope, receive, send)


def build_front(manager: GroupManager) -> FastMCP:
    front = FastMCP("megamcp", instructions="MegaMCP session endpoint: the tools of your session.")
    front.add_middleware(SessionDispatch(manager))
    return front
