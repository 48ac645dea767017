"""The prefork process model: a master that routes, N workers that serve.

The master preloads the common stack in a fork server (multiprocessing "forkserver" with a
preload list), so each worker is forked from a process that already imported fastapi,
sqlmodel/sqlalchemy, pydantic and fastmcp; workers are forked on demand as groups are placed.
A worker is a complete single-process host (HostCore) on its own 127.0.0.1 port; the master
keeps the registry API, places each group on one worker (by measured load), and forwards that
group's admin traffic by group id. MCP traffic does not pass through the master: a session's URL
names its worker's port directly. The master owns each worker's listening socket and hands it
to the worker process, so a replacement worker serves the same port (connections made while it
starts wait in the socket's backlog) and session URLs stay valid. A session whose group moved
to another worker is forwarded by its old worker to the master, which routes by token. When a worker dies, the master forks a replacement and
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
import os
import re
import signal
import socket
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import httpx
import uvicorn
from starlette.types import Receive, Scope, Send

from weft_megamcp._session import token_sha
from weft_megamcp._stats_merge import merge_reports
from weft_megamcp.app import HostASGI, HostCore
from weft_megamcp.dispatch import bearer
from weft_megamcp.exceptions import MegaMCPUserError
from weft_megamcp.guards import guard_app, path_token
from weft_megamcp.health import NoPlacementError, PlacementPolicy, WorkerState
from weft_megamcp.host import STARTUP_TIMEOUT_S, bind_socket, url_of, uvicorn_options
from weft_megamcp.metrics import MetricsReport, render_prometheus
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


ROUTED_HEADER = "x-megamcp-routed"  # set by the master: the worker must not send it back


class MasterFallback:
    """Worker-side ASGI wrapper: an MCP request whose token this worker does not know (its
    group moved to another worker) is forwarded to the master, which routes by token. Requests
    the master already routed, revoked tokens and admin traffic are served here as usual."""

    def __init__(self, app: HostASGI, master_url: str) -> None:
        self.app = app
        self.master_url = master_url
        self._http: httpx.AsyncClient | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
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
        if self._http is None:
            self._http = httpx.AsyncClient(timeout=httpx.Timeout(None, connect=10))
        body = await _read_body(receive)
        try:
            resp = await _forward(self._http, self.master_url, scope, body, routed=False)
        except httpx.HTTPError as exc:
            await _send_json(send, 502, {"detail": f"master unreachable: {type(exc).__name__}"})
            return
        await _relay(send, resp)


def _worker_main(
    settings_json: str,
    master_url: str,
    sock: socket.socket,
    conn: multiprocessing.connection.Connection,
    master_pid: int = 0,
) -> None:
    """Entry of a forked worker: serve the socket the master bound for this worker index."""
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
    server.run(sockets=[sock])


async def _read_body(receive: Receive) -> bytes:
    chunks = []
    while True:
        msg = await receive()
        chunks.append(msg.get("body", b""))
        if not msg.get("more_body"):
            return b"".join(chunks)


async def _forward(
    http: httpx.AsyncClient, base: str, scope: Scope, body: bytes, *, routed: bool
) -> httpx.Response:
    headers = [
        (k.decode("latin-1"), v.decode("latin-1"))
        for k, v in scope.get("headers", [])
        if k.decode("latin-1").lower() not in _HOP_HEADERS
    ]
    if routed:
        headers.append((ROUTED_HEADER, "1"))
    qs = scope.get("query_string", b"").decode()
    url = base + scope["path"] + (f"?{qs}" if qs else "")
    return await http.request(scope["method"], url, headers=headers, content=body)


async def _relay(send: Send, resp: httpx.Response) -> None:
    headers = [
        (k.encode(), v.encode())
        for k, v in resp.headers.items()
        if k.lower() not in _HOP_HEADERS | {"content-encoding"}
    ]
    headers.append((b"content-length", str(len(resp.content)).encode()))
    await send({"type": "http.response.start", "status": resp.status_code, "headers": headers})
    await send({"type": "http.response.body", "body": resp.content})


async def _send_json(send: Send, status: int, data: Any) -> None:
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


@dataclass
class Worker:
    index: int
    process: multiprocessing.process.BaseProcess
    url: str
    groups: set[str] = field(default_factory=set)
    healthy: bool = True
    state: WorkerState = field(default_factory=lambda: WorkerState(worker_id="?"))

    def __post_init__(self) -> None:
        self.state.worker_id = str(self.index)


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
        self.sockets: dict[int, socket.socket] = {}  # per worker index, kept across replacements
        self.group_worker: dict[str, int] = {}
        self.token_group: dict[str, str] = {}
        # No pool cap and no pool timeout: a burst of 1,000 group creations must queue at the
        # workers, not fail in the master's connection pool (httpx's default is 100 connections).
        self.http = httpx.AsyncClient(
            timeout=httpx.Timeout(settings.call_timeout_s + 30, connect=10, pool=None),
            limits=httpx.Limits(max_connections=None, max_keepalive_connections=256),
        )
        self._lock = asyncio.Lock()
        self._replacing: dict[int, asyncio.Event] = {}
        self._next_index = 0
        self._supervisor: asyncio.Task[Any] | None = None
        self.replacements = 0
        self.policy = PlacementPolicy()
        self.group_sessions: dict[str, dict[str, str]] = {}  # group -> {session_id: mcp key}
        self.migrations = 0
        self.crashes: list[tuple[str, int | None, str]] = []  # sessions whose worker died

    # ---- workers ------------------------------------------------------------------------------

    def _worker_settings(self) -> str:
        return self.settings.model_copy(
            update={"workers": 0, "admin_token": self.admin_token, "port": 0}
        ).model_dump_json()

    def _worker_socket(self, index: int) -> socket.socket:
        """The listening socket of worker `index`: the port it had in the previous run of this
        data dir when that port is free (session URLs of resumed groups keep working), else a
        new one."""
        ports_file = self.core.data_dir / "worker_ports.json"
        try:
            ports = json.loads(ports_file.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            ports = {}
        sock = None
        if str(index) in ports:
            with contextlib.suppress(OSError):
                sock = bind_socket(self.settings.host, int(ports[str(index)]))
        if sock is None:
            sock = bind_socket(self.settings.host, 0)
        ports[str(index)] = sock.getsockname()[1]
        ports_file.write_text(json.dumps(ports), encoding="utf-8")
        return sock

    async def _fork_worker(self, index: int) -> Worker:
        if index not in self.sockets:
            self.sockets[index] = self._worker_socket(index)
        parent, child = self.ctx.Pipe(duplex=False)
        proc = self.ctx.Process(
            target=_worker_main,
            args=(self._worker_settings(), self.url, self.sockets[index], child, os.getpid()),
            name=f"megamcp-worker-{index}",
            daemon=True,
        )
        await asyncio.to_thread(proc.start)
        child.close()
        ready = await asyncio.to_thread(parent.poll, STARTUP_TIMEOUT_S)
        if not ready:
            proc.kill()
            raise RuntimeError(
                f"worker {index} did not report its port within {STARTUP_TIMEOUT_S:g} s"
            )
        port = parent.recv()
        parent.close()
        worker = Worker(index=index, process=proc, url=url_of(self.settings.host, port))
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
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

    def _mcp_key(self, key: str) -> tuple[str, bool]:
        """('mcp@version', shared) for a group request key 'id' or 'id@version'."""
        mcp_id, _, ver = key.partition("@")
        rec = self.core.registry.get(mcp_id, int(ver) if ver.isdigit() else None)
        full = f"{rec.mcp_id}@{rec.version}"
        screen = rec.metadata.get("screen") or {}
        self.policy.caps.setdefault(full, int(screen.get("cap") or self.policy.default_cap))
        shared = screen.get("tier", "shared_process") == "shared_process" and rec.kind != "command"
        return full, shared

    def _fits(self, worker: Worker, keys: list[str]) -> bool:
        if not worker.state.healthy or not worker.state.accepting or not worker.process.is_alive():
            return False
        counts: dict[str, int] = {}
        for k in keys:
            counts[k] = counts.get(k, 0) + 1
        within_caps = all(
            worker.state.instances_of(k) + n <= self.policy.cap_of(k) for k, n in counts.items()
        )
        return within_caps and len(worker.state.sessions) + len(keys) <= worker.state.capacity

    async def _place(self, keys: list[str] | None = None) -> Worker:
        """The least-loaded healthy worker that stays within every MCP's load-class cap;
        a new worker is forked on demand (up to --workers) when none fits or all are busy."""
        keys = keys or []
        async with self._lock:
            live = [w for w in self.workers.values() if self._fits(w, keys)]
            if len(self.workers) < self.max_workers and (not live or all(w.groups for w in live)):
                index = self._next_index
                self._next_index += 1
                return await self._fork_worker(index)  # on demand: a new worker for new load
            if not live:
                raise NoPlacementError(
                    f"no healthy worker has room for a group of {sorted(set(keys))}"
                )
            if keys:
                first = self.policy.choose(keys[0], [w.state for w in live])
                return next(w for w in live if w.state is first)
            return min(live, key=lambda w: len(w.groups))

    async def _supervise(self) -> None:
        ticks = 0
        while True:
            await asyncio.sleep(0.2)
            ticks += 1
            for index, worker in list(self.workers.items()):
                if not worker.process.is_alive() and index not in self._replacing:
                    await self._replace(index)
            if ticks % 10 == 0:
                try:
                    await self._poll_health()
                except Exception:
                    log.exception("health poll failed")

    async def _replace(self, index: int) -> None:
        dead = self.workers[index]
        event = asyncio.Event()
        self._replacing[index] = event
        log.warning("worker %d (pid %s) died; forking a replacement", index, dead.process.pid)
        for gid in dead.groups:
            for sid, key in self.group_sessions.get(gid, {}).items():
                mcp, _, ver = key.rpartition("@")
                self.crashes.append((mcp, int(ver) if ver.isdigit() else None, sid))
        try:
            new = await self._fork_worker(index)
            self.replacements += 1
            for gid in list(dead.groups):
                resp = await self.http.post(
                    f"{new.url}/admin/groups/{gid}/adopt?replay_metrics=true",
                    headers=self._admin_headers(),
                )
                if resp.status_code == 200:
                    new.groups.add(gid)
                    new.state.sessions.update(self.group_sessions.get(gid, {}))
                else:
                    log.error("replacement worker could not adopt %s: %s", gid, resp.text)
        finally:
            event.set()
            self._replacing.pop(index, None)

    def _admin_headers(self) -> dict[str, str]:
        return {"authorization": f"Bearer {self.admin_token}"}

    async def start(self) -> None:
        await self.core.recovery.reap()  # finish shutdowns a previous run left half done
        await self._place()
        await self._resume_persisted()
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
        for sock in self.sockets.values():
            sock.close()
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
            gid = h["group_id"]
            worker.groups.add(gid)
            self.group_worker[gid] = worker.index
            shared: dict[str, str] = {}
            for s in h["sessions"].values():
                self.token_group[token_sha(s["token"])] = gid
                key, is_shared = self._mcp_key(f"{s['mcp_id']}@{s['version']}")
                if is_shared:  # dedicated sessions run in their own processes: no shared cap
                    shared[s["session_id"]] = key
            self.group_sessions[gid] = shared
            worker.state.sessions.update(shared)

    def _forget(self, worker: Worker, gid: str) -> None:
        worker.groups.discard(gid)
        for sid in self.group_sessions.get(gid, {}):
            worker.state.sessions.pop(sid, None)

    async def _resume_persisted(self) -> None:
        """Groups a previous run left open: place each on a worker, which resumes it from its
        latest checkpoints; their tokens keep working (the master routes by token hash)."""
        from weft_megamcp._session import HostedGroup

        for gid in self.core.persisted_groups():
            try:
                group = HostedGroup.load(self.core.manager.groups_dir / gid)
                keys = [
                    f"{s.mcp_id}@{s.version}" for s in group.sessions.values() if not s.dedicated
                ]
                worker = await self._place(keys)
                url = f"{worker.url}/admin/groups/{gid}/adopt?replay_metrics=true"
                resp = await self.http.post(url, headers=self._admin_headers())
                if resp.status_code != 200:
                    log.error("worker %d could not resume %s: %s", worker.index, gid, resp.text)
                    continue
            except Exception:
                log.exception("could not resume group %s", gid)
                continue
            worker.groups.add(gid)
            self.group_worker[gid] = worker.index
            shared = {
                s.session_id: f"{s.mcp_id}@{s.version}"
                for s in group.sessions.values()
                if not s.dedicated
            }
            self.group_sessions[gid] = shared
            worker.state.sessions.update(shared)
            for s in group.sessions.values():
                self.token_group[s.token_sha] = gid

    # ---- health and migration -----------------------------------------------------------------

    async def _poll_health(self) -> None:
        for w in list(self.workers.values()):
            if not w.process.is_alive() or not w.state.accepting:
                continue
            try:
                data = (await self.http.get(f"{w.url}/health", timeout=5)).json()
                w.healthy = w.state.healthy = bool(data.get("healthy", True))
                w.state.load = float(data.get("load", 0.0))
            except (httpx.HTTPError, ValueError):
                continue
        if any(
            w.groups and (not w.state.healthy or not w.state.accepting)
            for w in self.workers.values()
        ):
            await self._migrate_off_unhealthy()

    async def _migrate_off_unhealthy(self) -> None:
        for w in self.workers.values():
            if not w.state.accepting:
                w.state.healthy = False
        plan = self.policy.plan_migrations([w.state for w in self.workers.values()])
        targets: dict[str, int] = {}
        for move in plan.moves:
            gid = next((g for g, ss in self.group_sessions.items() if move.session_id in ss), None)
            if gid is not None:
                targets.setdefault(gid, int(move.target))
        healthy = [x for x in self.workers.values() if x.state.healthy and x.process.is_alive()]
        for w in self.workers.values():
            if not w.state.healthy and healthy:
                for gid in w.groups:  # groups with only dedicated sessions have no cap accounting
                    targets.setdefault(gid, min(healthy, key=lambda x: len(x.groups)).index)
        for gid, target in targets.items():
            await self._migrate(gid, self.workers[target])
        for sid in plan.stranded:
            log.error(
                "session %s is stranded on an unhealthy worker: no healthy worker has room", sid
            )

    async def _migrate(self, gid: str, target: Worker) -> None:
        """Source flushes checkpoints and lets go; target steals the leases and resumes."""
        source = self.workers[self.group_worker[gid]]
        if source is target:
            return
        url = f"{source.url}/admin/groups/{gid}/release"
        resp = await self.http.post(url, headers=self._admin_headers())
        if resp.status_code != 200:
            log.error("worker %d could not release %s: %s", source.index, gid, resp.text)
            return
        url = f"{target.url}/admin/groups/{gid}/adopt"
        resp = await self.http.post(url, headers=self._admin_headers())
        if resp.status_code != 200:
            log.error("worker %d could not adopt %s: %s", target.index, gid, resp.text)
            return
        self._forget(source, gid)
        target.groups.add(gid)
        target.state.sessions.update(self.group_sessions.get(gid, {}))
        self.group_worker[gid] = target.index
        self.migrations += 1

    async def drain(self, index: int) -> dict[str, Any]:
        """Stop placing on a worker and move its groups to the others (operator action)."""
        worker = self.workers.get(index)
        if worker is None:
            raise MegaMCPUserError(f"no worker {index}")
        worker.state.accepting = False
        worker.healthy = worker.state.healthy = False
        if not any(w.state.accepting and w.process.is_alive() for w in self.workers.values()):
            async with self._lock:
                i = self._next_index
                self._next_index += 1
                await self._fork_worker(i)
        await self._migrate_off_unhealthy()
        return {"index": index, "groups_left": len(worker.groups)}

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
                await self._json(send, 200, self.workers_info())
            elif path.startswith("/admin/workers/") and path.endswith("/drain"):
                try:
                    await self._json(send, 200, await self.drain(int(path.split("/")[3])))
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
        for w in list(self.workers.values()):
            if not w.process.is_alive():
                continue
            with contextlib.suppress(httpx.HTTPError, ValueError):
                data = (
                    await self.http.get(f"{w.url}/admin/stats", headers=self._admin_headers())
                ).json()
                data.pop("groups", None)
                reports.append(MetricsReport.model_validate(data))
        report = merge_reports(reports, self.crashes)
        if not prometheus:
            await self._json(
                send, 200, {"groups": len(self.group_worker), **report.model_dump(mode="json")}
            )
            return
        gauges = {
            "groups": len(self.group_worker),
            "workers": sum(w.process.is_alive() for w in self.workers.values()),
            "worker_replacements": self.replacements,
            "migrations": self.migrations,
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

    def workers_info(self) -> list[dict[str, Any]]:
        return [
            {
                "index": w.index,
                "pid": w.process.pid,
                "alive": w.process.is_alive(),
                "url": w.url,
                "groups": len(w.groups),
                "healthy": w.state.healthy,
                "accepting": w.state.accepting,
                "sessions": len(w.state.sessions),
            }
            for w in self.workers.values()
        ]

    async def _json(self, send: Send, status: int, data: Any) -> None:
        await _send_json(send, status, data)

    async def _body(self, receive: Receive) -> bytes:
        return await _read_body(receive)

    async def _forward(self, worker: Worker, scope: Scope, body: bytes) -> httpx.Response:
        return await _forward(self.http, worker.url, scope, body, routed=True)

    async def _relay(self, send: Send, resp: httpx.Response) -> None:
        await _relay(send, resp)

    async def _group_admin(self, scope: Scope, receive: Receive, send: Send, path: str) -> None:
        body = await self._body(receive)
        if path == "/admin/groups" or path == "/admin/runs":
            if scope["method"] == "POST":
                try:
                    data = json.loads(body or b"{}")
                    create = data.get("create", {}) if path == "/admin/runs" else data
                    requested = create.get("mcps", {})
                    keys = [k for k, shared in map(self._mcp_key, requested) if shared]
                    worker = await self._place(keys)
                except (ValueError, AttributeError, TypeError):
                    detail = "body must be a JSON CreateGroupRequest"
                    await self._json(send, 400, {"error": "MegaMCPUserError", "detail": detail})
                    return
                except (MegaMCPUserError, NoPlacementError) as exc:
                    status = 503 if isinstance(exc, NoPlacementError) else 404
                    await self._json(
                        send, status, {"error": type(exc).__name__, "detail": str(exc)}
                    )
                    return
                try:
                    resp = await self._forward(worker, scope, body)
                except httpx.HTTPError as exc:
                    detail = f"worker {worker.index} failed: {type(exc).__name__}"
                    await self._json(send, 502, {"error": "MegaMCPRuntimeError", "detail": detail})
                    return
                if resp.status_code == 200 and path == "/admin/groups":
                    self._remember(worker, [resp.json()])
                elif resp.status_code == 200:  # a run: its group lives on unless it was closed
                    run = resp.json()
                    if not run.get("closed") and run.get("handle"):
                        self._remember(worker, [run["handle"]])
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
        owner = await self._worker_for_group(gid)
        if owner is None:
            await self._json(
                send, 404, {"error": "NotFoundError", "detail": f"group {gid!r} does not exist"}
            )
            return
        try:
            resp = await self._forward(owner, scope, body)
        except httpx.HTTPError as exc:
            await self._json(
                send,
                502,
                {"error": "MegaMCPRuntimeError", "detail": f"worker failed: {type(exc).__name__}"},
            )
            return
        if resp.status_code == 200 and action == "/fork":
            self._remember(owner, resp.json())
        closed_by_batch = (
            action == "/batch" and resp.status_code == 200 and resp.json().get("closed")
        )
        if resp.status_code == 200 and (action == "/close" or closed_by_batch):
            self._forget(owner, gid)
            self.group_worker.pop(gid, None)
            self.group_sessions.pop(gid, None)
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


def serve_master(settings: MegaMCPSettings, sock: socket.socket | None = None) -> int:
    import sys

    from weft_megamcp.guards import guard_app

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
    server.run(sockets=[sock])
    return 0
