"""Helpers for tests and examples. `record_staff_episode`: a small recorded episode on the real
`sqlite` and `memory` servers, for code that needs traces to mine without running the explorer: a
table created, a row written and read back, an entity created and opened (the servers must be
registered on the host, `servers.register`). `FakeMegaMCP`: the part of a MegaMCP client a walk
uses, over in-memory state with real snapshot/restore semantics, for walk control-flow tests."""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from weft_megamcp.client import MegaMCPClient
from weft_toolspace.models import TraceRecord
from weft_toolspace.traces import from_group_ledger

__all__ = ["FakeMegaMCP", "record_staff_episode"]


async def record_staff_episode(client: MegaMCPClient, name: str, trace_id: str) -> TraceRecord:
    """Run the episode for staff member `name` in a fresh session group; its ledger as a trace."""
    calls: list[tuple[str, str, dict[str, Any]]] = [
        ("sqlite", "create_table", {"query": "CREATE TABLE staff (id INTEGER PRIMARY KEY, name TEXT)"}),
        ("sqlite", "write_query", {"query": f"INSERT INTO staff (name) VALUES ('{name}')"}),
        ("sqlite", "read_query", {"query": "SELECT * FROM staff"}),
        (
            "memory",
            "create_entities",
            {"entities": [{"name": name, "entityType": "person", "observations": ["staff"]}]},
        ),
        ("memory", "open_nodes", {"names": [name]}),
    ]  # fmt: skip
    group = await client.create_group(["sqlite", "memory"])
    try:
        for mcp, tool, args in calls:
            await client.call_tool(group, mcp, tool, args)
        return from_group_ledger(await client.ledger(group), trace_id=trace_id)
    finally:
        await client.close(group)


@dataclass
class FakeResult:
    is_error: bool
    structured: Any
    text: str


@dataclass
class FakeEntry:
    mutated: bool


class FakeMegaMCP:
    """One call log per group; every call succeeds, mutates and appends to it; snapshots copy it."""

    def __init__(self) -> None:
        self.state: dict[str, list[str]] = {}
        self.snaps: dict[str, list[str]] = {}
        self._last = ""

    async def create_group(self, mcps: list[str]) -> str:
        self.state["g"] = []
        return "g"

    async def snapshot(self, group: str) -> str:
        sid = f"s{len(self.snaps)}"
        self.snaps[sid] = copy.deepcopy(self.state[group])
        return sid

    async def restore(self, group: str, sid: str) -> None:
        self.state[group] = copy.deepcopy(self.snaps[sid])

    async def call_tool(self, group: str, mcp: str, tool: str, args: dict[str, Any]) -> FakeResult:
        self.state[group].append(tool)
        self._last = mcp
        return FakeResult(False, {"done": tool}, tool)

    async def ledger(self, group: str) -> dict[str, list[FakeEntry]]:
        return {self._last: [FakeEntry(mutated=True)]}

    async def close(self, group: str) -> None:
        self.state.pop(group, None)
