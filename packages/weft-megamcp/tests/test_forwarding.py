"""The master's forwarder against a real HTTP server on 127.0.0.1: the request arrives as it was
sent (method, escaped path, raw query, body, headers less the hop-by-hop ones), the response is
relayed whole, and a process that is gone is a FORWARD_ERRORS exception, not a hang."""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import AsyncIterator
from typing import Any

import pytest
import uvicorn
from starlette.types import Receive, Scope, Send

from weft_megamcp.forwarding import (
    FORWARD_ERRORS,
    ROUTED_HEADER,
    Forwarder,
    failure_name,
    read_body,
    relay,
)
from weft_megamcp.host import bind_socket


async def _echo(scope: Scope, receive: Receive, send: Send) -> None:
    if scope["type"] != "http":
        return
    body = await read_body(receive)
    out = json.dumps(
        {
            "method": scope["method"],
            "path": scope["path"],
            "query": scope["query_string"].decode(),
            "body": body.decode(),
            "headers": sorted(k.decode() for k, _ in scope["headers"]),
            "routed": dict(scope["headers"]).get(ROUTED_HEADER.encode(), b"").decode(),
        }
    ).encode()
    await send(
        {
            "type": "http.response.start",
            "status": 207,
            "headers": [(b"content-type", b"application/json"), (b"x-echo", b"1")],
        }
    )
    await send({"type": "http.response.body", "body": out})


@pytest.fixture
async def echo_url() -> AsyncIterator[str]:
    sock = bind_socket("127.0.0.1", 0)
    server = uvicorn.Server(uvicorn.Config(_echo, log_level="warning", lifespan="off"))
    task = asyncio.create_task(server.serve(sockets=[sock]))
    while not server.started:
        await asyncio.sleep(0.01)
    yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    server.should_exit = True
    await task


def _scope(path: str, query: bytes = b"", **headers: str) -> dict[str, Any]:
    return {
        "type": "http",
        "method": "POST",
        "path": path,
        "query_string": query,
        "headers": [(k.replace("_", "-").encode(), v.encode()) for k, v in headers.items()],
    }


async def test_a_request_arrives_as_sent_and_its_response_is_relayed_whole(
    echo_url: str,
) -> None:
    forwarder = Forwarder(10)
    try:
        scope = _scope(
            "/s/tok en/mcp", b"a=1&b=%2F", host="master:1", connection="keep-alive", x_mine="v"
        )
        resp = await forwarder.forward(echo_url, scope, b'{"x": 1}', routed=True)
        again = await forwarder.forward(echo_url, scope, b"", routed=False)  # a kept connection
    finally:
        await forwarder.close()
    seen = resp.json()
    assert resp.status_code == 207
    assert seen["method"] == "POST" and seen["path"] == "/s/tok en/mcp"
    assert seen["query"] == "a=1&b=%2F" and seen["body"] == '{"x": 1}'
    assert "x-mine" in seen["headers"] and seen["routed"] == "1"
    assert again.json()["routed"] == ""
    sent: list[dict[str, Any]] = []

    async def send(message: Any) -> None:
        sent.append(message)

    await relay(send, resp)
    headers = dict(sent[0]["headers"])
    assert sent[0]["status"] == 207 and headers[b"x-echo"] == b"1"
    assert headers[b"content-length"] == str(len(resp.content)).encode()
    assert sent[1]["body"] == resp.content


async def test_a_gone_process_is_a_forward_error() -> None:
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    forwarder = Forwarder(5)
    try:
        with pytest.raises(FORWARD_ERRORS) as caught:
            await forwarder.forward(f"http://127.0.0.1:{port}", _scope("/x"), b"", routed=True)
        # A 502's detail names aiohttp's error, not the wrapper it is raised again as.
        assert failure_name(caught.value) == "ClientConnectorError"
    finally:
        await forwarder.close()


async def test_a_workers_fallback_closes_its_connections_at_shutdown() -> None:
    from weft_megamcp.worker import MasterFallback

    async def host(scope: Scope, receive: Receive, send: Send) -> None:  # HostASGI's lifespan
        assert scope["type"] == "lifespan"
        while True:
            message = await receive()
            kind = message["type"].split(".")[1]
            await send({"type": f"lifespan.{kind}.complete"})
            if kind == "shutdown":
                return

    fallback = MasterFallback(host, "http://127.0.0.1:9")  # type: ignore[arg-type]
    session = fallback._forwarder._client()  # as the first forwarded request would make it
    messages = iter([{"type": "lifespan.startup"}, {"type": "lifespan.shutdown"}])
    sent: list[str] = []

    async def receive() -> Any:
        return next(messages)

    async def send(message: Any) -> None:
        sent.append(message["type"])

    await fallback({"type": "lifespan"}, receive, send)
    assert session.closed
    assert sent == ["lifespan.startup.complete", "lifespan.shutdown.complete"]
