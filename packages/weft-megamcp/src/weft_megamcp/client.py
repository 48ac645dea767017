"""Async client SDK of MegaMCP: the admin API plus real MCP calls into group sessions.

async with MegaMCPHost.running(settings) as host:
    client = MegaMCPClient(host.url, host.admin_token)
    rec = await client.register("examples/bundles/crm")
    group = await client.create_group(mcps={rec.mcp_id: None})
    res = await client.call_tool(group, rec.mcp_id, "list_contacts", {})
    result = await client.verify(group)
    await client.close(group)
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import ssl
import time
from pathlib import Path
from typing import Any

import httpx
import mcp_types as mt
from fastmcp import Client
from fastmcp.client.transports import StreamableHttpTransport

from weft_core.models import LedgerEntry, Verifier
from weft_megamcp.exceptions import (
    AuthError,
    GroupStateError,
    MegaMCPRuntimeError,
    MegaMCPUserError,
    MissingExtraError,
    NotFoundError,
)
from weft_megamcp.models import (
    BatchOp,
    BatchRequest,
    BatchResult,
    CallResult,
    CreateGroupRequest,
    GroupHandle,
    GroupInfo,
    SessionInfo,
    SessionSnapshot,
    VerificationResult,
)
from weft_megamcp.registry import MCPRecord
from weft_megamcp.service import GroupRef, GroupService


@functools.cache
def _ssl_context() -> ssl.SSLContext:
    # Building a default context reads the CA bundle (~80 ms); one shared context serves all
    # session clients instead of one per client.
    return ssl.create_default_context()


def _gid(group: GroupRef) -> str:
    return group.group_id if isinstance(group, GroupHandle) else group


def _no_placement(resp: httpx.Response) -> bool:
    if resp.status_code != 503:
        return False
    try:
        return bool(resp.json().get("error") == "NoPlacementError")
    except ValueError:
        return False


class MegaMCPClient:
    """Talks to one MegaMCP host. Admin calls use the admin token; tool calls use session tokens."""

    def __init__(
        self,
        url: str,
        admin_token: str,
        *,
        timeout_s: float = 120.0,
        placement_wait_s: float = 300.0,
    ) -> None:
        """`placement_wait_s`: how long a group creation waits, retrying, while the host answers
        503 `NoPlacementError` (every serving process is at a screened per-MCP cap); rollouts
        close groups all the time, so a place usually frees up. 0 fails at once."""
        self.url = url.rstrip("/")
        self.placement_wait_s = placement_wait_s
        self._http = httpx.AsyncClient(
            base_url=self.url, headers={"Authorization": f"Bearer {admin_token}"}, timeout=timeout_s
        )
        self._sessions: dict[str, Client[Any]] = {}
        self._session_lock = asyncio.Lock()

    async def __aenter__(self) -> MegaMCPClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        for sid in list(self._sessions):
            await self._drop_session(sid)
        await self._http.aclose()

    async def _drop_session(self, session_id: str) -> None:
        client = self._sessions.pop(session_id, None)
        if client is not None:
            with contextlib.suppress(Exception):  # the host may already have closed the session
                await client.__aexit__(None, None, None)  # type: ignore[no-untyped-call]

    async def _req(self, method: str, path: str, json: Any = None) -> Any:
        deadline = time.monotonic() + self.placement_wait_s
        pause = 0.1
        while True:
            try:
                resp = await self._http.request(method, path, json=json)
            except httpx.HTTPError as exc:
                raise MegaMCPRuntimeError(
                    f"MegaMCP at {self.url} unreachable: {type(exc).__name__}: {exc}"
                ) from None
            # A refused placement created nothing, so asking again is safe.
            if not (_no_placement(resp) and time.monotonic() + pause < deadline):
                break
            await asyncio.sleep(pause)
            pause = min(pause * 2, 2.0)
        if resp.status_code >= 400:
            try:
                detail = resp.json().get("detail", resp.text)
            except ValueError:
                detail = resp.text
            errors: dict[int, type[Exception]] = {
                401: AuthError,
                404: NotFoundError,
                409: GroupStateError,
            }
            default = MegaMCPUserError if resp.status_code < 500 else MegaMCPRuntimeError
            cls = errors.get(resp.status_code, default)
            raise cls(f"{method} {path}: {detail}")
        return resp.json()

    # ---- registry -----------------------------------------------------------------------------

    async def register(self, path: str | Path, *, name: str | None = None) -> MCPRecord:
        """Register an EnvBundle folder, a module package folder or a module .py file (host-side path)."""
        data = await self._req(
            "POST", "/admin/mcps", {"path": str(Path(path).resolve()), "name": name}
        )
        return MCPRecord.model_validate(data)

    async def register_command(
        self, argv: list[str], *, name: str, env: dict[str, str] | None = None
    ) -> MCPRecord:
        data = await self._req(
            "POST", "/admin/mcps", {"command": argv, "name": name, "env": env or {}}
        )
        return MCPRecord.model_validate(data)

    async def register_suite(
        self, members: dict[str, list[str]], *, name: str, env: dict[str, str] | None = None
    ) -> MCPRecord:
        """Register stdio servers that share each session's workspace and DB (member name ->
        argv; one process per member per session)."""
        data = await self._req(
            "POST", "/admin/mcps", {"suite": members, "name": name, "env": env or {}}
        )
        return MCPRecord.model_validate(data)

    async def mcps(self) -> list[MCPRecord]:
        return [MCPRecord.model_validate(d) for d in await self._req("GET", "/admin/mcps")]

    async def mcp(self, mcp_id: str, version: int | None = None) -> MCPRecord:
        q = f"?version={version}" if version else ""
        return MCPRecord.model_validate(await self._req("GET", f"/admin/mcps/{mcp_id}{q}"))

    async def put_snapshot(self, mcp_id: str, sqlite_path: str | Path) -> str:
        """Store an immutable initial DB; returns its object-store URI (for create_group)."""
        data = await self._req(
            "POST", f"/admin/mcps/{mcp_id}/snapshots", {"path": str(Path(sqlite_path).resolve())}
        )
        return str(data["uri"])

    async def put_workspace(self, mcp_id: str, path: str | Path) -> str:
        """Store an immutable initial workspace (a host-side folder, or its gzip tarball);
        returns its URI (for create_group's `workspaces`)."""
        data = await self._req(
            "POST", f"/admin/mcps/{mcp_id}/workspaces", {"path": str(Path(path).resolve())}
        )
        return str(data["uri"])

    async def put_verifier(self, kind: str, content: str | Verifier) -> str:
        """Store a verifier ('checks': a Verifier; 'python': source); returns its id."""
        text = content if isinstance(content, str) else content.model_dump_json()
        return str(
            (await self._req("POST", "/admin/verifiers", {"kind": kind, "content": text}))[
                "verifier_id"
            ]
        )

    # ---- groups -------------------------------------------------------------------------------

    async def create_group(
        self,
        mcps: dict[str, str | None] | list[str],
        verifier: Verifier | str | None = None,
        task_id: str | None = None,
        bindings: dict[str, Any] | None = None,
        workspaces: dict[str, str] | None = None,
    ) -> GroupHandle:
        """One private session per MCP ('id' or 'id@version'), each from its snapshot URI or seed;
        `verifier` is a Verifier or a registered verifier's id, `bindings` add to its bindings;
        `workspaces` (MCP key -> workspace URI) start those sessions' workspaces from them."""
        body = {
            "mcps": {m: None for m in mcps} if isinstance(mcps, list) else mcps,
            "verifier": verifier.model_dump(mode="json")
            if isinstance(verifier, Verifier)
            else verifier,
            "task_id": task_id,
            "bindings": bindings or {},
            "workspaces": workspaces or {},
        }
        return GroupHandle.model_validate(await self._req("POST", "/admin/groups", body))

    async def info(self, group: GroupRef) -> GroupInfo:
        return GroupInfo.model_validate(await self._req("GET", f"/admin/groups/{_gid(group)}"))

    async def pause(self, group: GroupRef) -> GroupInfo:
        return GroupInfo.model_validate(
            await self._req("POST", f"/admin/groups/{_gid(group)}/pause")
        )

    async def resume(self, group: GroupRef) -> GroupInfo:
        return GroupInfo.model_validate(
            await self._req("POST", f"/admin/groups/{_gid(group)}/resume")
        )

    async def freeze(self, group: GroupRef) -> GroupInfo:
        return GroupInfo.model_validate(
            await self._req("POST", f"/admin/groups/{_gid(group)}/freeze")
        )

    async def offload(self, group: GroupRef) -> GroupInfo:
        return GroupInfo.model_validate(
            await self._req("POST", f"/admin/groups/{_gid(group)}/offload")
        )

    async def evict(self, group: GroupRef) -> GroupInfo:
        return GroupInfo.model_validate(
            await self._req("POST", f"/admin/groups/{_gid(group)}/evict")
        )

    async def close(self, group: GroupRef) -> None:
        if isinstance(group, GroupHandle):
            for s in group.sessions.values():
                await self._drop_session(s.session_id)
        await self._req("POST", f"/admin/groups/{_gid(group)}/close")

    async def verify(self, group: GroupRef) -> VerificationResult:
        """Freeze the group and run its verifier's final checkpoint server-side."""
        return VerificationResult.model_validate(
            await self._req("POST", f"/admin/groups/{_gid(group)}/verify", {})
        )

    async def checkpoint_verify(self, group: GroupRef, checkpoint: str) -> VerificationResult:
        """Run one checkpoint's checks on the live state (the group keeps running)."""
        data = await self._req(
            "POST", f"/admin/groups/{_gid(group)}/verify", {"checkpoint": checkpoint}
        )
        return VerificationResult.model_validate(data)

    async def batch(
        self,
        group: GroupRef,
        ops: list[BatchOp],
        *,
        stop_on_error: bool = True,
        close: bool = False,
        env: dict[str, Any] | None = None,
    ) -> BatchResult:
        """Run calls, checks and freezes on a group in order, in one request (see batch.py);
        `close=True` closes the group afterwards, whatever happened; with `env`, call arguments'
        templates are filled host-side and calls' binds feed later calls (`BatchRequest.env`)."""
        if close and isinstance(group, GroupHandle):
            for s in group.sessions.values():
                await self._drop_session(s.session_id)
        req = BatchRequest(ops=ops, stop_on_error=stop_on_error, close=close, env=env)
        data = await self._req(
            "POST", f"/admin/groups/{_gid(group)}/batch", req.model_dump(mode="json")
        )
        return BatchResult.model_validate(data)

    async def run(
        self,
        mcps: dict[str, str | None] | list[str],
        ops: list[BatchOp],
        *,
        verifier: Verifier | str | None = None,
        task_id: str | None = None,
        bindings: dict[str, Any] | None = None,
        stop_on_error: bool = True,
        close: bool = True,
        snapshots: dict[str, str | Path] | None = None,
        workspaces: dict[str, str] | None = None,
        workspace_files: dict[str, str | Path] | None = None,
        env: dict[str, Any] | None = None,
    ) -> BatchResult:
        """Create a group, run `ops` on it and close it (unless `close=False`): one request.
        `snapshots` (MCP key -> host-side path of an initial DB) and `workspace_files` (MCP key
        -> host-side folder or tarball of an initial workspace) are stored first, as
        `put_snapshot` / `put_workspace` would, and those sessions start from them;
        `workspaces`: MCP key -> an already stored workspace's URI; `env` as for `batch`."""
        create = CreateGroupRequest(
            mcps={m: None for m in mcps} if isinstance(mcps, list) else mcps,
            verifier=verifier,
            task_id=task_id,
            bindings=bindings or {},
            workspaces=workspaces or {},
        )
        req = {
            "create": create.model_dump(mode="json"),
            **BatchRequest(ops=ops, stop_on_error=stop_on_error, close=close, env=env).model_dump(
                mode="json"
            ),
            "snapshots": {m: str(Path(p).resolve()) for m, p in (snapshots or {}).items()},
            "workspace_files": {
                m: str(Path(p).resolve()) for m, p in (workspace_files or {}).items()
            },
        }
        return BatchResult.model_validate(await self._req("POST", "/admin/runs", req))

    async def ledger(self, group: GroupRef) -> dict[str, list[LedgerEntry]]:
        data = await self._req("GET", f"/admin/groups/{_gid(group)}/ledger")
        return {m: [LedgerEntry.model_validate(e) for e in entries] for m, entries in data.items()}

    async def snapshot(self, group: GroupRef) -> str:
        return str(
            (await self._req("POST", f"/admin/groups/{_gid(group)}/snapshot"))["snapshot_id"]
        )

    async def restore(self, group: GroupRef, snapshot_id: str) -> GroupInfo:
        data = await self._req(
            "POST", f"/admin/groups/{_gid(group)}/restore", {"snapshot_id": snapshot_id}
        )
        return GroupInfo.model_validate(data)

    async def export(
        self, group: GroupRef, snapshot_id: str | None = None
    ) -> dict[str, SessionSnapshot]:
        """Store the group's live state (or its snapshot `snapshot_id`) in the host's object
        store: per MCP id, the DB's and the workspace's URIs for `create_group`."""
        data = await self._req(
            "POST", f"/admin/groups/{_gid(group)}/export", {"snapshot_id": snapshot_id}
        )
        return {m: SessionSnapshot.model_validate(v) for m, v in data.items()}

    async def fork(self, group: GroupRef, n: int) -> list[GroupHandle]:
        data = await self._req("POST", f"/admin/groups/{_gid(group)}/fork", {"n": n})
        return [GroupHandle.model_validate(d) for d in data]

    async def checkpoint(self, group: GroupRef) -> dict[str, int]:
        """Checkpoint now and wait until it is durable; returns {mcp_id: durable state version}."""
        return dict(await self._req("POST", f"/admin/groups/{_gid(group)}/checkpoint"))

    async def stats(self) -> dict[str, Any]:
        return dict(await self._req("GET", "/admin/stats"))

    # ---- MCP ----------------------------------------------------------------------------------

    def session_client(self, session: SessionInfo) -> Client[Any]:
        """A new (unopened) fastmcp Client for one session: its URL with its bearer token."""
        transport = StreamableHttpTransport(session.url, auth=session.token, verify=_ssl_context())
        return Client(transport)

    async def _client(self, session: SessionInfo) -> Client[Any]:
        client = self._sessions.get(session.session_id)
        if client is not None and client.is_connected():
            return client
        async with self._session_lock:
            client = self._sessions.get(session.session_id)
            if client is not None and not client.is_connected():
                # A connection lost mid-call (the host restarted, a transport error) is not
                # the session's end: the next call reconnects instead of failing forever.
                self._sessions.pop(session.session_id, None)
                with contextlib.suppress(Exception):
                    await client.__aexit__(None, None, None)  # type: ignore[no-untyped-call]
                client = None
            if client is None:
                client = self.session_client(session)
                await client.__aenter__()  # type: ignore[no-untyped-call]
                self._sessions[session.session_id] = client
            return client

    async def list_tools(self, group: GroupHandle, mcp_id: str) -> list[mt.Tool]:
        return list(await (await self._client(group.session(mcp_id))).list_tools())

    async def call_tool(
        self, group: GroupHandle, mcp_id: str, tool: str, arguments: dict[str, Any] | None = None
    ) -> CallResult:
        """A real MCP tools/call over streamable HTTP with the session's bearer token.

        Arguments holding text that cannot be sent (a lone UTF-16 surrogate has no UTF-8 form)
        are refused here with the argument's path, before they reach the transport.
        """
        _check_sendable(arguments or {}, f"{tool} arguments")
        client = await self._client(group.session(mcp_id))
        res = await client.call_tool(tool, arguments or {}, raise_on_error=False)
        content = [c.model_dump(mode="json", exclude_none=True) for c in res.content]
        text = "\n".join(c.text for c in res.content if isinstance(c, mt.TextContent))
        return CallResult(
            is_error=bool(res.is_error),
            content=content,
            structured=res.structured_content,
            text=text,
        )

    async def langchain_tools(self, group: GroupHandle) -> list[Any]:
        """LangChain tools over every session of the group (langchain.mcp.MCPAdapter)."""
        from fastmcp.client.group import ClientGroup

        MCPAdapter = langchain_mcp_adapter()
        clients = {m: self.session_client(s) for m, s in group.sessions.items()}
        target: Any = next(iter(clients.values())) if len(clients) == 1 else ClientGroup(clients)
        return list(await MCPAdapter(target).list_tools())


def _check_sendable(value: Any, where: str) -> None:
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise MegaMCPUserError(
                f"{where}: text at position {exc.start} is not encodable as UTF-8 "
                f"({exc.reason}); a JSON-RPC message cannot carry it"
            ) from None
    elif isinstance(value, dict):
        for k, v in value.items():
            _check_sendable(k, where)
            _check_sendable(v, f"{where}.{k}")
    elif isinstance(value, list | tuple):
        for i, v in enumerate(value):
            _check_sendable(v, f"{where}[{i}]")


def langchain_mcp_adapter() -> Any:
    """`langchain.mcp.MCPAdapter`, which only the `[langchain]` extra installs."""
    try:
        from langchain.mcp import MCPAdapter
    except ImportError as exc:
        raise MissingExtraError(
            "LangChain tools need the langchain extra: pip install 'weft-megamcp[langchain]'"
        ) from exc
    return MCPAdapter


def _implements(client: MegaMCPClient) -> GroupService:
    return client  # mypy checks here that MegaMCPClient satisfies the GroupService protocol
