"""The admin API: JSON over HTTP under /admin, behind the admin bearer token.

Agents never hold the admin token; verifiers, snapshots, ledgers and registry writes are only
reachable here.
"""

from __future__ import annotations

import asyncio
import hmac
from typing import Any, Protocol

from fastapi import APIRouter, Depends, FastAPI, HTTPException, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, PlainTextResponse
from pydantic import BaseModel, Field

from weft_core.exceptions import UserError, WeftRuntimeError
from weft_megamcp.batch import run_batch, run_group
from weft_megamcp.dispatch import bearer
from weft_megamcp.exceptions import AuthError, GroupStateError, NotFoundError
from weft_megamcp.groups import GroupManager
from weft_megamcp.health import NoPlacementError
from weft_megamcp.models import (
    BatchRequest,
    BatchResult,
    CreateGroupRequest,
    GroupHandle,
    GroupInfo,
    RunRequest,
    SessionSnapshot,
    VerificationResult,
)
from weft_megamcp.recovery import SessionRecovery
from weft_megamcp.registry import MCPRecord, Registry, SnapshotRecord, VerifierRecord
from weft_megamcp.settings import MegaMCPSettings


class RegisterRequest(BaseModel):
    path: str | None = Field(
        default=None, description="EnvBundle folder, module package folder or .py file."
    )
    command: list[str] | None = Field(default=None, description="argv of a stdio MCP server.")
    suite: dict[str, list[str]] | None = Field(
        default=None,
        description="member name -> argv: stdio MCP servers one session runs side by side in "
        "one workspace and DB (each tool belongs to one member).",
    )
    name: str | None = None
    env: dict[str, str] = Field(default_factory=dict)


class SnapshotRequest(BaseModel):
    path: str


class VerifierRequest(BaseModel):
    kind: str = Field(description="'checks' or 'python'.")
    content: str


class RestoreRequest(BaseModel):
    snapshot_id: str


class ExportRequest(BaseModel):
    snapshot_id: str | None = Field(
        default=None, description="Export this snapshot of the group; None: its live state."
    )


class ForkRequest(BaseModel):
    n: int = 1


class VerifyRequest(BaseModel):
    checkpoint: str | None = None


class AdminCore(Protocol):
    """What the admin API serves from (the host's `HostCore`): its stores and group manager, and
    the operations that span them. Every method may raise a MegaMCP user or runtime error; the
    API maps them to 4xx / 5xx answers."""

    admin_token: str
    settings: MegaMCPSettings
    registry: Registry
    manager: GroupManager
    recovery: SessionRecovery

    async def register(self, req: RegisterRequest) -> MCPRecord: ...

    async def create_group(self, req: CreateGroupRequest) -> GroupHandle: ...

    async def evict(self, group_id: str) -> None: ...

    async def adopt(self, group_id: str, *, replay_metrics: bool = False) -> None: ...

    def health(self) -> dict[str, Any]: ...

    def stats(self) -> dict[str, Any]: ...

    def metrics_text(self) -> str: ...


