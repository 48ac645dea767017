"""The MegaMCP side of weft-tasks: a client (embedded host or a running one), bundle
registration, and a `ToolCaller` over one session group.

Atomic-task validation and the reachability replay both run real MCP calls through MegaMCP
sessions, so the evidence is what an agent's rollout would produce.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from weft_megamcp.models import CallResult, GroupHandle
from weft_megamcp.service import GroupService
from weft_tasks.atomic.execution import ToolReturn
from weft_tasks.exceptions import ExecutionError


@asynccontextmanager
async def megamcp_client(
    url: str | None = None,
    admin_token: str | None = None,
    *,
    data_dir: Path | None = None,
    subprocess: bool = False,
) -> AsyncIterator[Any]:
    """A `MegaMCPClient`: to the host at `url`, or to an embedded host started (and stopped) here
    whose registry and object store live in `data_dir` (so the snapshots it stores outlive it)."""
    try:
        from weft_megamcp.client import MegaMCPClient
        from weft_megamcp.host import MegaMCPHost
        from weft_megamcp.settings import MegaMCPSettings
    except ImportError as exc:  # part of the workspace: a broken install is a runtime failure
        raise ExecutionError(f"weft-megamcp client SDK unavailable: {exc}") from None
    if url:
        client = MegaMCPClient(url, admin_token or "")
        try:
            yield client
        finally:
            await _aclose(client)
        return
    settings = MegaMCPSettings(data_dir=data_dir) if data_dir is not None else MegaMCPSettings()
    # a host in its own process serves calls while this process samples and grounds
    async with MegaMCPHost.running(settings, subprocess=subprocess) as host:
        client = MegaMCPClient(host.url, host.admin_token)
        try:
            yield client
        finally:
            await _aclose(client)


async def _aclose(client: object) -> None:
    close = getattr(client, "aclose", None)
    if close is not None:
        await close()


class Registrar:
    """Registers each bundle once per client and remembers its MCP id."""

    def __init__(self, client: GroupService) -> None:
        self.client = client
        self._ids: dict[Path, str] = {}

    async def mcp_id(self, bundle_path: Path) -> str:
        key = bundle_path.resolve()
        if key not in self._ids:
            rec = await self.client.register(str(key))
            self._ids[key] = rec.mcp_id
        return self._ids[key]


class GroupCaller:
    """`ToolCaller` over a session group: `mcp` names the library MCP, mapped to its MCP id."""

    def __init__(self, client: GroupService, group: GroupHandle, mcp_ids: dict[str, str]) -> None:
        self.client = client
        self.group = group
        self.mcp_ids = mcp_ids
        self.calls = 0

    async def call(self, mcp: str, tool: str, arguments: dict[str, Any]) -> ToolReturn:
        self.calls += 1
        res = await self.client.call_tool(self.group, self.mcp_ids.get(mcp, mcp), tool, arguments)
        return to_return(res)


def to_return(res: CallResult) -> ToolReturn:
    """A CallResult as the reference engine reads it: structured content, else JSON text, else text."""
    text = res.text
    value = res.structured
    if value is None and text:
        try:
            value = json.loads(text)
        except ValueError:
            value = text
    return ToolReturn(is_error=bool(res.is_error), value=value, text=text)


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()
