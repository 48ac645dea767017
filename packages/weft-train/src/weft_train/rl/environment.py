"""The state side of a rollout tree: G identical states forked from one, tool calls into a state,
and the atomic task's verifier on a state. `MegaMCPEnvironment` is the real one: a MegaMCP
session group per state, `fork` for candidates, server-side checkpoint verification."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from weft_core.models import LedgerEntry, TaskGraph
from weft_megamcp.client import MegaMCPClient
from weft_megamcp.models import GroupHandle
from weft_tasks.harness.mcp_tools import public_tool_name, split_tool_name
from weft_tasks.rollout.infra import is_infrastructure_error
from weft_train.rl.sampling import InfrastructureFailure, infrastructure_failure


@dataclass
class ToolOutcome:
    text: str  # what the policy sees
    entry: LedgerEntry | None  # the ledger's record of the call (None: it never reached a tool)


class TurnEnvironment(Protocol):
    """Contract: states are opaque handles. `root()` is the task's initial state; `fork(s, n)`
    gives n states identical to s (DB, workspace, ledger) that evolve independently; `call`
    runs one tool call in a state (tool errors come back as outcomes; infrastructure failures
    raise `InfrastructureFailure`); `checkpoint(s, node)` is the atomic task's verifier on s
    (True: completed); `release(s)` frees a state. `tools` maps each public tool name to its
    input schema."""

    @property
    def tools(self) -> Mapping[str, Mapping[str, Any]]: ...

    async def root(self) -> Any: ...

    async def fork(self, state: Any, n: int) -> list[Any]: ...

    async def call(self, state: Any, name: str, arguments: Any) -> ToolOutcome: ...

    async def checkpoint(self, state: Any, node_id: str) -> bool: ...

    async def release(self, state: Any) -> None: ...


class MegaMCPEnvironment:
    """One composed task on a MegaMCP host; every state is a session group."""

    def __init__(self, client: MegaMCPClient, graph: TaskGraph) -> None:
        self.client = client
        self.graph = graph
        self.tools: dict[str, dict[str, Any]] = {}

    async def root(self) -> GroupHandle:
        try:
            group = await self.client.create_group(
                self.graph.initial_dbs(),
                verifier=self.graph.verifier(),
                task_id=self.graph.id,
                workspaces=self.graph.initial_workspaces(),
            )
            if not self.tools:
                for mcp in self.graph.mcps:
                    for tool in await self.client.list_tools(group, mcp):
                        self.tools[public_tool_name(mcp, tool.name)] = dict(tool.input_schema)
        except Exception as exc:
            if is_infrastructure_error(exc):
                raise InfrastructureFailure(f"create group: {exc}") from exc
            raise
        return group

    async def fork(self, state: GroupHandle, n: int) -> list[GroupHandle]:
        try:
            return await self.client.fork(state, n)
        except Exception as exc:
            if is_infrastructure_error(exc):
                raise InfrastructureFailure(f"fork: {exc}") from exc
            raise

    async def call(self, state: GroupHandle, name: str, arguments: Any) -> ToolOutcome:
        where = split_tool_name(name, self.graph.mcps)
        if where is None or name not in self.tools:
            return ToolOutcome(f"Error: unknown tool {name!r}", None)
        if not isinstance(arguments, dict):
            return ToolOutcome("Error: arguments must be a JSON object", None)
        mcp, tool = where
        try:
            result = await self.client.call_tool(state, mcp, tool, arguments)
            ledger = await self.client.ledger(state)
        except Exception as exc:
            if is_infrastructure_error(exc):
                raise InfrastructureFailure(f"{name}: {exc}") from exc
            raise
        entry = ledger.get(mcp, [])[-1] if ledger.get(mcp) else None
        if entry is not None:
            bad = infrastructure_failure([entry])
            if bad:
                raise InfrastructureFailure(bad)
        text = result.text
        if result.structured is not None and not text:
            text = json.dumps(result.structured, default=str)
        return ToolOutcome(("Error: " if result.is_error else "") + text, entry)

    async def checkpoint(self, state: GroupHandle, node_id: str) -> bool:
        try:
            result = await self.client.checkpoint_verify(state, node_id)
        except Exception as exc:
            if is_infrastructure_error(exc):
                raise InfrastructureFailure(f"verify {node_id}: {exc}") from exc
            raise
        if result.error:
            raise InfrastructureFailure(f"verifier of {node_id} could not run: {result.error}")
        return bool(result.passed)

    async def release(self, state: GroupHandle) -> None:
        try:
            await self.client.close(state)
        except Exception as exc:  # a leaked group is reaped by the host; never fail a rollout
            if not is_infrastructure_error(exc):
                raise