def build_admin(core: AdminCore) -> FastAPI:
    def require_admin(request: Request) -> None:
        token = bearer(request.headers)
        if token is None or not hmac.compare_digest(token, core.admin_token):
            raise HTTPException(status_code=401, detail="admin token missing or wrong")

    api = FastAPI(title="MegaMCP admin", docs_url=None, redoc_url=None, openapi_url=None)
    r = APIRouter(prefix="/admin", dependencies=[Depends(require_admin)])
    m = core.manager

    @api.exception_handler(UserError)
    async def _user_error(_: Request, exc: UserError) -> JSONResponse:
        status = (
            404
            if isinstance(exc, NotFoundError)
            else 401
            if isinstance(exc, AuthError)
            else (409 if isinstance(exc, GroupStateError) else 400)
        )
        return JSONResponse({"error": type(exc).__name__, "detail": str(exc)}, status_code=status)

    @api.exception_handler(RequestValidationError)
    async def _invalid_request(_: Request, exc: RequestValidationError) -> JSONResponse:
        # One line naming the first bad field, not FastAPI's nested error list.
        errors = exc.errors()
        first = errors[0] if errors else {"loc": (), "msg": "invalid request"}
        loc = ".".join(str(x) for x in first.get("loc", ()) if x != "body") or "request"
        detail = f"{loc}: {first.get('msg', 'invalid')}".replace("\n", " ")[:500]
        if len(errors) > 1:
            detail += f" (and {len(errors) - 1} more error(s))"
        return JSONResponse({"error": "MegaMCPUserError", "detail": detail}, status_code=422)

    @api.exception_handler(UnicodeError)
    async def _bad_text(_: Request, exc: UnicodeError) -> JSONResponse:
        # JSON can carry lone surrogates ("\udcff") that no file name or UTF-8 blob can hold.
        detail = "the request holds text that is not valid Unicode (a lone surrogate?)"
        return JSONResponse({"error": "MegaMCPUserError", "detail": detail}, status_code=400)

    @api.exception_handler(WeftRuntimeError)
    async def _runtime_error(_: Request, exc: WeftRuntimeError) -> JSONResponse:
        # No room for a group (a per-process cap) is a 503, as the prefork master answers it.
        status = 503 if isinstance(exc, NoPlacementError) else 500
        return JSONResponse({"error": type(exc).__name__, "detail": str(exc)}, status_code=status)

    @api.get("/health")
    async def health() -> dict[str, Any]:
        return core.health()

    @r.post("/mcps")
    async def register(req: RegisterRequest) -> MCPRecord:
        return await core.register(req)

    @r.get("/mcps")
    async def list_mcps() -> list[MCPRecord]:
        return core.registry.list_latest()

    @r.get("/mcps/{mcp_id}")
    async def get_mcp(mcp_id: str, version: int | None = None) -> MCPRecord:
        return core.registry.get(mcp_id, version)

    @r.post("/mcps/{mcp_id}/snapshots")
    async def put_snapshot(mcp_id: str, req: SnapshotRequest) -> SnapshotRecord:
        core.registry.require_registered(mcp_id)
        return core.registry.put_snapshot(mcp_id, req.path)

    @r.post("/mcps/{mcp_id}/workspaces")
    async def put_workspace(mcp_id: str, req: SnapshotRequest) -> SnapshotRecord:
        core.registry.require_registered(mcp_id)
        return await asyncio.to_thread(core.registry.put_workspace, mcp_id, req.path)

    @r.post("/verifiers")
    async def put_verifier(req: VerifierRequest) -> VerifierRecord:
        return core.registry.put_verifier(req.kind, req.content.encode("utf-8"))

    @r.post("/groups")
    async def create_group(req: CreateGroupRequest) -> GroupHandle:
        return await core.create_group(req)

    @r.post("/runs")
    async def run(req: RunRequest) -> BatchResult:
        return await run_group(core, req)

    @r.post("/groups/{group_id}/batch")
    async def batch(group_id: str, req: BatchRequest) -> BatchResult:
        return await run_batch(core, group_id, req)

    @r.get("/groups")
    async def list_groups() -> list[GroupInfo]:
        return [m.info(gid) for gid in list(m.groups)]

    @r.get("/groups/{group_id}")
    async def group_info(group_id: str) -> GroupInfo:
        return m.info(group_id)

    @r.post("/groups/{group_id}/pause")
    async def pause(group_id: str) -> GroupInfo:
        await m.pause(group_id)
        return m.info(group_id)

    @r.post("/groups/{group_id}/resume")
    async def resume(group_id: str) -> GroupInfo:
        await m.resume(group_id)
        return m.info(group_id)

    @r.post("/groups/{group_id}/freeze")
    async def freeze(group_id: str) -> GroupInfo:
        await m.freeze(group_id)
        return m.info(group_id)

    @r.post("/groups/{group_id}/close")
    async def close(group_id: str) -> dict[str, str]:
        await m.close(group_id)
        return {"group_id": group_id, "status": "closed"}

    @r.post("/groups/{group_id}/offload")
    async def offload(group_id: str) -> GroupInfo:
        await m.offload(group_id)
        return m.info(group_id)

    @r.post("/groups/{group_id}/evict")
    async def evict(group_id: str) -> GroupInfo:
        await core.evict(group_id)
        return m.info(group_id)

    @r.post("/groups/{group_id}/snapshot")
    async def snapshot(group_id: str) -> dict[str, str]:
        return {"snapshot_id": await m.snapshot(group_id)}

    @r.post("/groups/{group_id}/export")
    async def export(group_id: str, req: ExportRequest) -> dict[str, SessionSnapshot]:
        return await m.export(group_id, req.snapshot_id)

    @r.post("/groups/{group_id}/restore")
    async def restore(group_id: str, req: RestoreRequest) -> GroupInfo:
        await m.restore(group_id, req.snapshot_id)
        return m.info(group_id)

    @r.post("/groups/{group_id}/fork")
    async def fork(group_id: str, req: ForkRequest) -> list[GroupHandle]:
        return await m.fork(group_id, req.n)

    @r.post("/groups/{group_id}/verify")
    async def verify(group_id: str, req: VerifyRequest) -> VerificationResult:
        timeout = core.settings.verifier_timeout_s
        if req.checkpoint:
            return await m.checkpoint_verify(group_id, req.checkpoint, timeout_s=timeout)
        return await m.verify(group_id, timeout_s=timeout)

    @r.get("/groups/{group_id}/ledger")
    async def ledger(group_id: str) -> dict[str, list[dict[str, Any]]]:
        return {
            mcp: [e.model_dump(mode="json") for e in entries]
            for mcp, entries in m.ledger(group_id).items()
        }

    @r.post("/groups/{group_id}/checkpoint")
    async def checkpoint(group_id: str) -> dict[str, int]:
        group = m.get(group_id)
        await core.recovery.flush(group)
        return await core.recovery.wait_durable(group, timeout=core.settings.call_timeout_s)

    @r.post("/groups/{group_id}/release")
    async def release(group_id: str) -> dict[str, str]:
        await core.recovery.release(group_id)
        return {"group_id": group_id, "status": "released"}

    @r.post("/groups/{group_id}/adopt")
    async def adopt(group_id: str, replay_metrics: bool = False) -> GroupInfo:
        await core.adopt(group_id, replay_metrics=replay_metrics)
        return m.info(group_id)

    @r.get("/stats")
    async def stats() -> dict[str, Any]:
        return core.stats()

    @r.get("/metrics")
    async def metrics_text() -> PlainTextResponse:
        return PlainTextResponse(core.metrics_text(), media_type="text/plain; version=0.0.4")

    api.include_router(r)
    return api
