"""The MCP front: one streamable-HTTP endpoint that dispatches by bearer token.

A single small FastMCP ("megamcp") receives every MCP request; its middleware resolves the
request's bearer token to a hosted session and answers `tools/list` and `tools/call` from that
session's own server instance (one FastMCP per loaded module; never one mounted tree). An ASGI
guard in front refuses requests without a valid token before the MCP layer sees them.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from contextvars import ContextVar
from typing import Any

from fastmcp import FastMCP
from fastmcp.exceptions import ToolError
from fastmcp.server.dependencies import get_http_request
from fastmcp.server.middleware import Middleware
from fastmcp.tools.base import Tool, ToolResult
from mcp.types import Implementation, InitializeResult
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


# The identity of the session a request belongs to, set by TokenGuard for the request's task.
_IDENTITY: ContextVar[Implementation | None] = ContextVar("megamcp_identity", default=None)


def session_identity(manager: GroupManager, session: HostedSession) -> Implementation:
    """The serverInfo a session's client sees: its MCP's registered name and version."""
    try:
        name = manager.registry.get(session.mcp_id, session.version).name or session.mcp_id
    except Exception:  # the record gives the nicer name; the id is always right
        name = session.mcp_id
    return Implementation(name=name, version=str(session.version))


def _identify_per_session(server: Any) -> None:
    """Make the front's low-level server report the current session's identity: in the
    initialize result (handshake era) and in the serverInfo `_meta` stamp every 2026-era
    result carries (fastmcp/mcp read both from the server object, fixed at construction)."""
    base = type(server)

    class PerSessionServer(base):  # type: ignore[valid-type,misc]
        @property
        def server_info(self) -> Implementation:
            return _IDENTITY.get() or super().server_info

        @property
        def server_info_stamp(self) -> dict[str, Any]:
            ident = _IDENTITY.get()
            if ident is None:
                return super().server_info_stamp  # type: ignore[no-any-return]
            return ident.model_dump(by_alias=True, mode="json", exclude_none=True)

    PerSessionServer.__name__ = f"PerSession{base.__name__}"
    server.__class__ = PerSessionServer


class SessionDispatch(Middleware):
    """Answers tools/list and tools/call of the front server from the caller's session."""

    def __init__(self, manager: GroupManager) -> None:
        self.manager = manager

    def _session(self) -> HostedSession:
        return self.manager.authenticate(bearer(get_http_request().headers))

    async def on_initialize(self, context: Any, call_next: Any) -> InitializeResult | None:
        """serverInfo names the session's MCP and its registered version, not the front."""
        result: InitializeResult | None = await call_next(context)
        if result is None:
            return None
        info = session_identity(self.manager, self._session())
        return result.model_copy(update={"server_info": info})

    def _agent_error(self, session: HostedSession, exc: Exception) -> ToolError:
        """What the agent sees of a failure outside the tool body (reloading an evicted group
        from a missing or corrupt checkpoint, a runtime that cannot start): one sanitized line,
        never the data dir or a store path."""
        text = str(exc) if isinstance(exc, ToolError) else f"{type(exc).__name__}: {exc}"
        return ToolError(self.manager.sanitizer.text(text, workspace=str(session.workspace)))

    async def on_list_tools(self, context: Any, call_next: Any) -> Sequence[Tool]:
        session = self._session()
        try:
            return await self.manager.list_tools(session)
        except Exception as exc:
            raise self._agent_error(session, exc) from None

    async def on_call_tool(self, context: Any, call_next: Any) -> ToolResult:
        session = self._session()
        try:
            return await self.manager.call(session, context.message.name, context.message.arguments)
        except Exception as exc:
            raise self._agent_error(session, exc) from None


class TokenGuard:
    """ASGI guard: 401 for a missing, unknown, expired or revoked token; else pass through."""

    def __init__(self, app: ASGIApp, manager: GroupManager) -> None:
        self.app = app
        self.manager = manager
        self._identities: dict[tuple[str, int], Implementation] = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {
            k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])
        }
        try:
            session = self.manager.authenticate(bearer(headers))
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
        key = (session.mcp_id, session.version)
        ident = self._identities.get(key)
        if ident is None:
            ident = self._identities[key] = session_identity(self.manager, session)
        _IDENTITY.set(ident)
        await self.app(scope, receive, send)


def build_front(manager: GroupManager) -> FastMCP:
    front = FastMCP("megamcp", instructions="MegaMCP session endpoint: the tools of your session.")
    front.add_middleware(SessionDispatch(manager))
    _identify_per_session(front._mcp_server)
    return front
