"""The master's worker pool: forks workers on demand (when the running ones are full or measured
busy), places groups on the worker holding the fewest sessions, replaces dead workers (which
adopt their groups from local disk) and migrates groups off unhealthy or drained workers."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import multiprocessing
import multiprocessing.connection
import os
import socket
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import httpx

from weft_megamcp._fork_server import fork_server_context
from weft_megamcp._session import token_sha
from weft_megamcp.app import HostCore
from weft_megamcp.exceptions import MegaMCPUserError
from weft_megamcp.forwarding import Forwarder
from weft_megamcp.health import NoPlacementError, PlacementPolicy, WorkerState, cap_reached
from weft_megamcp.host import STARTUP_TIMEOUT_S, bind_socket, url_of
from weft_megamcp.screening import session_cap
from weft_megamcp.settings import MegaMCPSettings
from weft_megamcp.worker import worker_main

log = logging.getLogger("weft_megamcp.process")


# Admin requests forwarded to one worker at once: the worker answers them one at a time on its
# loop anyway, so the rest wait in the master rather than in the worker's accept queue. (It
# was introduced when httpcore's pool, which scanned every connection per request, made 1,000
# concurrent creations cost the master ~13 ms CPU each; forwarding now goes through aiohttp.)
ADMIN_FORWARD_SLOTS = 16


@dataclass
class Worker:
    index: int
    process: multiprocessing.process.BaseProcess
    url: str
    groups: set[str] = field(default_factory=set)
    placing: int = 0  # groups placed here whose creation is not answered yet
    healthy: bool = True
    state: WorkerState = field(default_factory=lambda: WorkerState(worker_id="?"))
    admin_slots: asyncio.Semaphore = field(
        default_factory=lambda: asyncio.Semaphore(ADMIN_FORWARD_SLOTS)
    )

    def __post_init__(self) -> None:
        self.state.worker_id = str(self.index)


class WorkerPool:
    """The workers of one master and which group (and token) lives on which."""

    def __init__(self, settings: MegaMCPSettings, url: str, core: HostCore) -> None:
        self.settings = settings
        self.url = url
        self.max_workers = max(1, settings.workers)
        self.core = core
        self.admin_token = core.admin_token
        self.ctx = fork_server_context()
        self.workers: dict[int, Worker] = {}
        self.sockets: dict[int, socket.socket] = {}  # per worker index, kept across replacements
        self.group_worker: dict[str, int] = {}
        self.token_group: dict[str, str] = {}
        # Health polls, migrations and drains (not per request). No pool cap and no pool
        # timeout: a burst must queue at the workers, not fail in the master's connection pool.
        self.http = httpx.AsyncClient(
            timeout=httpx.Timeout(settings.call_timeout_s + 30, connect=10, pool=None),
            limits=httpx.Limits(max_connections=None, max_keepalive_connections=256),
        )
        # Group admin and MCP traffic forwarded to workers (the hot path: see Forwarder).
        self.forwarder = Forwarder(settings.call_timeout_s + 30)
        self._lock = asyncio.Lock()
        # A drain and the supervisor's health poll both migrate; one at a time, or both release
        # the same group and the loser reports it still on its old worker.
        self._migration_lock = asyncio.Lock()
        self._replacing: dict[int, asyncio.Event] = {}
        self._next_index = 0
        self._holds = 0
        self._supervisor: asyncio.Task[Any] | None = None
        self.replacements = 0
        self.policy = PlacementPolicy()
        self.screening = settings.screening()
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
            target=worker_main,
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

    def mcp_key(self, key: str) -> tuple[str, bool]:
        """('mcp@version', shared) for a group request key 'id' or 'id@version'."""
        mcp_id, _, ver = key.partition("@")
        rec = self.core.registry.get(mcp_id, int(ver) if ver.isdigit() else None)
        full = f"{rec.mcp_id}@{rec.version}"
        screen = rec.metadata.get("screen") or {}
        cap = session_cap(screen, self.screening)
        self.policy.caps[full] = cap if cap is not None else self.policy.default_cap
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

    def _roomy(self, worker: Worker) -> bool:
        """Below the packing threshold and not measured busy: a new group may join it rather
        than start another worker."""
        return (
            len(worker.state.sessions) < self.settings.worker_pack_sessions
            and worker.state.load < self.settings.worker_busy_load
        )

    async def place(self, keys: list[str] | None = None) -> Worker:
        """The healthy worker holding the fewest sessions (PlacementPolicy.choose) that stays
        within every MCP's load-class cap; a new worker is forked on demand (up to --workers)
        when none fits or every one is full or busy (`worker_pack_sessions`,
        `worker_busy_load`)."""
        async with self._lock:
            return await self._place(keys or [])

    @contextlib.asynccontextmanager
    async def placement(self, keys: list[str] | None = None) -> AsyncIterator[Worker]:
        """`place`, holding the group's sessions on the chosen worker until the caller is done
        creating the group there. Without the hold, a burst of creations would all be placed
        before any of them is remembered, all on the same (seemingly empty) worker."""
        keys = keys or []
        async with self._lock:
            worker = await self._place(keys)
            self._holds += 1
            held = {f"~placing-{self._holds}-{i}": k for i, k in enumerate(keys)}
            worker.state.sessions.update(held)
            worker.placing += 1
        try:
            yield worker
        finally:
            worker.placing -= 1
            for sid in held:
                worker.state.sessions.pop(sid, None)

    async def _place(self, keys: list[str]) -> Worker:
        live = [w for w in self.workers.values() if self._fits(w, keys)]
        if len(self.workers) < self.max_workers and not any(self._roomy(w) for w in live):
            index = self._next_index
            self._next_index += 1
            return await self._fork_worker(index)  # on demand: a new worker for new load
        if not live:
            for k in keys:
                cap = self.policy.cap_of(k)
                if all(
                    w.state.instances_of(k) + keys.count(k) > cap for w in self.workers.values()
                ):
                    raise cap_reached(k, cap, len(self.workers))
            raise NoPlacementError(f"no healthy worker has room for a group of {sorted(set(keys))}")
        if keys:
            first = self.policy.choose(keys[0], [w.state for w in live])
            return next(w for w in live if w.state is first)
        return min(live, key=lambda w: len(w.groups) + w.placing)

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
                    headers=self.admin_headers(),
                )
                if resp.status_code == 200:
                    new.groups.add(gid)
                    new.state.sessions.update(self.group_sessions.get(gid, {}))
                else:
                    log.error("replacement worker could not adopt %s: %s", gid, resp.text)
        finally:
            event.set()
            self._replacing.pop(index, None)

    def admin_headers(self) -> dict[str, str]:
        return {"authorization": f"Bearer {self.admin_token}"}

    async def start(self) -> None:
        await self.place()
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
        await self.forwarder.close()
        for sock in self.sockets.values():
            sock.close()

    async def worker_for_group(self, group_id: str) -> Worker | None:
        index = self.group_worker.get(group_id)
        if index is None:
            return None
        if index in self._replacing:
            await self._replacing[index].wait()
        elif not self.workers[index].process.is_alive():
            await self._replace(index)
        return self.workers.get(index)

    def remember(self, worker: Worker, handles: list[dict[str, Any]]) -> None:
        for h in handles:
            gid = h["group_id"]
            worker.groups.add(gid)
            self.group_worker[gid] = worker.index
            shared: dict[str, str] = {}
            for s in h["sessions"].values():
                self.token_group[token_sha(s["token"])] = gid
                key, is_shared = self.mcp_key(f"{s['mcp_id']}@{s['version']}")
                if is_shared:  # dedicated sessions run in their own processes: no shared cap
                    shared[s["session_id"]] = key
            self.group_sessions[gid] = shared
            worker.state.sessions.update(shared)

    def forget(self, worker: Worker, gid: str) -> None:
        worker.groups.discard(gid)
        for sid in self.group_sessions.get(gid, {}):
            worker.state.sessions.pop(sid, None)

    async def _resume_persisted(self) -> None:
        """Groups a previous run left open: place each on a worker, which resumes it from its
        local files (or else latest checkpoints); their tokens keep working (the master routes by
        token hash)."""
        from weft_megamcp._session import HostedGroup

        for gid in self.core.persisted_groups():
            try:
                group = HostedGroup.load(self.core.manager.groups_dir / gid)
                keys = [
                    f"{s.mcp_id}@{s.version}" for s in group.sessions.values() if not s.dedicated
                ]
                worker = await self.place(keys)
                url = f"{worker.url}/admin/groups/{gid}/adopt?replay_metrics=true"
                resp = await self.http.post(url, headers=self.admin_headers())
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

    async def _migrate_off_unhealthy(self) -> list[str]:
        """Move groups off unhealthy or drained workers; returns why any group did not move."""
        async with self._migration_lock:
            return await self._migrate_off_unhealthy_locked()

    async def _migrate_off_unhealthy_locked(self) -> list[str]:
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
        errors: list[str] = []
        if not healthy:
            errors += [
                f"group {gid} stays on worker {w.index}: no worker is healthy, accepting and alive"
                for w in self.workers.values()
                if not w.state.healthy
                for gid in sorted(w.groups)
            ]
        for gid, target in targets.items():
            error = await self._migrate(gid, self.workers[target])
            if error is not None:
                errors.append(error)
        for sid in plan.stranded:
            log.error(
                "session %s is stranded on an unhealthy worker: no healthy worker has room", sid
            )
        for error in errors:
            log.error("%s", error)
        return errors

    async def _migrate(self, gid: str, target: Worker) -> str | None:
        """Source flushes checkpoints and lets go; target steals the leases and resumes.
        Returns None once moved, else one line saying which step failed and why."""
        source = self.workers[self.group_worker[gid]]
        if source is target:
            return None
        url = f"{source.url}/admin/groups/{gid}/release"
        try:
            resp = await self.http.post(url, headers=self.admin_headers())
        except httpx.HTTPError as exc:
            return f"worker {source.index} could not release {gid}: {exc!r}"
        if resp.status_code != 200:
            return f"worker {source.index} could not release {gid}: {resp.text}"
        url = f"{target.url}/admin/groups/{gid}/adopt"
        try:
            resp = await self.http.post(url, headers=self.admin_headers())
        except httpx.HTTPError as exc:
            return f"worker {target.index} could not adopt {gid}: {exc!r}"
        if resp.status_code != 200:
            return f"worker {target.index} could not adopt {gid}: {resp.text}"
        self.forget(source, gid)
        target.groups.add(gid)
        target.state.sessions.update(self.group_sessions.get(gid, {}))
        self.group_worker[gid] = target.index
        self.migrations += 1
        return None

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
        errors = await self._migrate_off_unhealthy()
        return {"index": index, "groups_left": len(worker.groups), "errors": errors}

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
