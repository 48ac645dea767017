"""The "Pro" upgrade of a benchmark-like environment (§5): given an environment (a set of servers)
and the graph mined from its traces together with other recorded servers' traces, link in the
outside tools that share a data or state relation with the environment's tools, then walk the
expanded cluster with larger L and K than the environment's own walks and reverse-synthesize
tasks as the normal path does (replay from s_0, dedup, export).

Linking follows witnessed relations only: an outside node joins when a data or state edge joins
it to a node already in (either direction), `hops` times over; a retry edge links nothing (an
error then another tool is not a relation between the two tools' data or state). The expanded
graph keeps every edge, of any kind, whose two ends are in. The environment's own walk (base L,
K on its own tools) is run next to the Pro walk so the two can be compared.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel, Field

from weft_toolspace.clusters import cluster, environment_of
from weft_toolspace.exceptions import ToolSpaceUserError
from weft_toolspace.graph import ToolGraph
from weft_toolspace.models import Chain, EdgeKind
from weft_toolspace.synthesize import synthesize
from weft_toolspace.walk import WalkConfig, Walker
from weft_toolspace.writers import TaskWriter

if TYPE_CHECKING:
    from weft_megamcp import MegaMCPClient

LINKING = (EdgeKind.DATA, EdgeKind.STATE)


class ProConfig(BaseModel):
    """How far the environment is expanded and how much harder its walks become."""

    length_factor: float = Field(
        default=2.0,
        ge=1.0,
        description="Pro walks have ceil(x this) the base walks' least and most calls (paper: "
        "larger L).",
    )
    extra_environments: int = Field(
        default=1, ge=0, description="Pro walks cross K + this environments (paper: larger K)."
    )
    hops: int = Field(
        default=1,
        ge=1,
        description="Rounds of linking: outside tools related to a tool already linked join too.",
    )

    def walk(self, base: WalkConfig) -> WalkConfig:
        return base.model_copy(
            update={
                "min_length": math.ceil(base.min_length * self.length_factor),
                "max_length": math.ceil(base.max_length * self.length_factor),
                "environments": base.environments + self.extra_environments,
            }
        )


class LinkedTool(BaseModel):
    """An outside node linked into the environment, and the witnessed edges that linked it."""

    node: str
    mcp: str
    tool: str
    hop: int = Field(description="1: related to an environment tool; 2: to a hop-1 tool; ...")
    via: list[str] = Field(description="'source -kind-> target' of each linking edge.")


class ProEnvironment(BaseModel):
    servers: list[str] = Field(description="The environment's own servers.")
    base_nodes: list[str]
    linked: list[LinkedTool]
    graph: ToolGraph = Field(description="The expanded graph: environment and linked nodes.")

    @property
    def linked_servers(self) -> list[str]:
        return sorted({t.mcp for t in self.linked} - set(self.servers))


def subgraph(graph: ToolGraph, keep: set[str]) -> ToolGraph:
    return ToolGraph(
        nodes={k: n for k, n in graph.nodes.items() if k in keep},
        edges=[e for e in graph.edges if e.source in keep and e.target in keep],
        pairs=graph.pairs,
        pruned=dict(graph.pruned),
    )


def link_outside(graph: ToolGraph, servers: list[str], *, hops: int = 1) -> ProEnvironment:
    """The environment of `servers` in `graph` with the outside tools its data and state
    relations reach in `hops` rounds."""
    own = set(servers)
    base = {k for k, n in graph.nodes.items() if n.mcp in own}
    if not base:
        known = sorted({n.mcp for n in graph.nodes.values()})
        raise ToolSpaceUserError(
            f"no tool of {', '.join(sorted(own))} in the graph (its servers: {', '.join(known)})"
        )
    inside = set(base)
    linked: dict[str, LinkedTool] = {}
    for hop in range(1, hops + 1):
        found: dict[str, list[str]] = {}
        for e in graph.edges:
            if e.kind not in LINKING:
                continue
            for near, far in ((e.source, e.target), (e.target, e.source)):
                if near in inside and far not in inside:
                    found.setdefault(far, []).append(f"{e.source} -{e.kind.value}-> {e.target}")
        if not found:
            break
        for key, via in sorted(found.items()):
            n = graph.nodes[key]
            linked[key] = LinkedTool(node=key, mcp=n.mcp, tool=n.tool, hop=hop, via=sorted(via))
        inside |= set(found)
    return ProEnvironment(
        servers=sorted(own),
        base_nodes=sorted(base),
        linked=list(linked.values()),
        graph=subgraph(graph, inside),
    )


class WalkFigures(BaseModel):
    min_length: int = Field(description="Least calls of a kept walk.")
    max_length: int = Field(description="L of the walks: most calls.")
    environments: int = Field(description="K of the walks.")
    tools: int = Field(description="Nodes the walks could use.")
    tried: int
    kept: int
    rollbacks: int
    discarded: dict[str, int] = Field(default_factory=dict)
    calls: int = Field(description="Calls over the kept chains.")
    environments_covered: int = Field(description="Distinct environments the kept chains cross.")
    environments_per_chain: float = Field(description="Mean environments a kept chain crosses.")
    servers_covered: list[str] = Field(default_factory=list)


class ProRun(BaseModel):
    """What one Pro upgrade produced, next to the environment's own walk."""

    servers: list[str]
    linked: list[LinkedTool]
    linked_servers: list[str]
    base: WalkFigures
    pro: WalkFigures
    tasks: list[str] = Field(default_factory=list, description="Ids of the exported Pro tasks.")
    rejected: dict[str, int] = Field(default_factory=dict)
    duplicates: int = 0


