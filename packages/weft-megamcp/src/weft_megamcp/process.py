"""The prefork process model: a master that routes, N workers that serve.

The master preloads the common stack in a fork server (multiprocessing "forkserver" with a
preload list), so each worker is forked from a process that already imported fastapi,
sqlmodel/sqlalchemy, pydantic and fastmcp; workers are forked on demand as groups are placed.
A worker is a complete single-process host (HostCore) on its own 127.0.0.1 port; the master
keeps the registry API, places each group on one worker (the one holding the fewest sessions),
and forwards that group's admin traffic by group id. MCP traffic does not pass through the master: a session's URL
names its worker's port directly. The master owns each worker's listening socket and hands it
to the worker process, so a replacement worker serves the same port (connections made while it
starts wait in the socket's backlog) and session URLs stay valid. A session whose group moved
to another worker is forwarded by its old worker to the master, which routes by token. When a
worker dies, the master forks a replacement and has it adopt the dead worker's groups from their
files on local disk (every committed write is already in the session's SQLite file), so sessions
resume with their tokens.

This module is the master's thin ASGI app; `pool` holds the workers (fork, place, replace,
migrate), `worker` is a worker process's entry, `forwarding` moves requests between them.
"""

from __future__ import annotations

import contextlib
import json
import re
import socket
from typing import Any

import httpx
import uvicorn
from starlette.types import Receive, Scope, Send

from weft_megamcp._session import token_sha
from weft_megamcp._stats_merge import merge_reports
from weft_megamcp.app import HostASGI, HostCore
from weft_megamcp.dispatch import bearer
from weft_megamcp.exceptions import MegaMCPUserError
from weft_megamcp.forwarding import (
    FORWARD_ERRORS,
    Forwarded,
    failure_name,
    read_body,
    relay,
    send_json,
)
from weft_megamcp.guards import guard_app
from weft_megamcp.health import NoPlacementError
from weft_megamcp.host import bind_socket, url_of, uvicorn_options
from weft_megamcp.metrics import MetricsReport, render_prometheus
from weft_megamcp.pool import Worker, WorkerPool
from weft_megamcp.settings import MegaMCPSettings
from weft_megamcp.tuning import tune_serving_process

_GROUP_PATH = re.compile(r"^/admin/groups/(grp_[0-9a-f]+)(/.*)?$")


