"""Forwarding HTTP requests between the master and its workers at the ASGI level."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from starlette.types import Receive, Scope, Send

from weft_megamcp.exceptions import MegaMCPRuntimeError

if TYPE_CHECKING:
    import aiohttp

HOP_HEADERS = {"host", "content-length", "connection", "transfer-encoding", "keep-alive"}

ROUTED_HEADER = "x-megamcp-routed"  # set by the master: the worker must not send it back


class ForwardError(MegaMCPRuntimeError):
    """The other process is gone or hung up: aiohttp's ClientError, raised again as this so that
    catching it does not import aiohttp (a worker forwards only the rare request whose group
    moved away, and aiohttp is ~8 MiB in every worker that imports it)."""


# What a forward raises when the other process is gone, hung up or too slow: the caller answers
# 502 (the supervisor replaces a dead worker).
FORWARD_ERRORS: tuple[type[BaseException], ...] = (ForwardError, TimeoutError)


def failure_name(exc: BaseException) -> str:
    """The name of what went wrong in a forward, for a 502's detail."""
    cause = exc.__cause__ if isinstance(exc, ForwardError) and exc.__cause__ else exc
    return type(cause).__name__


async def read_body(receive: Receive) -> bytes:
    chunks = []
    while True:
        msg = await receive()
        chunks.append(msg.get("body", b""))
        if not msg.get("more_body"):
            return b"".join(chunks)


@dataclass(frozen=True)
class Forwarded:
    """The other process's whole response."""

    status_code: int
    headers: list[tuple[str, str]]
    content: bytes

    def json(self) -> Any:
        return json.loads(self.content)


class Forwarder:
    """Forwards requests to another process of the host over keep-alive connections.

    aiohttp rather than httpx here: httpcore's pool checks every pooled connection (an expiry
    test with a getpeername() each) on every request, which was half of the master's CPU with
    1,000 lifecycles at once (py-spy, session 26); aiohttp keeps a host's idle connections in a
    queue. The session is made on first use, inside the serving event loop, and aiohttp is
    imported then too. Responses are relayed as they came (no decompression)."""

    def __init__(self, timeout_s: float | None) -> None:
        self.timeout_s = timeout_s
        self._session: aiohttp.ClientSession | None = None

    def _client(self) -> aiohttp.ClientSession:
        import aiohttp

        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=0),  # a burst queues at the worker
                timeout=aiohttp.ClientTimeout(total=self.timeout_s, sock_connect=10),
                auto_decompress=False,
                skip_auto_headers=("User-Agent", "Accept", "Accept-Encoding", "Content-Type"),
            )
        return self._session

    async def forward(self, base: str, scope: Scope, body: bytes, *, routed: bool) -> Forwarded:
        headers = [
            (k.decode("latin-1"), v.decode("latin-1"))
            for k, v in scope.get("headers", [])
            if k.decode("latin-1").lower() not in HOP_HEADERS
        ]
        if routed:
            headers.append((ROUTED_HEADER, "1"))
        qs = scope.get("query_string", b"").decode("latin-1")  # ASGI keeps it percent-encoded
        path = quote(scope["path"], safe="/:@!$&'()*+,;=-._~")  # ASGI's path is decoded
        target = base + path + (f"?{qs}" if qs else "")
        client = self._client()
        import aiohttp  # loaded by _client: a dict lookup
        from yarl import URL

        try:
            async with client.request(
                scope["method"], URL(target, encoded=True), headers=headers, data=body
            ) as resp:
                content = await resp.read()
                return Forwarded(resp.status, list(resp.headers.items()), content)
        except aiohttp.ClientError as exc:
            raise ForwardError(f"{type(exc).__name__}: {exc}") from exc

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None


async def relay(send: Send, resp: Forwarded) -> None:
    headers = [(k.encode(), v.encode()) for k, v in resp.headers if k.lower() not in HOP_HEADERS]
    headers.append((b"content-length", str(len(resp.content)).encode()))
    await send({"type": "http.response.start", "status": resp.status_code, "headers": headers})
    await send({"type": "http.response.body", "body": resp.content})


async def send_json(send: Send, status: int, data: Any) -> None:
    body = json.dumps(data).encode()
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
