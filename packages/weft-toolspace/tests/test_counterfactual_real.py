"""State edges witnessed by counterfactual replay on forked sessions of the real memory server."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from weft_toolspace import servers
from weft_toolspace.counterfactual import witness_state_edges
from weft_toolspace.models import TraceCall, TraceRecord

pytestmark = [pytest.mark.integration, pytest.mark.slow]


async def test_skip_test_finds_state_edges_only_where_state_is_shared(
    megamcp: Any, server_home: Path
) -> None:
    mem = (await servers.register(megamcp, ["memory"], server_home))["memory"]
    ent = {"name": "Ada", "entityType": "person", "observations": ["x"]}

    def c(tool: str, args: dict[str, Any], mutated: bool) -> TraceCall:
        return TraceCall(mcp=mem, tool=tool, arguments=args, result={}, mutated=mutated)

    trace = TraceRecord(
        id="t",
        source="ledger",
        calls=[
            c("create_entities", {"entities": [ent]}, True),  # 0 -> 1: open_nodes sees Ada
            c("open_nodes", {"names": ["Ada"]}, False),
            c("create_entities", {"entities": [{**ent, "name": "Bob"}]}, True),  # 2 -> 3: no
            c("open_nodes", {"names": ["Ada"]}, False),
        ],
    )
    assert await witness_state_edges(megamcp, trace) == {("t", 0)}
