"""Environments (§4.1.3): Louvain communities of the weighted undirected projection, each typed by
whether its tools mutate state (operation), read state their server keeps (state-query), or keep
none (stateless)."""

from __future__ import annotations

from networkx.algorithms.community import louvain_communities

from weft_toolspace.graph import ToolGraph
from weft_toolspace.models import Environment, EnvironmentKind

_MATERIALISE = {
    EnvironmentKind.OPERATION: (
        "operation: a database for its tools (the hosted server's own session state; "
        "a weft-envsynth bundle for tools without a server)"
    ),
    EnvironmentKind.STATE_QUERY: "state-query: initial snapshot s_0 seeded from recorded outputs",
    EnvironmentKind.STATELESS: "stateless: cached results of matching calls are replayed",
}


def cluster(graph: ToolGraph, *, seed: int = 0, resolution: float = 1.0) -> list[Environment]:
    g = graph.undirected()
    if g.number_of_nodes() == 0:
        return []
    communities = louvain_communities(g, weight="weight", seed=seed, resolution=resolution)
    stateful_servers = {n.mcp for n in graph.nodes.values() if n.mutations}
    envs: list[Environment] = []
    for i, members in enumerate(sorted(communities, key=lambda c: sorted(c))):
        nodes = sorted(members)
        recs = [graph.nodes[n] for n in nodes]
        if any(r.mutations for r in recs):
            kind = EnvironmentKind.OPERATION
        elif any(r.mcp in stateful_servers for r in recs):
            kind = EnvironmentKind.STATE_QUERY
        else:
            kind = EnvironmentKind.STATELESS
        envs.append(
            Environment(
                id=f"env-{i}",
                kind=kind,
                mcps=sorted({r.mcp for r in recs}),
                nodes=nodes,
                materialisation=_MATERIALISE[kind],
            )
        )
    return envs


def environment_of(envs: list[Environment]) -> dict[str, str]:
    return {n: e.id for e in envs for n in e.nodes}
