"""The workflow teacher on real servers (npm memory, PyPI sqlite and time) in MegaMCP's command
tier: the ledger records real executions, and most adjacent calls carry a value the earlier call
returned (the data flow long walks are mined from)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from weft_toolspace import servers
from weft_toolspace.graph import data_links
from weft_toolspace.teacher import teach

pytestmark = [pytest.mark.integration, pytest.mark.slow]


async def test_teacher_records_real_multi_server_work(megamcp: Any, server_home: Path) -> None:
    ids = await servers.register(megamcp, ["memory", "sqlite", "time"], server_home)
    records = [await megamcp.mcp(i) for i in ids.values()]
    traces = await teach(megamcp, records, episodes=2, steps=12, seed=4, servers_per_episode=3)
    calls = [c for t in traces for c in t.calls]
    assert len(calls) == 24 and {c.mcp for c in calls} == set(ids.values())
    assert all((c.result is not None) != (c.error is not None) for c in calls)
    assert sum(c.ok for c in calls) >= 20 and any(c.mutated for c in calls)
    pairs = [(a, b) for t in traces for a, b in zip(t.calls, t.calls[1:], strict=False)]
    carried = [b.tool for a, b in pairs if data_links(a, b)]
    assert len(carried) >= len(pairs) // 3, carried
    assert len({(a.mcp, b.mcp) for a, b in pairs if a.mcp != b.mcp and data_links(a, b)}) >= 2
