"""Request guards in front of every MegaMCP HTTP app (single process, worker and master).

`guard_app(app, settings)` answers, before any routing or token lookup:

- DNS rebinding (fastmcp's `HostOriginGuardMiddleware`, strict mode): a `Host` header naming
  a host that is not allowed gets 421, an `Origin` from a page of another host gets 403. A
  browser page on an attacker's domain that resolves to 127.0.0.1 sends its own domain in
  both, so the host is reachable only by the names the operator allowed: localhost,
  127.0.0.1, ::1 and the bound address by default, plus `allowed_hosts` (`*`: any).
- Ambiguous credentials (`CredentialGuard`): more than one `Authorization` header, or one
  that is not ASCII, gets 400, so the guard, the dispatcher and the master can never read
  different tokens out of one request.
- Per-session URLs: `/s/<token>/mcp` is the session's MCP endpoint for clients that cannot
  send a bearer header (the token travels in the path; it is rewritten into an
  `Authorization` header here, and any header the client sent is dropped).
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from fastmcp.server.http import HostOriginGuardMiddleware
from starlette.types import ASGIApp, Receive, Scope, Send

__all__ = ["SESSION_PATH_PREFIX", "CredentialGuard", "guard_app", "path_token"]

SESSION_PATH_PREFIX = "/s/"


def path_token(path: str) -> str | None:
    """The token of a per-session URL path (`/s/<token>/mcp`), else None."""
    if not path.startswith(SESSION_PATH_PREFIX):
        return None
    token = path[len(SESSION_PATH_PREFIX) :].partition("/")[0]
    return token or None


async def _refuse(send: Send, status: int, error: str, detail: str) -> None:
    body = json.dumps({"error": error, "detail": detail}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


class CredentialGuard:
    """ASGI wrapper: at most one ASCII `Authorization` header; `/s/<token>/mcp` rewritten to
    `/mcp` with that token as the bearer."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        raw: list[tuple[bytes, bytes]] = list(scope.get("headers", []))
        auth = [v for k, v in raw if k.lower() == b"authorization"]
        if len(auth) > 1:
            await _refuse(send, 400, "bad_request", "more than one Authorization header")
            return
        if auth and not auth[0].isascii():
            await _refuse(send, 400, "bad_request", "the Authorization header is not ASCII")
            return
        path: str = scope.get("path", "")
        if path.startswith(SESSION_PATH_PREFIX):
            token = path_token(path) or ""
            rest = "/" + path[len(SESSION_PATH_PREFIX) + len(token) :].lstrip("/")
            if not token.isascii() or not token or not rest.startswith("/mcp"):
                await _refuse(send, 404, "not_found", "session URLs have the form /s/<token>/mcp")
                return
            headers = [(k, v) for k, v in raw if k.lower() != b"authorization"]
            headers.append((b"authorization", f"Bearer {token}".encode()))
            scope = {**scope, "path": rest, "raw_path": rest.encode(), "headers": headers}
        await self.app(scope, receive, send)


def guard_app(app: ASGIApp, allowed_hosts: Sequence[str] = ()) -> ASGIApp:
    """`app` behind the DNS-rebinding check and the credential guard (see the module doc)."""
    return HostOriginGuardMiddleware(
        CredentialGuard(app), allowed_hosts=list(allowed_hosts), mode="strict"
    )
