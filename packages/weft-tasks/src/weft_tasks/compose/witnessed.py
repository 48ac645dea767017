"""Execution-witnessed edges read against the libraries (ToolSpace §4.1.2 into the sampler).

An evidence edge names tools as the traces named them. Its ends are resolved to library MCPs:
an end whose server is a library MCP holding that tool is that MCP; any other end is every library
MCP that has a tool of that name (traces of a real `filesystem` server speak of `read_file`, which
the example `files` MCP also has). An end no library tool matches is dropped: nothing in the
libraries can be ranked by it. Witness weights of the same resolved pair add up, capped at 1.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from itertools import combinations, pairwise

from pydantic import BaseModel, Field

from weft_core.models import AtomicTask, ExecutionEvidence, TaskGraph

ToolRef = tuple[str, str]  # (library MCP, tool)


class GraphWitness(BaseModel):
    """How much of one composed graph real traces witnessed."""

    mcp_pairs: int = Field(description="Unordered pairs of distinct MCPs in the graph.")
    mcp_pairs_witnessed: int = Field(description="Of those, pairs with a witnessed edge.")
    tool_steps: int = Field(
        description="Adjacent tool pairs: inside each node's chain and across each graph edge "
        "(last tool upstream, first tool downstream)."
    )
    tool_steps_witnessed: int


class WitnessIndex:
    """Witness weights between library tools and between library MCPs."""

    def __init__(self, evidence: ExecutionEvidence, tools: Mapping[str, Iterable[str]]) -> None:
        self.source = evidence.source
        owners: dict[str, set[str]] = defaultdict(set)
        holds: dict[str, set[str]] = {}
        for mcp, names in tools.items():
            holds[mcp] = set(names)
            for name in holds[mcp]:
                owners[name].add(mcp)

        def resolve(mcp: str, tool: str) -> set[str]:
            if tool in holds.get(mcp, set()):
                return {mcp}
            return owners.get(tool, set())

        self.tools: dict[tuple[ToolRef, ToolRef], float] = defaultdict(float)
        self.pairs: dict[frozenset[str], float] = defaultdict(float)
        self.intra: dict[str, float] = defaultdict(float)
        for e in evidence.edges:
            for a in resolve(e.source_mcp, e.source_tool):
                for b in resolve(e.target_mcp, e.target_tool):
                    key = ((a, e.source_tool), (b, e.target_tool))
                    self.tools[key] = min(1.0, self.tools[key] + e.weight)
                    if a == b:
                        self.intra[a] = min(1.0, self.intra[a] + e.weight)
                    else:
                        pair = frozenset((a, b))
                        self.pairs[pair] = min(1.0, self.pairs[pair] + e.weight)

    def __bool__(self) -> bool:
        return bool(self.tools)

    def step(self, a: ToolRef, b: ToolRef) -> float:
        return self.tools.get((a, b), 0.0)

    def combination(self, mcps: Sequence[str]) -> float:
        """In [0, 1]: the share of the combination's MCP pairs with a witnessed edge (either
        direction), each pair counted by its witness weight; one MCP: its witnessed chains."""
        if len(mcps) == 1:
            return self.intra.get(mcps[0], 0.0)
        pairs = list(combinations(sorted(set(mcps)), 2))
        return sum(self.pairs.get(frozenset(p), 0.0) for p in pairs) / len(pairs)

    def task(self, task: AtomicTask, others: Sequence[str]) -> float:
        """What real traces witnessed of one atomic task in a combination: the weights of its
        adjacent tool steps, plus its strongest witnessed edge to or from a tool of another MCP
        of the combination (its chain can hand a value on, or take one)."""
        own = sum(self.step((task.mcp, a), (task.mcp, b)) for a, b in pairwise(task.tool_chain))
        across = 0.0
        mine = set(task.tool_chain)
        for (a, b), w in self.tools.items():
            if a[0] == b[0]:
                continue
            if (a[0] == task.mcp and a[1] in mine and b[0] in others) or (
                b[0] == task.mcp and b[1] in mine and a[0] in others
            ):
                across = max(across, w)
        return own + across

    def graph(self, graph: TaskGraph) -> GraphWitness:
        nodes = {n.id: n for n in graph.nodes}
        mcps = sorted({n.task.mcp for n in graph.nodes})
        pairs = list(combinations(mcps, 2))
        steps: list[tuple[ToolRef, ToolRef]] = []
        for n in graph.nodes:
            chain = n.task.tool_chain
            steps += [((n.task.mcp, a), (n.task.mcp, b)) for a, b in pairwise(chain)]
        for e in graph.edges:
            up, down = nodes.get(e.source), nodes.get(e.target)
            if up and down and up.task.tool_chain and down.task.tool_chain:
                steps.append(
                    (
                        (up.task.mcp, up.task.tool_chain[-1]),
                        (down.task.mcp, down.task.tool_chain[0]),
                    )
                )
        return GraphWitness(
            mcp_pairs=len(pairs),
            mcp_pairs_witnessed=sum(1 for p in pairs if self.pairs.get(frozenset(p), 0.0) > 0),
            tool_steps=len(steps),
            tool_steps_witnessed=sum(1 for a, b in steps if self.step(a, b) > 0),
        )
