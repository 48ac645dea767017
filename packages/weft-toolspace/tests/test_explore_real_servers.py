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


async def test_explorer_drives_example_mcp_bundles_next_to_real_servers(
    megamcp: Any, server_home: Path, tmp_path: Path
) -> None:
    """The example MCPs (examples/mcps, synthesized into envsynth bundles, hosted in the bundle
    tier) are explored with a real server; ids their results show are carried into `<x>_id`
    arguments, so the mined graph has example-MCP data edges."""
    from weft_toolspace.environments import example_bundles
    from weft_toolspace.graph import build_graph
    from weft_toolspace.models import EdgeKind
    from weft_toolspace.pipeline import record

    bundles = example_bundles(["crm", "helpdesk"], tmp_path / "bundles")
    traces = await record(
        megamcp,
        ["memory"],
        server_home,
        episodes=4,
        steps=12,
        seed=5,
        servers_per_episode=3,
        bundles=bundles,
    )
    calls = [c for t in traces for c in t.calls]
    assert {"crm", "helpdesk", "memory"} <= {c.mcp for c in calls}
    ids = [c for c in calls if c.ok and any(a.endswith("_id") for a in c.arguments)]
    assert ids, "no call took an id a result had shown"
    graph = build_graph(traces, min_count=1)
    routed = [
        e
        for e in graph.edges
        if e.kind is EdgeKind.DATA
        and graph.nodes[e.target].mcp in bundles
        and any(link.argument.endswith("_id") for link in e.links)
    ]
    assert routed, [f"{e.source} -> {e.target}" for e in graph.edges]
