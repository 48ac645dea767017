"""Algorithm 1 end to end on a MegaMCP host: record traces from the real servers, mine and prune
the graph (state edges by counterfactual replay), cluster, walk, synthesize. Each stage reads and
writes plain JSON artifacts so the CLI can run them one at a time."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from weft_toolspace import servers
from weft_toolspace.counterfactual import witness_all
from weft_toolspace.explore import explore
from weft_toolspace.graph import ToolGraph, build_graph
from weft_toolspace.models import TraceRecord

if TYPE_CHECKING:
    from weft_megamcp import MegaMCPClient


@asynccontextmanager
async def hosted(data_dir: Path, server_home: Path | None = None) -> AsyncIterator[MegaMCPClient]:
    """A MegaMCP host on 127.0.0.1 for one pipeline run (stopped on exit).

    The real servers run in MegaMCP's bubblewrap sandbox, which shows a command only its own
    files: their install folder (`server_home`) is bound read-only so their venvs and
    node_modules resolve.
    """
    from weft_megamcp import MegaMCPClient, MegaMCPHost, MegaMCPSettings
    from weft_toolspace.settings import ToolSpaceSettings

    home = server_home or ToolSpaceSettings().server_home
    settings = MegaMCPSettings(data_dir=data_dir, sandbox_ro_paths=[home.resolve()])
    async with (
        MegaMCPHost.running(settings) as host,
        MegaMCPClient(host.url, host.admin_token) as client,
    ):
        yield client


async def record(
    client: MegaMCPClient,
    names: list[str],
    home: Path,
    *,
    episodes: int,
    steps: int,
    seed: int,
    servers_per_episode: int = 4,
) -> list[TraceRecord]:
    ids = await servers.register(client, names, home)
    records = [await client.mcp(i) for i in ids.values()]
    return await explore(
        client,
        records,
        episodes=episodes,
        steps=steps,
        seed=seed,
        servers_per_episode=servers_per_episode,
    )


async def mine(
    client: MegaMCPClient | None,
    traces: list[TraceRecord],
    *,
    min_count: int = 2,
    min_weight: float = 0.05,
) -> ToolGraph:
    """G_TS; with a client, state edges are witnessed on the hosted servers (else none)."""
    pairs = await witness_all(client, traces) if client is not None else set()
    return build_graph(traces, state_pairs=pairs, min_count=min_count, min_weight=min_weight)


def save_traces(traces: list[TraceRecord], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text("".join(t.model_dump_json() + "\n" for t in traces), encoding="utf-8")
    tmp.replace(path)


def save_json(obj: object, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(obj, indent=1, default=str), encoding="utf-8")
    tmp.replace(path)
