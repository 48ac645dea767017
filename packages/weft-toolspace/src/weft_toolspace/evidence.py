"""The mined graph as execution evidence for weft-tasks' coverage-aware sampler (issue 16 item 6):
its witnessed data and state edges, lifted from nodes (a tool with one argument configuration) to
tools, in weft-core's `ExecutionEvidence` so the sampler reads them without importing this package.

Retry edges are left out: a failure followed by another tool says the two tools can follow each
other, not that one feeds the other, which is what a combination of MCPs is ranked for. A tool's
weight is ToolSpace's N_ij / N_i at tool level: transitions between the two tools witnessing the
relation over the calls of the earlier tool (every argument configuration of it counted).
"""

from __future__ import annotations

from collections import Counter

from weft_core.models import ExecutionEvidence, WitnessedEdge
from weft_toolspace.graph import ToolGraph
from weft_toolspace.models import EdgeKind

WITNESSING = (EdgeKind.DATA, EdgeKind.STATE)


def evidence_of(graph: ToolGraph, source: str) -> ExecutionEvidence:
    """The witnessed data and state edges of `graph` between tools, heaviest first."""
    calls: Counter[tuple[str, str]] = Counter()
    for n in graph.nodes.values():
        calls[(n.mcp, n.tool)] += n.count
    counts: Counter[tuple[str, str, str, str, EdgeKind]] = Counter()
    for e in graph.edges:
        if e.kind not in WITNESSING:
            continue
        a, b = graph.nodes[e.source], graph.nodes[e.target]
        counts[(a.mcp, a.tool, b.mcp, b.tool, e.kind)] += e.count
    edges = [
        WitnessedEdge(
            source_mcp=sm,
            source_tool=st,
            target_mcp=tm,
            target_tool=tt,
            kind=kind.value,
            count=n,
            weight=min(1.0, n / calls[(sm, st)]),
        )
        for (sm, st, tm, tt, kind), n in counts.items()
    ]
    edges.sort(key=lambda e: (-e.weight, e.source_mcp, e.source_tool, e.target_mcp, e.target_tool))
    return ExecutionEvidence(source=source, edges=edges)
