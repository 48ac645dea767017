"""Real servers (npm memory, PyPI time and sqlite) in MegaMCP's command tier, driven by the
exploring policy, so the ledger records real executions."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from weft_toolspace import servers
from weft_toolspace.explore import explore

pytestmark = [pytest.mark.integration, pytest.mark.slow]


async def test_explorer_records_real_executions(megamcp: Any, server_home: Path) -> None:
    ids = await servers.register(megamcp, ["memory", "sqlite"], server_home)
    records = [await megamcp.mcp(i) for i in ids.values()]
    assert {t.name for t in records[0].tools} >= {"create_entities", "read_graph"}
    traces = await explore(megamcp, records, episodes=1, steps=10, seed=3)
    calls = traces[0].calls
    assert len(calls) == 10 and {c.mcp for c in calls} <= set(ids.values())
    # Real servers answered: every call has a result or an error text, and something changed state.
    assert all((c.result is not None) != (c.error is not None) for c in calls)
    assert any(c.mutated for c in calls)


async def test_placeholders_give_each_session_its_own_memory_file(
    megamcp: Any, server_home: Path
) -> None:
    ids = await servers.register(megamcp, ["memory"], server_home)
    mem = ids["memory"]
    a = await megamcp.create_group([mem])
    b = await megamcp.create_group([mem])
    try:
        ent = {"name": "Ada", "entityType": "person", "observations": ["x"]}
        assert not (
            await megamcp.call_tool(a, mem, "create_entities", {"entities": [ent]})
        ).is_error
        graph_b = await megamcp.call_tool(b, mem, "read_graph", {})
        assert graph_b.structured["entities"] == []  # b does not see a's entity
        graph_a = await megamcp.call_tool(a, mem, "read_graph", {})
        assert graph_a.structured["entities"][0]["name"] == "Ada"
    finally:
        await megamcp.close(a)
        await megamcp.close(b)
