"""Serve an ASGI app with uvicorn inside the running event loop, on a socket bound up front (so
port 0 gives a free port with no race)."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator
from typing import Any


@contextlib.asynccontextmanager
async def serving(app: Any, host: str = "127.0.0.1", port: int = 0) -> AsyncIterator[str]:
    """Yields the root URL (`http://host:port`) while `app` is served."""
    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    server = uvicorn.Server(
        uvicorn.Config(app, log_level="warning", timeout_keep_alive=30, lifespan="off")
    )
    task = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        while not server.started:
            if task.done():
                task.result()
            await asyncio.sleep(0.01)
        yield f"http://{host}:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        with contextlib.suppress(Exception):
            await task
        sock.close()
