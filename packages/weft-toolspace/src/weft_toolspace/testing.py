"""A small recorded episode on the real `sqlite` and `memory` servers, for tests and examples that
need traces to mine without running the explorer: a table created, a row written and read back,
an entity created and opened. The servers must be registered on the host (`servers.register`)."""

from __future__ import annotations

from typing import Any

from weft_megamcp.client import MegaMCPClient
from weft_toolspace.models import TraceRecord
from weft_toolspace.traces import from_group_ledger

__all__ = ["record_staff_episode"]


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
