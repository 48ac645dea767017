"""Offline check of the workflow teacher (no servers, seconds): teacher episodes on the in-memory
imitation of the real servers that `tests/test_teacher.py` uses (`World`: filesystem, memory,
sqlite, git, time and a helpdesk, answering as the real servers do, simplified), state edges
witnessed by replaying each pair with and without the earlier call on a copy of that imitation,
mined with the package's rules (min-count 2), clustered (resolution 2.0) and walked with the
package's walker (default WalkConfig: lengths 5..30, repeat_weight 0, K = 2) on a fake client over
the same imitation. Not the benchmark: the real servers, the example MCPs and acceptance by replay
are `run.py --recorder teacher`. It shows what the recording policy gives the walk before an
expensive real run.

Run: uv run python benchmarks/toolspace/offline_teacher.py [--episodes 32 --steps 24 --seeds 1,2,3]
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import json
import statistics
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parents[2] / "packages" / "weft-toolspace" / "tests"))

from test_teacher import MUTATES, World, episode  # type: ignore[import-not-found]

from weft_toolspace.clusters import cluster, environment_of
from weft_toolspace.graph import build_graph
from weft_toolspace.models import TraceRecord
from weft_toolspace.walk import WalkConfig, Walker


@dataclass
class _Result:
    is_error: bool
    structured: Any
    text: str


@dataclass
class _Entry:
    mutated: bool


class ImitationClient:
    """The part of a MegaMCP client a walk uses, over `World` (snapshots are copies)."""

    def __init__(self) -> None:
        self.world = World()
        self.snaps: dict[str, World] = {}
        self.last: dict[str, list[_Entry]] = {}

    async def create_group(self, mcps: Any, workspaces: Any = None) -> str:
        self.world = World()
        return "g"

    async def snapshot(self, group: str) -> str:
        sid = f"s{len(self.snaps)}"
        self.snaps[sid] = copy.deepcopy(self.world)
        return sid

    async def restore(self, group: str, sid: str) -> None:
        self.world = copy.deepcopy(self.snaps[sid])

    async def call_tool(self, group: str, mcp: str, tool: str, args: dict[str, Any]) -> _Result:
        ok, res = self.world.call(tool, args)
        self.last = {mcp: [_Entry(ok and tool in MUTATES)]}
        text = res if isinstance(res, str) else json.dumps(res)
        return _Result(not ok, None if isinstance(res, str) else res, text)

    async def ledger(self, group: str) -> dict[str, list[_Entry]]:
        return self.last

    async def close(self, group: str) -> None:
        return None


def witness(traces: list[TraceRecord]) -> set[tuple[str, int]]:
    """Counterfactual state pairs on the imitation (as `counterfactual.witness_state_edges`)."""
    pairs: set[tuple[str, int]] = set()
    for tr in traces:
        world = World()
        for t, call in enumerate(tr.calls):
            nxt = tr.calls[t + 1] if t + 1 < len(tr.calls) else None
            before = copy.deepcopy(world)
            world.call(call.tool, dict(call.arguments))
            if nxt is not None and call.mutated and call.ok and nxt.mcp == call.mcp:
                skipped = copy.deepcopy(before).call(nxt.tool, dict(nxt.arguments))
                if skipped != copy.deepcopy(world).call(nxt.tool, dict(nxt.arguments)):
                    pairs.add((tr.id, t))
    return pairs


async def one(seed: int, episodes: int, steps: int) -> dict[str, Any]:
    traces = [episode(seed * 1000 + k, steps) for k in range(episodes)]
    graph = build_graph(traces, state_pairs=witness(traces), min_count=2)
    envs = cluster(graph, seed=seed, resolution=2.0)
    walker = Walker(
        ImitationClient(), graph, environment_of(envs), WalkConfig(attempts=12, seed=seed)
    )
    chains = await walker.run()
    lengths = [len(c.steps) for c in chains]
    return {
        "seed": seed,
        "nodes": len(graph.nodes),
        "edges": dict(Counter(e.kind.value for e in graph.edges)),
        "clusters": len(envs),
        "kept": f"{walker.stats.kept} / {walker.stats.tried}",
        "ended": dict(walker.stats.ended),
        "calls_mean": round(statistics.mean(lengths), 2) if lengths else 0.0,
        "calls": lengths,
        "distinct_tools": [len({s.node for s in c.steps}) for c in chains],
        "envs": [len(c.environments) for c in chains],
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--episodes", type=int, default=32)
    p.add_argument("--steps", type=int, default=24)
    p.add_argument("--seeds", default="1,2,3,4,5,7")
    a = p.parse_args()
    for s in (int(x) for x in a.seeds.split(",")):
        print(json.dumps(asyncio.run(one(s, a.episodes, a.steps))))


if __name__ == "__main__":
    main()
