"""Forwarding HTTP requests between the master and its workers at the ASGI level."""

from __future__ import annotations

import json
from typing import Any

import httpx
from starlette.types import Receive, Scope, Send

HOP_HEADERS = {"host", "content-length", "connection", "transfer-encoding", "keep-alive"}

ROUTED_HEADER = "x-megamcp-routed"  # set by the master: the worker must not send it back


async def read_body(receive: Receive) -> bytes:
    chunks = []
    while True:
        msg = await receive()
        chunks.append(msg.get("body", b""))
        if not msg.get("more_body"):
            return b"".join(chunks)


async def forward(
    http: httpx.AsyncClient, base: str, scope: Scope, body: bytes, *, routed: bool
) -> httpx.Response:
    headers = [
        (k.decode("latin-1"), v.decode("latin-1"))
        for k, v in scope.get("headers", [])
        if k.decode("latin-1").lower() not in HOP_HEADERS
    ]
    if routed:
        headers.append((ROUTED_HEADER, "1"))
    qs = scope.get("query_string", b"").decode()
    url = base + scope["path"] + (f"?{qs}" if qs else "")
    return await http.request(scope["method"], url, headers=headers, content=body)


async def relay(send: Send, resp: httpx.Response) -> None:
    headers = [
        (k.encode(), v.encode())
        for k, v in resp.headers.items()
        if k.lower() not in HOP_HEADERS | {"content-encoding"}
    ]
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
