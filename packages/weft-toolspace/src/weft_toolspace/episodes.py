"""Recording episodes: a recording policy drives a fresh MegaMCP group over a random subset of the
hosted servers, and the group's ledger becomes one trace (the real executions the graph is mined
from). The explorer and the workflow teacher are two such policies."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from weft_toolspace.models import TraceRecord
from weft_toolspace.traces import from_group_ledger, parse_value

if TYPE_CHECKING:
    from weft_megamcp import MegaMCPClient
    from weft_megamcp.registry import MCPRecord

# mcp id -> [(tool name, input schema)] of the tools a policy may call in an episode
ToolMenu = dict[str, list[tuple[str, dict[str, Any]]]]


class RecordingPolicy(Protocol):
    """Chooses each call of an episode from what earlier calls returned.

    `next_call` returns (mcp id, tool, arguments) of a tool in the episode's menu; `observe` is
    told how that call went: the parsed result (or the error text) and whether it succeeded.
    """

    def next_call(self) -> tuple[str, str, dict[str, Any]]: ...

    def observe(self, mcp: str, tool: str, args: dict[str, Any], result: Any, ok: bool) -> None: ...


def considered(description: str) -> bool:
    """Tools an agent reading the descriptions would pick for text work: not the deprecated ones,
    not readers of images and audio."""
    d = description.lower()
    return "deprecated" not in d and not ("image" in d and "audio" in d)


async def record_episodes(
    client: MegaMCPClient,
    records: list[MCPRecord],
    policy_for: Callable[[ToolMenu, int], RecordingPolicy],
    *,
    label: str,
    episodes: int,
    steps: int,
    seed: int,
    servers_per_episode: int,
    on_episode: Callable[[TraceRecord], None] | None = None,
) -> list[TraceRecord]:
    """Run `episodes` fresh groups over random subsets of the servers, each driven by
    `policy_for(menu, episode seed)`; returns their ledgers as traces `<label>-<seed>-<n>` (each
    group is closed in a `finally`)."""
    rng = random.Random(seed)
    traces: list[TraceRecord] = []
    for ep in range(episodes):
        chosen = rng.sample(records, min(servers_per_episode, len(records)))
        menu: ToolMenu = {
            r.mcp_id: [
                (t.name, dict(t.input_schema)) for t in r.tools if considered(t.description or "")
            ]
            for r in chosen
        }
        policy = policy_for(menu, seed * 1000 + ep)
        group = await client.create_group([r.mcp_id for r in chosen])
        try:
            for _ in range(steps):
                mcp, tool, args = policy.next_call()
                res = await client.call_tool(group, mcp, tool, args)
                if res.is_error:
                    policy.observe(mcp, tool, args, res.text, False)
                    continue
                value = parse_value(res.structured if res.structured is not None else res.text)
                policy.observe(mcp, tool, args, value if value is not None else res.text, True)
            ledger = await client.ledger(group)
        finally:
            await client.close(group)
        trace = from_group_ledger(ledger, trace_id=f"{label}-{seed}-{ep}")
        traces.append(trace)
        if on_episode is not None:
            on_episode(trace)
    return traces
