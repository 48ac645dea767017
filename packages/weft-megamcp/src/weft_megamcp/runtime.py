"""Runtimes run one session's tool calls: in-process modules, or a dedicated stdio process."""

from __future__ import annotations

import asyncio
from typing import Any, Protocol

from fastmcp import FastMCP
from fastmcp.exceptions import NotFoundError as FastMCPNotFound
from fastmcp.tools.base import Tool, ToolResult

from weft_core.binding import bind_session, release_session
from weft_megamcp import loader
from weft_megamcp._session import HostedSession
from weft_megamcp.registry import MCPKind, MCPRecord, Registry


class ServerRuntime(Protocol):
    """Runs tool calls of hosted sessions.

    Contract: `call_tool` runs the tool with the session's binding (its private DB and
    workspace) and returns the fastmcp `ToolResult`, or raises fastmcp's NotFoundError (unknown
    tool), ValidationError (bad arguments), ToolError (the tool failed) or any other exception
    (the server crashed). `release` drops every resource held for the session (engines,
    processes) so its files can be copied, replaced or removed; the next call reacquires them.
    """

    async def list_tools(self, session: HostedSession) -> list[Tool]: ...

    async def call_tool(
        self, session: HostedSession, tool: str, arguments: dict[str, Any]
    ) -> ToolResult: ...

    async def release(self, session: HostedSession) -> None: ...


class ModuleRuntime:
    """One FastMCP instance per loaded module version, shared by all sessions placed here."""

    def __init__(self, registry: Registry) -> None:
        self.registry = registry
        self._records: dict[tuple[str, int], MCPRecord] = {}
        self._pkgs: dict[tuple[str, int], str] = {}

    def record(self, mcp_id: str, version: int) -> MCPRecord:
        key = (mcp_id, version)
        if key not in self._records:
            self._records[key] = self.registry.get(mcp_id, version)
        return self._records[key]

    def server(self, mcp_id: str, version: int) -> FastMCP:
        pkg = self._pkgs.get((mcp_id, version))
        if pkg is not None and (server := loader.loaded(pkg)) is not None:
            return server  # the hot path: no registry query, no source check
        rec = self.record(mcp_id, version)
        folder = self.registry.source_folder(rec)
        server, pkg = loader.load_server(mcp_id, version, folder, rec.entry, rec.source_hash[:10])
        self._pkgs[(mcp_id, version)] = pkg
        return server

    def _allowed(self, rec: MCPRecord) -> set[str] | None:
        certified = rec.metadata.get("certified_tools") if rec.kind == MCPKind.BUNDLE else None
        return set(certified) if certified else None

    async def list_tools(self, session: HostedSession) -> list[Tool]:
        tools = list(await self.server(session.mcp_id, session.version).list_tools())
        allowed = self._allowed(self.record(session.mcp_id, session.version))
        return [t for t in tools if allowed is None or t.name in allowed]

    async def call_tool(
        self, session: HostedSession, tool: str, arguments: dict[str, Any]
    ) -> ToolResult:
        allowed = self._allowed(self.record(session.mcp_id, session.version))
        if allowed is not None and tool not in allowed:
            # An uncertified tool of a partially certified bundle does not exist for agents.
            raise FastMCPNotFound(f"Unknown tool: {tool!r}")
        server = self.server(session.mcp_id, session.version)
        with bind_session(session.binding()):
            return await server.call_tool(tool, arguments)

    async def release(self, session: HostedSession) -> None:
        # Hooks may close files/engines synchronously; keep them off the event loop.
        await asyncio.to_thread(release_session, session.session_id)

    def unload_unused(self, in_use: set[tuple[str, int]]) -> int:
        """Drop module versions no loaded session uses (offload of module state)."""
        dropped = 0
        for key, pkg in list(self._pkgs.items()):
            if key not in in_use:
                loader.unload(pkg)
                del self._pkgs[key]
                dropped += 1
        return dropped