async def walk_environment(
    client: MegaMCPClient, graph: ToolGraph, env_of: dict[str, str], cfg: WalkConfig
) -> tuple[list[Chain], WalkFigures]:
    """Walks of `cfg` on `graph` (`env_of`: node -> environment), with what they covered."""
    walker = Walker(client, graph, env_of, cfg)
    chains = await walker.run()
    s = walker.stats
    return chains, WalkFigures(
        min_length=cfg.min_length,
        max_length=cfg.max_length,
        environments=cfg.environments,
        tools=len(graph.nodes),
        tried=s.tried,
        kept=s.kept,
        rollbacks=s.rollbacks,
        discarded=dict(s.discarded),
        calls=sum(len(c.steps) for c in chains),
        environments_covered=len({e for c in chains for e in c.environments}),
        environments_per_chain=(
            sum(len(c.environments) for c in chains) / len(chains) if chains else 0.0
        ),
        servers_covered=sorted({st.mcp for c in chains for st in c.steps}),
    )


async def run_pro(
    client: MegaMCPClient,
    graph: ToolGraph,
    servers: list[str],
    folder: Path,
    *,
    base: WalkConfig,
    pro: ProConfig | None = None,
    resolution: float = 2.0,
    writer: TaskWriter | None = None,
) -> ProRun:
    """Link outside tools into the environment of `servers`, walk it as it is (`base`) and
    expanded with Pro's L and K, synthesize the Pro chains into tasks exported under `folder`
    (tasks/, snapshots/, next to graph.json, base-chains.jsonl, chains.jsonl and pro.json). The
    client must host every server of `graph`'s linked nodes."""
    pro = pro or ProConfig()
    env = link_outside(graph, servers, hops=pro.hops)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "graph.json").write_text(env.graph.model_dump_json(indent=1), encoding="utf-8")
    # one clustering of the expanded graph for both walks, so their environments are the same
    env_of = environment_of(cluster(env.graph, seed=base.seed, resolution=resolution))
    own = subgraph(graph, set(env.base_nodes))
    base_chains, base_figures = await walk_environment(client, own, env_of, base)
    chains, pro_figures = await walk_environment(client, env.graph, env_of, pro.walk(base))
    # Pro tasks are named apart from the environment's own (a task id is its chain's id)
    chains = [c.model_copy(update={"id": f"pro-{c.id}"}) for c in chains]
    for name, cs in (("base-chains.jsonl", base_chains), ("chains.jsonl", chains)):
        (folder / name).write_text("".join(c.model_dump_json() + "\n" for c in cs), "utf-8")
    tasks, stats = await synthesize(client, chains, writer=writer, export_to=folder)
    run = ProRun(
        servers=env.servers,
        linked=env.linked,
        linked_servers=env.linked_servers,
        base=base_figures,
        pro=pro_figures,
        tasks=[g.id for g in tasks],
        rejected=dict(stats.rejected),
        duplicates=stats.duplicates,
    )
    (folder / "pro.json").write_text(run.model_dump_json(indent=1), encoding="utf-8")
    return run
