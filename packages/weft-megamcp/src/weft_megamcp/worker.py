"""A forked worker process: a complete single-process host on the socket the master bound for
it, which hands sessions whose group moved to another worker back to the master."""

from __future__ import annotations

import contextlib
import gc
import multiprocessing
import multiprocessing.connection
import os
import signal
import socket
import threading
import time

import uvicorn
from starlette.types import Message, Receive, Scope, Send

from weft_megamcp.app import HostASGI, HostCore
from weft_megamcp.dispatch import bearer
from weft_megamcp.forwarding import (
    FORWARD_ERRORS,
    ROUTED_HEADER,
    Forwarder,
    failure_name,
    read_body,
    relay,
    send_json,
)
from weft_megamcp.guards import guard_app, path_token
from weft_megamcp.host import url_of, uvicorn_options
from weft_megamcp.settings import MegaMCPSettings
from weft_megamcp.tuning import tune_serving_process


def _exit_with_master(master_pid: int) -> None:
    """A worker that outlives a killed master would be an orphan holding sessions: leave, and
    take the master's fork server (this worker's parent) along."""
    while True:
        time.sleep(1.0)
        try:
            os.kill(master_pid, 0)
        except ProcessLookupError:
            with contextlib.suppress(OSError):
                os.kill(os.getppid(), signal.SIGTERM)
            os._exit(0)


class MasterFallback:
    """Worker-side ASGI wrapper: an MCP request whose token this worker does not know (its
    group moved to another worker) is forwarded to the master, which routes by token. Requests
    the master already routed, revoked tokens and admin traffic are served here as usual."""

    def __init__(self, app: HostASGI, master_url: str) -> None:
        self.app = app
        self.master_url = master_url
        self._forwarder = Forwarder(None)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self.app(scope, self._closing_on_shutdown(receive), send)
            return
        path: str = scope.get("path", "")
        if scope["type"] != "http" or path.startswith("/admin") or path == "/health":
            await self.app(scope, receive, send)
            return
        headers = {
            k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])
        }
        token = bearer(headers) or path_token(path)
        if token is None or ROUTED_HEADER in headers or not self.app.core.manager.moved_away(token):
            await self.app(scope, receive, send)
            return
        body = await read_body(receive)
        try:
            resp = await self._forwarder.forward(self.master_url, scope, body, routed=False)
        except FORWARD_ERRORS as exc:
            await send_json(send, 502, {"detail": f"master unreachable: {failure_name(exc)}"})
            return
        await relay(send, resp)

    def _closing_on_shutdown(self, receive: Receive) -> Receive:
        """The forwarder's connections belong to the serving loop: closed at shutdown, while
        that loop still runs, rather than reported unclosed when the worker exits."""

        async def wrapped() -> Message:
            message = await receive()
            if message["type"] == "lifespan.shutdown":
                await self._forwarder.close()
            return message

        return wrapped


def worker_main(
    settings_json: str,
    master_url: str,
    sock: socket.socket,
    conn: multiprocessing.connection.Connection,
    master_pid: int = 0,
) -> None:
    """Entry of a forked worker: serve the socket the master bound for this worker index."""
    # The template froze what it preloaded; this freezes what unpickling this call allocated,
    # so that `tune_collector`'s collect traverses only what the worker itself creates.
    gc.freeze()
    if master_pid:
        threading.Thread(target=_exit_with_master, args=(master_pid,), daemon=True).start()
    settings = MegaMCPSettings.model_validate_json(settings_json)
    core = HostCore(settings, run_reaper=False)
    core.base_url = url_of(settings.host, sock.getsockname()[1])  # clients come straight here
    conn.send(sock.getsockname()[1])
    conn.close()
    # The guard goes outside the fallback too: a hostile header must be refused before the
    # fallback reads a token from it or forwards it to the master.
    app = guard_app(MasterFallback(HostASGI(core), master_url), settings.allowed_hosts)
    server = uvicorn.Server(uvicorn.Config(app, **uvicorn_options(settings)))
    tune_serving_process(settings)
    server.run(sockets=[sock])