class Master:
    """The master's ASGI app: admin and registry routes, group traffic forwarded to the worker
    the pool placed the group on, MCP traffic of moved sessions routed by token."""

    def __init__(self, settings: MegaMCPSettings, url: str) -> None:
        self.settings = settings
        self.url = url
        self.core = HostCore(settings.model_copy(update={"workers": 0}))  # registry side only
        self.admin_token = self.core.admin_token
        self.registry_app = HostASGI(self.core).admin
        self.pool = WorkerPool(settings, url, self.core)
        self.max_workers = self.pool.max_workers

    async def start(self) -> None:
        await self.core.recovery.reap()  # finish shutdowns a previous run left half done
        if self.core.registry.probes is not None:
            # registrations follow a host's start (a composer registers its MCPs first)
            await self.core.registry.probes.warm()
        await self.pool.start()

    async def stop(self) -> None:
        await self.pool.stop()
        await self.core.stop()

    # ---- ASGI ---------------------------------------------------------------------------------

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            while True:
                msg = await receive()
                if msg["type"] == "lifespan.startup":
                    try:
                        await self.start()
                    except Exception as exc:
                        await send({"type": "lifespan.startup.failed", "message": str(exc)})
                        return
                    await send({"type": "lifespan.startup.complete"})
                elif msg["type"] == "lifespan.shutdown":
                    await self.stop()
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        path: str = scope.get("path", "")
        if (
            path.startswith("/admin/workers")
            or path in ("/admin/groups", "/admin/runs")
            or _GROUP_PATH.match(path)
        ):
            if not self._is_admin(scope):
                await self._json(send, 401, {"detail": "admin token missing or wrong"})
                return
            if path == "/admin/workers":
                await self._json(send, 200, self.pool.workers_info())
            elif path.startswith("/admin/workers/") and path.endswith("/drain"):
                try:
                    await self._json(send, 200, await self.pool.drain(int(path.split("/")[3])))
                except (ValueError, MegaMCPUserError) as exc:
                    await self._json(send, 404, {"error": "NotFoundError", "detail": str(exc)})
            else:
                await self._group_admin(scope, receive, send, path)
            return
        if path in ("/admin/stats", "/admin/metrics"):
            if not self._is_admin(scope):
                await self._json(send, 401, {"detail": "admin token missing or wrong"})
                return
            await self._stats(send, prometheus=path.endswith("metrics"))
            return
        if path.startswith("/admin") or path == "/health":
            await self.registry_app(scope, receive, send)
            return
        await self._mcp(scope, receive, send)

    def _is_admin(self, scope: Scope) -> bool:
        headers = {
            k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])
        }
        return bearer(headers) == self.admin_token

    async def _stats(self, send: Send, *, prometheus: bool) -> None:
        """Per MCP version and tool statistics of all workers (and worker crashes) in one report."""
        reports = []
        for w in list(self.pool.workers.values()):
            if not w.process.is_alive():
                continue
            with contextlib.suppress(httpx.HTTPError, ValueError):
                data = (
                    await self.pool.http.get(
                        f"{w.url}/admin/stats", headers=self.pool.admin_headers()
                    )
                ).json()
                data.pop("groups", None)
                reports.append(MetricsReport.model_validate(data))
        report = merge_reports(reports, self.pool.crashes)
        if not prometheus:
            await self._json(
                send, 200, {"groups": len(self.pool.group_worker), **report.model_dump(mode="json")}
            )
            return
        gauges = {
            "groups": len(self.pool.group_worker),
            "workers": sum(w.process.is_alive() for w in self.pool.workers.values()),
            "worker_replacements": self.pool.replacements,
            "migrations": self.pool.migrations,
        }
        body = render_prometheus(report, gauges=gauges).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [
                    (b"content-type", b"text/plain; version=0.0.4"),
                    (b"content-length", str(len(body)).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})

    async def _json(self, send: Send, status: int, data: Any) -> None:
        await send_json(send, status, data)

    async def _body(self, receive: Receive) -> bytes:
        return await read_body(receive)

    async def _forward(self, worker: Worker, scope: Scope, body: bytes) -> Forwarded:
        return await self.pool.forwarder.forward(worker.url, scope, body, routed=True)

    async def _relay(self, send: Send, resp: Forwarded) -> None:
        await relay(send, resp)

    async def _group_admin(self, scope: Scope, receive: Receive, send: Send, path: str) -> None:
        body = await self._body(receive)
        if path == "/admin/groups" or path == "/admin/runs":
            if scope["method"] == "POST":
                try:
                    data = json.loads(body or b"{}")
                    create = data.get("create", {}) if path == "/admin/runs" else data
                    requested = create.get("mcps", {})
                    keys = [k for k, shared in map(self.pool.mcp_key, requested) if shared]
                except (ValueError, AttributeError, TypeError):
                    detail = "body must be a JSON CreateGroupRequest"
                    await self._json(send, 400, {"error": "MegaMCPUserError", "detail": detail})
                    return
                except MegaMCPUserError as exc:
                    await self._json(send, 404, {"error": type(exc).__name__, "detail": str(exc)})
                    return
                try:
                    async with self.pool.placement(keys) as worker:
                        try:
                            async with worker.admin_slots:
                                resp = await self._forward(worker, scope, body)
                        except FORWARD_ERRORS as exc:
                            detail = f"worker {worker.index} failed: {failure_name(exc)}"
                            error = {"error": "MegaMCPRuntimeError", "detail": detail}
                            await self._json(send, 502, error)
                            return
                        if resp.status_code == 200 and path == "/admin/groups":
                            self.pool.remember(worker, [resp.json()])
                        elif resp.status_code == 200:  # a run: its group lives on unless closed
                            run = resp.json()
                            if not run.get("closed") and run.get("handle"):
                                self.pool.remember(worker, [run["handle"]])
                except NoPlacementError as exc:
                    await self._json(send, 503, {"error": type(exc).__name__, "detail": str(exc)})
                    return
                await self._relay(send, resp)
            else:
                out: list[Any] = []
                for w in list(self.pool.workers.values()):
                    with contextlib.suppress(httpx.HTTPError):
                        out.extend(
                            (
                                await self.pool.http.get(
                                    f"{w.url}/admin/groups", headers=self.pool.admin_headers()
                                )
                            ).json()
                        )
                await self._json(send, 200, out)
            return
        match = _GROUP_PATH.match(path)
        assert match is not None
        gid, action = match.group(1), match.group(2) or ""
        owner = await self.pool.worker_for_group(gid)
        if owner is None:
            await self._json(
                send, 404, {"error": "NotFoundError", "detail": f"group {gid!r} does not exist"}
            )
            return
        try:
            async with owner.admin_slots:
                resp = await self._forward(owner, scope, body)
        except FORWARD_ERRORS as exc:
            await self._json(
                send,
                502,
                {"error": "MegaMCPRuntimeError", "detail": f"worker failed: {failure_name(exc)}"},
            )
            return
        if resp.status_code == 200 and action == "/fork":
            self.pool.remember(owner, resp.json())
        closed_by_batch = (
            action == "/batch" and resp.status_code == 200 and resp.json().get("closed")
        )
        if resp.status_code == 200 and (action == "/close" or closed_by_batch):
            self.pool.forget(owner, gid)
            self.pool.group_worker.pop(gid, None)
            self.pool.group_sessions.pop(gid, None)
        await self._relay(send, resp)

    async def _mcp(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        headers = {
            k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])
        }
        token = bearer(headers)
        gid = self.pool.token_group.get(token_sha(token)) if token else None
        body = await self._body(receive)
        worker = await self.pool.worker_for_group(gid) if gid else None
        if worker is None:
            # The worker refuses unknown tokens itself; any live worker gives the same 401.
            live = [w for w in self.pool.workers.values() if w.process.is_alive()]
            if not live:
                await self._json(send, 503, {"detail": "no worker available"})
                return
            worker = live[0]
        try:
            resp = await self._forward(worker, scope, body)
        except FORWARD_ERRORS as exc:
            # The worker died mid-call: the caller sees a server error and may retry; the
            # supervisor is already replacing the worker.
            await self._json(
                send, 502, {"detail": f"worker failed during the request: {failure_name(exc)}"}
            )
            return
        await self._relay(send, resp)


def serve_master(settings: MegaMCPSettings, sock: socket.socket | None = None) -> int:
    import sys

    sock = sock or bind_socket(settings.host, settings.port)
    url = url_of(settings.host, sock.getsockname()[1])
    master = Master(settings, url)
    if settings.admin_token is None:
        print(f"admin token: {master.admin_token}", file=sys.stderr)
    print(
        f"MegaMCP master on {url} with up to {master.max_workers} workers (data in {master.core.data_dir})",
        file=sys.stderr,
    )
    app = guard_app(master, settings.allowed_hosts)
    server = uvicorn.Server(uvicorn.Config(app, **uvicorn_options(settings)))
    tune_serving_process(settings)
    server.run(sockets=[sock])
    return 0
