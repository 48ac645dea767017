"""Command-based (stdio) MCP servers: one dedicated process per session (the stronger tier).

The process runs in the host's sandbox (`weft_megamcp.sandbox`): it sees its session's workspace
(its working directory) and DB and nothing else of the host, and WEFT_DB_PATH / WEFT_WORKSPACE
name them, so a Weft-aware server binds to its session's private state.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
from contextlib import AsyncExitStack
from pathlib import Path
from typing import TYPE_CHECKING, Any

import mcp_types as mt
from fastmcp.exceptions import NotFoundError as FastMCPNotFound
from fastmcp.exceptions import ToolError
from fastmcp.tools.base import Tool, ToolResult

from weft_megamcp._session import HostedSession
from weft_megamcp.registry import MCPKind, MCPRecord, Registry
from weft_megamcp.sandbox import SANDBOX_MODULE
from weft_megamcp.stdio_transport import command_transport

if TYPE_CHECKING:
    from fastmcp import Client


class _Proc:
    def __init__(self, client: Client[Any], stack: AsyncExitStack) -> None:
        self.client = client
        self.stack = stack


class CommandRuntime:
    """Starts each session's own server process on first use and stops it on release. A suite's
    session has one process per member (started when a tool of that member is first called),
    all in the session's workspace and DB."""

    def __init__(self, registry: Registry) -> None:
        self.registry = registry
        # session id -> suite member ("" for a single command) -> its process
        self._procs: dict[str, dict[str, _Proc]] = {}
        self._records: dict[tuple[str, int], MCPRecord] = {}
        self._start_lock = asyncio.Lock()

    def record(self, mcp_id: str, version: int) -> MCPRecord:
        key = (mcp_id, version)
        if key not in self._records:
            self._records[key] = self.registry.get(mcp_id, version)
        return self._records[key]

    async def _proc(self, session: HostedSession, member: str) -> _Proc:
        proc = self._procs.get(session.session_id, {}).get(member)
        if proc is not None:
            return proc
        async with self._start_lock:
            proc = self._procs.get(session.session_id, {}).get(member)
            if proc is not None:
                return proc
            rec = self.record(session.mcp_id, session.version)
            sandbox = self.registry.sandbox
            folder: Path | None = None
            log_file: Path | None = None
            if rec.kind == MCPKind.COMMAND:
                entry = json.loads(rec.entry)
                argv = entry["members"][member] if member else entry
                env = {str(k): str(v) for k, v in (rec.metadata.get("env") or {}).items()}
                if member:
                    log_file = session.root / f"server-{member}.log"
            else:
                folder = self.registry.source_folder(rec)
                argv = [
                    sys.executable,
                    "-m",
                    "weft_megamcp._module_stdio",
                    str(SANDBOX_MODULE if sandbox.mode == "bwrap" else folder),
                    rec.entry,
                    rec.mcp_id,
                    str(rec.version),
                    rec.source_hash[:10],
                ]
                env = {}
            if sandbox.mode == "bwrap" and not session.db_path.exists():
                # The DB is bound into the sandbox as a single file: it must exist first.
                session.db_path.touch()
            from fastmcp import Client  # not at import: see stdio_transport.command_transport

            stack = AsyncExitStack()
            client: Client[Any] = Client(
                command_transport(
                    argv,
                    env,
                    session.workspace,
                    session.db_path,
                    sandbox=sandbox,
                    module_src=folder,
                    log_file=log_file,
                )
            )
            await stack.enter_async_context(client)
            proc = _Proc(client, stack)
            self._procs.setdefault(session.session_id, {})[member] = proc
            return proc

    def _allowed(self, rec: MCPRecord) -> set[str]:
        names = {t.name for t in rec.tools}
        certified = rec.metadata.get("certified_tools") if rec.kind == MCPKind.BUNDLE else None
        return names & set(certified) if certified else names

    async def list_tools(self, session: HostedSession) -> list[Tool]:
        rec = self.record(session.mcp_id, session.version)
        allowed = self._allowed(rec)
        return [
            Tool(
                name=t.name,
                description=t.description,
                parameters=t.input_schema,
                output_schema=t.output_schema,
            )
            for t in rec.tools
            if t.name in allowed
        ]

    async def call_tool(
        self, session: HostedSession, tool: str, arguments: dict[str, Any]
    ) -> ToolResult:
        rec = self.record(session.mcp_id, session.version)
        if tool not in self._allowed(rec):
            raise FastMCPNotFound(f"Unknown tool: {tool!r}")
        member = str((rec.metadata.get("tool_members") or {}).get(tool, ""))
        proc = await self._proc(session, member)
        try:
            result = await proc.client.call_tool(tool, arguments, raise_on_error=False)
        except Exception:
            # The process died or the pipe broke: drop it so the next call starts a fresh one.
            await self._drop(session.session_id, member)
            raise
        if result.is_error:
            text = " ".join(c.text for c in result.content if isinstance(c, mt.TextContent))
            raise ToolError(text or "tool failed")
        return ToolResult(
            content=list(result.content), structured_content=result.structured_content
        )

    async def _drop(self, session_id: str, member: str | None = None) -> None:
        """Stop the session's process of `member` (None: all of the session's processes)."""
        procs = self._procs.get(session_id, {})
        for name in [m for m in procs if member in (None, m)]:
            proc = procs.pop(name)
            with contextlib.suppress(Exception):  # the process may already be gone
                await proc.stack.aclose()
        if not procs:
            self._procs.pop(session_id, None)

    async def release(self, session: HostedSession) -> None:
        await self._drop(session.session_id)

    async def close(self) -> None:
        for sid in list(self._procs):
            await self._drop(sid)
