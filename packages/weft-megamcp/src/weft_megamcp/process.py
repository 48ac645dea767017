"""The prefork process model: a master that routes, N workers that serve.

The master preloads the common stack in a fork server (multiprocessing "forkserver" with a
preload list), so each worker is forked from a process that already imported fastapi,
sqlmodel/sqlalchemy, pydantic and fastmcp; workers are forked on demand as groups are placed.
A worker is a complete single-process host (HostCore) on its own 127.0.0.1 port; the master
keeps the registry API, places each group on one worker, and forwards that group's admin and
MCP traffic by group id / bearer token. When a worker dies, the master forks a replacement and
has it adopt the dead worker's groups from their files on local disk (every committed write is
already in the session's SQLite file), so sessions resume with their tokens.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import multiprocessing
import multiprocessing.connection
import re
import time
from dataclasses import dataclass, field
from typing import Any

import httpx
import uvicorn
from starlette.types import Receive, Scope, Send

from weft_megamcp._session import token_sha
from weft_megamcp.app import HostASGI, HostCore
from weft_megamcp.dispatch import bearer
from weft_megamcp.host import bind_socket, url_of
from weft_megamcp.settings import MegaMCPSettings

log = logging.getLogger("weft_megamcp.process")

PRELOAD = [
    "pydantic",
    "sqlalchemy",
    "sqlmodel",
    "fastapi",
    "starlette",
    "uvicorn",
    "httpx",
    "fastmcp",
    "mcp",
    "weft_core.binding",
    "weft_core.checks",
    "weft_megamcp.app",
]
_GROUP_PATH = re.compile(r"^/admin/groups/(grp_[0-9a-f]+)(/.*)?$")
_HOP_HEADERS = {"host", "content-length", "connection", "transfer-encoding", "keep-alive"}


def _worker_main(
    settings_json: str, master_url: str, conn: multiprocessing.connection.Connection
) -> None:
    """Entry of a forked worker: bind a free port, report it, serve until terminated."""
    settings = MegaMCPSettings.model_validate_json(settings_json)
    core = HostCore(settings)
    core.base_url = master_url  # session URLs point at the master, which routes by token
    sock = bind_socket(settings.host, 0)
    conn.send(sock.getsockname()[1])
    conn.close()
    server = uvicorn.Server(
        uvicorn.Config(HostASGI(core), log_level=settings.log_level, backlog=2048)
    )
    server.run(sockets=[sock])


@dataclass
class Worker:
    index: int
    process: multiprocessing.process.BaseProcess
    url: str
    groups: set[str] = field(default_factory=set)
    healthy: bool = True


class Master:
    """Places groups on workers, forwards their traffic, replaces dead workers."""

    def __init__(self, settings: MegaMCPSettings, url: str) -> None:
        self.settings = settings
        self.url = url
        self.max_workers = max(1, settings.workers)
        self.core = HostCore(settings.model_copy(update={"workers": 0}))  # registry side only
        self.admin_token = self.core.admin_token
        self.registry_app = HostASGI(self.core).admin
        ctx = multiprocessing.get_context("forkserver")
        ctx.set_forkserver_preload(PRELOAD)
        self.ctx = ctx
        self.workers: dict[int, Worker] = {}
        self.group_worker: dict[str, int] = {}
        self.token_group: dict[str, str] = {}
        self.http = httpx.AsyncClient(
            timeout=httpx.Timeout(settings.call_timeout_s + 30, connect=10)
        )
        self._lock = asyncio.Lock()
        self._replacing: dict[int, asyncio.Event] = {}
        self._next_index = 0
        self._supervisor: asyncio.Task[Any] | None = None
        self.replacements = 0

    # ---- workers ------------------------------------------------------------------------------

    def _worker_settings(self) -> str:
        return self.settings.model_copy(
            update={"workers": 0, "admin_token": self.admin_token, "port": 0}
        ).model_dump_json()

    async def _fork_worker(self, index: int) -> Worker:
        parent, child = self.ctx.Pipe(duplex=False)
        proc = self.ctx.Process(
            target=_worker_main,
            args=(self._worker_settings(), self.url, child),
            name=f"megamcp-worker-{index}",
            daemon=True,
        )
        await asyncio.to_thread(proc.start)
        child.close()
        ready = await asyncio.to_thread(parent.poll, 60)
        if not ready:
            proc.kill()
            raise RuntimeError(f"worker {index} did not report its port within 60 s")
        port = parent.recv()
        parent.close()
        worker = Worker(index=index, process=proc, url=url_of(self.settings.host, port))
        deadline = time.monotonic() + 60
        while True:
            with contextlib.suppress(httpx.HTTPError):
                if (await self.http.get(f"{worker.url}/health", timeout=2)).status_code == 200:
                    break
            if time.monotonic() > deadline or not proc.is_alive():
                proc.kill()
                raise RuntimeError(f"worker {index} did not become healthy")
            await asyncio.sleep(0.05)
        self.workers[index] = worker
        return worker

    async def _place(self) -> Worker:
        async with self._lock:
            live = [w for w in self.workers.values() if w.healthy and w.process.is_alive()]
            if not live or (len(self.workers) < self.max_workers and all(w.groups for w in live)):
                index = self._next_index
                self._next_index += 1
                return await self._fork_worker(index)  # on demand: a new worker for new load
            return min(live, key=lambda w: len(w.groups))

    async def _supervise(self) -> None:
        while True:
            await asyncio.sleep(0.2)
            for index, worker in list(self.workers.items()):
                if not worker.process.is_alive() and index not in self._replacing:
                    await self._replace(index)

    async def _replace(self, index: int) -> None:
        dead = self.workers[index]
        event = asyncio.Event()
        self._replacing[index] = event
        log.warning("worker %d (pid %s) died; forking a replacement", index, dead.process.pid)
        try:
            new = await self._fork_worker(index)
            self.replacements += 1
            for gid in list(dead.groups):
                resp = await self.http.post(
                    f"{new.url}/admin/groups/{gid}/adopt", headers=self._admin_headers()
                )
                if resp.status_code == 200:
                    new.groups.add(gid)
                else:
                    log.error("replacement worker could not adopt %s: %s", gid, resp.text)
        finally:
            event.set()
            self._replacing.pop(index, None)

    def _admin_headers(self) -> dict[str, str]:
        return {"authorization": f"Bearer {self.admin_token}"}

    async def start(self) -> None:
        await self._place()
        self._supervisor = asyncio.create_task(self._supervise(), name="megamcp-supervisor")

    async def stop(self) -> None:
        if self._supervisor is not None:
            self._supervisor.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._supervisor
        for w in self.workers.values():
            if w.process.is_alive():
                w.process.terminate()
        for w in self.workers.values():
            await asyncio.to_thread(w.process.join, 10)
            if w.process.is_alive():
                w.process.kill()
        await self.http.aclose()
        await self.core.stop()

    async def _worker_for_group(self, group_id: str) -> Worker | None:
        index = self.group_worker.get(group_id)
        if index is None:
            return None
        if index in self._replacing:
            await self._replacing[index].wait()
        elif not self.workers[index].process.is_alive():
            await self._replace(index)
        return self.workers.get(index)

    def _remember(self, worker: Worker, handles: list[dict[str, Any]]) -> None:
        for h in handles:
            worker.groups.add(h["group_id"])
            self.group_worker[h["group_id"]] = worker.index
            for s in h["sessions"].values():
                self.token_group[token_sha(s["token"])] = h["group_id"]

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
        if path == "/admin/workers" or path == "/admin/groups" or _GROUP_PATH.match(path):
            if not self._is_admin(scope):
                await self._json(send, 401, {"detail": "admin token missing or wrong"})
                return
            if path == "/admin/workers":
                await self._json(send, 200, self.workers_info())
            else:
                await self._group_admin(scope, receive, send, path)
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

    def workers_info(self) -> list[dict[str, Any]]:
        return [
            {
                "index": w.index,
                "pid": w.process.pid,
                "alive": w.process.is_alive(),
                "url": w.url,
                "groups": len(w.groups),
            }
            for w in self.workers.values()
        ]

    async def _json(self, send: Send, status: int, data: Any) -> None:
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

    async def _body(self, receive: Receive) -> bytes:
        chunks = []
        while True:
            msg = await receive()
            chunks.append(msg.get("body", b""))
            if not msg.get("more_body"):
                return b"".join(chunks)

    async def _forward(self, worker: Worker, scope: Scope, body: bytes) -> httpx.Response:
        headers = [
            (k.decode("latin-1"), v.decode("latin-1"))
            for k, v in scope.get("headers", [])
            if k.decode("latin-1").lower() not in _HOP_HEADERS
        ]
        qs = scope.get("query_string", b"").decode()
        url = worker.url + scope["path"] + (f"?{qs}" if qs else "")
        return await self.http.request(scope["method"], url, headers=headers, content=body)

    async def _relay(self, send: Send, resp: httpx.Response) -> None:
        headers = [
            (k.encode(), v.encode())
            for k, v in resp.headers.items()
            if k.lower() not in _HOP_HEADERS | {"content-encoding"}
        ]
        headers.append((b"content-length", str(len(resp.content)).encode()))
        await send({"type": "http.response.start", "status": resp.status_code, "headers": headers})
        await send({"type": "http.response.body", "body": resp.content})

    async def _group_admin(self, scope: Scope, receive: Receive, send: Send, path: str) -> None:
        body = await self._body(receive)
        if path == "/admin/groups":
            if scope["method"] == "POST":
                worker = await self._place()
                resp = await self._forward(worker, scope, body)
                if resp.status_code == 200:
                    self._remember(worker, [resp.json()])
                await self._relay(send, resp)
            else:
                out: list[Any] = []
                for w in list(self.workers.values()):
                    with contextlib.suppress(httpx.HTTPError):
                        out.extend(
                            (
                                await self.http.get(
                                    f"{w.url}/admin/groups", headers=self._admin_headers()
                                )
                            ).json()
                        )
                await self._json(send, 200, out)
            return
        match = _GROUP_PATH.match(path)
        assert match is not None
        gid, action = match.group(1), match.group(2) or ""
        worker = await self._worker_for_group(gid)
        if worker is None:
            await self._json(
                send, 404, {"error": "NotFoundError", "detail": f"group {gid!r} does not exist"}
            )
            return
        try:
            resp = await self._forward(worker, scope, body)
        except httpx.HTTPError as exc:
            await self._json(
                send,
                502,
                {"error": "MegaMCPRuntimeError", "detail": f"worker failed: {type(exc).__name__}"},
            )
            return
        if resp.status_code == 200 and action == "/fork":
            self._remember(worker, resp.json())
        if resp.status_code == 200 and action == "/close":
            worker.groups.discard(gid)
            self.group_worker.pop(gid, None)
        await self._relay(send, resp)

    async def _mcp(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        headers = {
            k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])
        }
        token = bearer(headers)
        gid = self.token_group.get(token_sha(token)) if token else None
        body = await self._body(receive)
        worker = await self._worker_for_group(gid) if gid else None
        if worker is None:
            # The worker refuses unknown tokens itself; any live worker gives the same 401.
            live = [w for w in self.workers.values() if w.process.is_alive()]
            if not live:
                await self._json(send, 503, {"detail": "no worker available"})
                return
            worker = live[0]
        try:
            resp = await self._forward(worker, scope, body)
        except httpx.HTTPError as exc:
            # The worker died mid-call: the caller sees a server error and may retry; the
            # supervisor is already replacing the worker.
            await self._json(
                send, 502, {"detail": f"worker failed during the request: {type(exc).__name__}"}
            )
            return
        await self._relay(send, resp)


def serve_master(settings: MegaMCPSettings) -> int:
    import sys

    sock = bind_socket(settings.host, settings.port)
    url = url_of(settings.host, sock.getsockname()[1])
    master = Master(settings, url)
    if settings.admin_token is None:
        print(f"admin token: {master.admin_token}", file=sys.stderr)
    print(
        f"MegaMCP master on {url} with up to {master.max_workers} workers (data in {master.core.data_dir})",
        file=sys.stderr,
    )
    server = uvicorn.Server(uvicorn.Config(master, log_level=settings.log_level, backlog=2048))
    server.run(sockets=[sock])
    return 0
