"""Algorithm 1 end to end on a MegaMCP host: record traces from the real servers, mine and prune
the graph (state edges by counterfactual replay), cluster, walk, synthesize. Each stage reads and
writes plain JSON artifacts so the CLI can run them one at a time."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, Field

from weft_toolspace import servers
from weft_toolspace.clusters import cluster, environment_of
from weft_toolspace.counterfactual import witness_all
from weft_toolspace.environments import materialise, register_bundles
from weft_toolspace.exceptions import ToolSpaceUserError
from weft_toolspace.explore import explore
from weft_toolspace.export import SNAPSHOTS, store_initial_state
from weft_toolspace.graph import ToolGraph, build_graph
from weft_toolspace.models import EdgeKind, TraceRecord
from weft_toolspace.synthesize import synthesize
from weft_toolspace.teacher import teach
from weft_toolspace.walk import WalkConfig, Walker
from weft_toolspace.writers import TaskWriter

if TYPE_CHECKING:
    from weft_megamcp import MegaMCPClient

# Who drives the servers while recording: the random explorer or the workflow teacher.
Recorder = Literal["explorer", "teacher"]


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
    bundles: dict[str, Path] | None = None,
    recorder: Recorder = "explorer",
) -> list[TraceRecord]:
    """Drive the real servers `names` and the envsynth `bundles` ({mcp name: bundle folder},
    e.g. the example MCPs from `environments.example_bundles`) hosted side by side, with the
    random programmatic explorer (`explore`) or the workflow teacher (`teacher`)."""
    ids = await servers.register(client, names, home)
    ids |= await register_bundles(client, bundles or {})
    records = [await client.mcp(i) for i in ids.values()]
    policy = teach if recorder == "teacher" else explore
    return await policy(
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
    hosted: set[str] | None = None,
) -> ToolGraph:
    """G_TS; with a client, state edges are witnessed on the hosted servers (else none): every
    trace, or with `hosted` only those whose servers are all in it (a server known only from
    traces has nothing to replay on)."""
    witnessed = [t for t in traces if hosted is None or {c.mcp for c in t.calls} <= hosted]
    pairs = await witness_all(client, witnessed) if client is not None else set()
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


class ToolSpaceRun(BaseModel):
    """What one run of Algorithm 1 produced: counts per stage and the exported task ids."""

    traces: int = 0
    calls: int = 0
    edges: dict[str, int] = Field(default_factory=dict)
    environments: int = 0
    walks_tried: int = 0
    walks_kept: int = 0
    rollbacks: int = 0
    tasks: list[str] = Field(default_factory=list, description="Ids under tasks/ in the folder.")
    rejected: dict[str, int] = Field(default_factory=dict)
    duplicates: int = 0
    materialised: dict[str, list[str]] = Field(
        default_factory=dict,
        description="Servers run as envsynth bundles, from a seeded s_0, and by a replay server.",
    )


async def run_toolspace(
    client: MegaMCPClient,
    folder: Path,
    *,
    names: list[str],
    home: Path,
    traces: list[TraceRecord] | None = None,
    episodes: int = 16,
    steps: int = 20,
    walk: WalkConfig | None = None,
    min_count: int = 2,
    min_weight: float = 0.05,
    resolution: float = 2.0,
    writer: TaskWriter | None = None,
    bundles: dict[str, Path] | None = None,
) -> ToolSpaceRun:
    """Algorithm 1 on `client`: record `episodes` on the real servers `names` (or mine the given
    `traces`), mine with witnessed state edges, cluster, walk, synthesize; the accepted tasks
    are exported with their stored s_0 under `folder` (tasks/, snapshots/), next to
    traces.jsonl, graph.json, environments.json and chains.jsonl. `bundles` ({name: envsynth
    bundle}, e.g. example MCPs) are hosted and explored alongside the real servers; servers the
    traces call that are neither get a bundle from their recorded definitions
    (`environments.materialise`)."""
    cfg = walk or WalkConfig()
    bundles = dict(bundles or {})
    if traces is None:
        traces = await record(
            client, names, home, episodes=episodes, steps=steps, seed=cfg.seed, bundles=bundles
        )
        hostable = set(names) | set(bundles)
    else:
        used = {c.mcp for t in traces for c in t.calls}
        if "" in used:
            raise ToolSpaceUserError("traces call tools of no named server (mcp '')")
        real = sorted(used & set(servers.SPECS))
        await servers.register(client, real, home)
        await register_bundles(client, {m: p for m, p in bundles.items() if m in used})
        hostable = set(real) | (set(bundles) & used)
    save_traces(traces, folder / "traces.jsonl")
    graph = await mine(client, traces, min_count=min_count, min_weight=min_weight, hosted=hostable)
    save_json(graph.model_dump(mode="json"), folder / "graph.json")
    envs = cluster(graph, seed=cfg.seed, resolution=resolution)
    save_json([e.model_dump(mode="json") for e in envs], folder / "environments.json")
    mat = await materialise(client, envs, traces, folder, hosted=hostable, bundles=bundles)
    initial = await store_initial_state(
        client,
        sorted({n.mcp for n in graph.nodes.values()}),
        folder / SNAPSHOTS,
        seeds=mat.seeds,
        bundles=mat.bundles,
    )
    walker = Walker(client, graph, environment_of(envs), cfg, initial=initial)
    chains = await walker.run()
    (folder / "chains.jsonl").write_text(
        "".join(c.model_dump_json() + "\n" for c in chains), encoding="utf-8"
    )
    tasks, stats = await synthesize(
        client, chains, writer=writer, export_to=folder, initial=initial
    )
    kinds = Counter(e.kind.value for e in graph.edges)
    return ToolSpaceRun(
        traces=len(traces),
        calls=sum(len(t.calls) for t in traces),
        edges={k.value: kinds.get(k.value, 0) for k in EdgeKind},
        environments=len(envs),
        walks_tried=walker.stats.tried,
        walks_kept=walker.stats.kept,
        rollbacks=walker.stats.rollbacks,
        tasks=[g.id for g in tasks],
        rejected=dict(stats.rejected),
        duplicates=stats.duplicates,
        materialised=mat.summary(),
    )
