"""The host core (registry + groups + background work) and its ASGI application."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import secrets
import time
from contextlib import AsyncExitStack
from typing import Any

import psutil  # type: ignore[import-untyped]
from starlette.types import Receive, Scope, Send

from weft_megamcp.admin import RegisterRequest, build_admin
from weft_megamcp.checkpoints import CheckpointStore
from weft_megamcp.dispatch import TokenGuard, build_front
from weft_megamcp.exceptions import MegaMCPUserError
from weft_megamcp.fencing import LeaseFence
from weft_megamcp.groups import GroupManager
from weft_megamcp.guards import guard_app
from weft_megamcp.health import HealthMonitor
from weft_megamcp.metrics import MetricsAggregator, render_prometheus
from weft_megamcp.models import CreateGroupRequest, GroupHandle, RuntimeState
from weft_megamcp.objectstore import ObjectStore
from weft_megamcp.recovery import SessionRecovery
from weft_megamcp.registry import MCPRecord, Registry
from weft_megamcp.sanitize import Sanitizer
from weft_megamcp.settings import MegaMCPSettings

log = logging.getLogger("weft_megamcp")


class HostCore:
    """Everything one serving process holds: stores, registry, groups, idle manager."""

    def __init__(self, settings: MegaMCPSettings, *, run_reaper: bool = True) -> None:
        self.settings = settings
        self.run_reaper = run_reaper  # one reaper per data dir: the master's, not each worker's
        self.data_dir = settings.data_dir.resolve()
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.admin_token = settings.admin_token or secrets.token_urlsafe(32)
        self.store = ObjectStore(
            settings.resolved_object_store_url, self.data_dir / "cache" / "objects"
        )
        sandbox = settings.sandbox_policy()
        if sandbox.mode == "bwrap":
            sandbox.require()  # fail closed at startup, in one line naming the opt-out setting
        self.registry = Registry(
            settings.resolved_registry_url,
            self.store,
            self.data_dir / "modules",
            sandbox=sandbox,
            register_timeout_s=settings.register_timeout_s,
            fork_probes=settings.register_fork_probes,
        )
        sanitizer = Sanitizer([self.admin_token, str(self.data_dir), self.store.root])
        self.manager = GroupManager(
            self.data_dir,
            self.registry,
            token_ttl_s=settings.token_ttl_s,
            call_timeout_s=settings.call_timeout_s,
            sanitizer=sanitizer,
            diff_max_rows=settings.checkpoint_diff_max_rows,
            max_result_chars=settings.max_result_chars,
            group_max_calls=settings.group_max_calls,
            tool_threads=settings.tool_threads,
            screening=settings.screening(),
            groups_dir=settings.resolved_groups_dir,
        )
        self.started_at = time.time()
        self._tasks: list[asyncio.Task[Any]] = []
        self.metrics = MetricsAggregator()
        self.manager.call_hooks.append(lambda _session, entry: self.metrics.observe(entry))
        self.health_monitor = HealthMonitor(self.data_dir)
        self._process = psutil.Process()
        self._process.cpu_percent(None)
        ckpt_url = (
            settings.checkpoint_url
            or f"{settings.resolved_object_store_url.rstrip('/')}/checkpoints"
        )
        self.checkpoints = CheckpointStore(ckpt_url)
        self.recovery = SessionRecovery(
            self.manager,
            self.checkpoints,
            self.store,
            debounce_s=settings.checkpoint_debounce_s,
            max_delay_s=settings.checkpoint_max_delay_s,
            min_interval_s=settings.checkpoint_min_interval_s,
            max_patches=settings.checkpoint_max_patches,
        )
        self.fence = LeaseFence(self.recovery, interval_s=settings.lease_check_interval_s)
        self.manager.fence = self.fence

    @property
    def base_url(self) -> str:
        return self.manager.base_url

    @base_url.setter
    def base_url(self, value: str) -> None:
        self.manager.base_url = value.rstrip("/")

    async def register(self, req: RegisterRequest) -> MCPRecord:
        if req.suite is not None:
            if req.command or req.path:
                raise MegaMCPUserError("register a suite, a command or a path, not several")
            if not req.name:
                raise MegaMCPUserError("registering a suite needs a name")
            return await self.registry.register_suite(req.suite, name=req.name, env=req.env)
        if req.command:
            if not req.name:
                raise MegaMCPUserError("registering a command needs a name")
            return await self.registry.register_command(req.command, name=req.name, env=req.env)
        if not req.path:
            raise MegaMCPUserError("give a path or a command to register")
        return await self.registry.register(req.path, name=req.name)

    async def create_group(self, req: CreateGroupRequest) -> GroupHandle:
        return await asyncio.to_thread(self.manager.create_group, req)

    async def evict(self, group_id: str) -> None:
        await self.recovery.evict(group_id)

    async def adopt(self, group_id: str, *, replay_metrics: bool = False) -> None:
        """Take over a group after its worker died: fence the old owner, resume from checkpoints.

        `replay_metrics` counts the group's ledger into this process's statistics, for when the
        process that served those calls is gone (crash, restart) rather than handing over.
        """
        group = self.manager.adopt(group_id)
        await self.recovery.recover(group)
        if replay_metrics:
            for s in group.sessions.values():
                self.metrics.observe_many(s.ledger.entries)

    def health(self) -> dict[str, Any]:
        """Liveness plus the disk/memory verdict: an unhealthy host takes no new placements."""
        status = self.health_monitor.check()
        return {
            "status": "ok",
            "healthy": status.healthy,
            # Busy share of one core since the previous /health: what placement balances on.
            "load": round(self._process.cpu_percent(None) / 100.0, 3),
            "reasons": status.reasons,
            "groups": len(self.manager.groups),
            "uptime_s": round(time.time() - self.started_at, 1),
        }

    def stats(self) -> dict[str, Any]:
        """Per-MCP-version, per-tool error rates, crash statistics and latencies (JSON)."""
        report = self.metrics.report().model_dump(mode="json")
        return {"groups": len(self.manager.groups), **report}

    def metrics_text(self) -> str:
        sessions = sum(len(g.sessions) for g in list(self.manager.groups.values()))
        return render_prometheus(
            self.metrics.report(), gauges={"groups": len(self.manager.groups), "sessions": sessions}
        )

    # ---- background ---------------------------------------------------------------------------

    async def idle_loop(self) -> None:
        s = self.settings
        while True:
            await asyncio.sleep(s.idle_scan_interval_s)
            for g in self.manager.idle_groups(s.offload_after_s, RuntimeState.LOADED):
                try:
                    await self.manager.offload(g.group_id)
                except Exception:
                    log.exception("offloading group %s failed", g.group_id)
            for g in self.manager.idle_groups(s.evict_after_s, RuntimeState.OFFLOADED):
                try:
                    await self.recovery.evict(g.group_id)
                except Exception:
                    log.exception("evicting group %s failed", g.group_id)

    async def start_background(self) -> None:
        self._tasks.append(asyncio.create_task(self.idle_loop(), name="megamcp-idle"))
        if self.run_reaper:
            # Before serving: a token of a group from the previous run must work at once.
            await self._reap_once()

    def persisted_groups(self) -> list[str]:
        """Ids of groups left open on local disk by a previous run of this data dir."""
        out = []
        for gfile in sorted(self.manager.groups_dir.glob("grp_*/group.json")):
            try:
                status = json.loads(gfile.read_text(encoding="utf-8")).get("status")
            except (OSError, ValueError):
                continue
            if status != "closed" and gfile.parent.name not in self.manager.groups:
                out.append(gfile.parent.name)
        return out

    async def resume_persisted(self) -> int:
        """After a restart, adopt every open group: same tokens, state from the intact local files
        or else the latest checkpoints (recovery.py)."""
        n = 0
        for gid in self.persisted_groups():
            try:
                await self.adopt(gid, replay_metrics=True)
                n += 1
            except Exception:
                log.exception("could not resume group %s", gid)
        return n

    async def _reap_once(self) -> None:
        report = await self.recovery.reap()
        resumed = await self.resume_persisted()
        if resumed:
            log.warning("resumed %d group(s) from a previous run", resumed)
        if report.finished or report.failed:
            log.warning(
                "reaper finished %d interrupted shutdown(s); failed: %s",
                len(report.finished),
                report.failed,
            )

    async def stop(self) -> None:
        for t in self._tasks:
            t.cancel()
        for t in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await t
        self._tasks.clear()
        for g in list(self.manager.groups.values()):
            try:  # a graceful stop leaves every acknowledged write in a checkpoint
                await self.recovery.flush(g)
            except Exception:
                log.exception("final checkpoint of group %s failed", g.group_id)
        await self.manager.close_all()
        await self.registry.aclose()


class HostASGI:
    """Routes /admin and /health to the admin API and everything else to the MCP front."""

    def __init__(self, core: HostCore) -> None:
        self.core = core
        self.admin = build_admin(core)
        self.front = build_front(core.manager)
        self.mcp_app = self.front.http_app(path="/mcp", stateless_http=True, json_response=True)
        self.guarded = TokenGuard(self.mcp_app, core.manager)
        self._stack: AsyncExitStack | None = None
        self._request_guard = guard_app(self._route, core.settings.allowed_hosts)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        await self._request_guard(scope, receive, send)

    async def _route(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        if path.startswith("/admin") or path == "/health":
            await self.admin(scope, receive, send)
        else:
            await self.guarded(scope, receive, send)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                try:
                    self._stack = AsyncExitStack()
                    await self._stack.enter_async_context(
                        self.mcp_app.router.lifespan_context(self.mcp_app)
                    )
                    await self.core.start_background()
                except Exception as exc:
                    await send({"type": "lifespan.startup.failed", "message": str(exc)})
                    return
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await self.core.stop()
                if self._stack is not None:
                    await self._stack.aclose()
                await send({"type": "lifespan.shutdown.complete"})
                return
