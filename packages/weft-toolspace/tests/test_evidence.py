"""The mined graph as weft-tasks' execution evidence: data and state edges lifted from nodes to
tools with tool-level weights; retry edges left out."""

from __future__ import annotations

from weft_core.models import ExecutionEvidence
from weft_toolspace.evidence import evidence_of
from weft_toolspace.graph import ToolGraph
from weft_toolspace.models import EdgeKind, EdgeRecord, NodeRecord


def test_edges_are_lifted_to_tools_and_retries_left_out() -> None:
    def node(key: str, mcp: str, tool: str, count: int) -> NodeRecord:
        return NodeRecord(key=key, mcp=mcp, tool=tool, argument_names=[], count=count)

    nodes = {
        # two argument configurations of one tool: 3 + 1 calls of fs/read
        "r1": node("r1", "fs", "read", 3),
        "r2": node("r2", "fs", "read", 1),
        "c": node("c", "mem", "create", 2),
        "x": node("x", "fs", "info", 2),
    }

    def edge(src: str, dst: str, kind: EdgeKind, n: int) -> EdgeRecord:
        return EdgeRecord(source=src, target=dst, kind=kind, count=n, weight=n / nodes[src].count)

    graph = ToolGraph(
        nodes=nodes,
        edges=[
            edge("r1", "c", EdgeKind.DATA, 2),
            edge("r2", "c", EdgeKind.DATA, 1),
            edge("r1", "c", EdgeKind.STATE, 1),
            edge("r2", "x", EdgeKind.RETRY, 1),
        ],
    )
    ev = evidence_of(graph, source="hand-built")
    got = {(e.source_tool, e.target_tool, e.kind): (e.count, e.weight) for e in ev.edges}
    # N_ij = 2 + 1 over N_i = 3 + 1 calls of fs/read, whatever their arguments
    assert got == {("read", "create", "data"): (3, 0.75), ("read", "create", "state"): (1, 0.25)}
    assert ev.edges[0].kind == "data"  # heaviest first
    assert ExecutionEvidence.model_validate_json(ev.model_dump_json()) == ev
