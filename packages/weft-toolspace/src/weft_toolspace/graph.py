"""The tool-space graph G_TS = (V, E, w) of §4.1.2, mined from adjacent calls by deterministic rules.

- nodes: (server, tool, normalised argument configuration = the set of argument names given);
- data edge: a non-trivial argument value of call t+1 equals an output leaf of call t with the
  same JSON type (or, for identifier-shaped strings, occurs in a text leaf), is not in the user's
  text (traceability) and is not a volatile value (UUID, clock timestamp);
- state edge: call t mutated state and call t+1 behaves differently when t is skipped; the
  counterfactual replay that witnesses it is `weft_toolspace.counterfactual`;
- retry edge: call t failed with a policy error, t+1 is another tool and succeeded;
- weights w(i, j) = N_ij / N_i per kind; edges with N_ij < min_count or w < min_weight are pruned.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator
from typing import Any

import networkx as nx
from pydantic import BaseModel, Field

from weft_toolspace.models import DataLink, EdgeKind, EdgeRecord, NodeRecord, TraceCall, TraceRecord

_UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$", re.I)
_CLOCK = re.compile(r"^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}")
_IDENT = re.compile(r"^[\w.@/:-]+(?: [\w.@/:-]+){0,3}$")
_INFRA = {"server_crash", "timeout", "infrastructure"}


def node_key(call: TraceCall) -> str:
    return f"{call.mcp}/{call.tool}({','.join(sorted(call.arguments))})"


def leaves(value: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    if isinstance(value, dict):
        for k, v in value.items():
            yield from leaves(v, f"{path}.{k}" if path else str(k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from leaves(v, f"{path}.{i}" if path else str(i))
    else:
        yield path, value


def _json_type(v: Any) -> str:
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, int | float):
        return "number"
    if isinstance(v, str):
        return "string"
    return "null" if v is None else type(v).__name__


def trivial(v: Any) -> bool:
    """Constants that link everything to everything: booleans, small numbers, short strings."""
    if isinstance(v, bool) or v is None:
        return True
    if isinstance(v, int | float):
        return abs(v) <= 10
    if isinstance(v, str):
        s = v.strip()
        return len(s) < 3 or bool(_UUID.match(s) or _CLOCK.match(s))
    return True


def data_links(prev: TraceCall, nxt: TraceCall, prompt: str = "") -> list[DataLink]:
    """Argument leaves of `nxt` traceable to a leaf of `prev`'s output (exact leaves first;
    substrings only for identifier-shaped strings, which over-count in listings otherwise)."""
    if not prev.ok or prev.result is None:
        return []
    out_leaves = [(p, v) for p, v in leaves(prev.result) if not trivial(v)]
    found: list[DataLink] = []
    for apath, value in leaves(nxt.arguments):
        if trivial(value) or (isinstance(value, str) and value in prompt):
            continue
        t = _json_type(value)
        exact = [p for p, v in out_leaves if v == value and _json_type(v) == t]
        if exact:
            found.append(DataLink(argument=apath, output=exact[0] or "$", json_type=t))
            continue
        if isinstance(value, str) and _IDENT.match(value.strip()):
            pat = re.compile(rf"(?<![\w.-]){re.escape(value.strip())}(?![\w-])")
            sub = [p for p, v in out_leaves if isinstance(v, str) and pat.search(v)]
            if sub:
                found.append(DataLink(argument=apath, output=(sub[0] or "$") + "~", json_type=t))
    return found


def is_retry(prev: TraceCall, nxt: TraceCall) -> bool:
    return (
        not prev.ok
        and (prev.error_kind or "tool_error") not in _INFRA
        and (nxt.mcp, nxt.tool) != (prev.mcp, prev.tool)
        and nxt.ok
    )


class ToolGraph(BaseModel):
    """The mined graph as data (nodes and per-kind edges); `to_networkx()` for algorithms."""

    nodes: dict[str, NodeRecord] = Field(default_factory=dict)
    edges: list[EdgeRecord] = Field(default_factory=list)
    pairs: int = Field(default=0, description="Adjacent call pairs examined.")
    pruned: dict[str, int] = Field(default_factory=dict, description="Edges pruned, per kind.")

    def to_networkx(self) -> nx.MultiDiGraph:
        g = nx.MultiDiGraph()
        for key, node in self.nodes.items():
            g.add_node(key, mcp=node.mcp, tool=node.tool, record=node)
        for e in self.edges:
            g.add_edge(e.source, e.target, key=e.kind.value, weight=e.weight, record=e)
        return g

    def undirected(self) -> nx.Graph:
        """Weighted undirected projection (weights of both directions and all kinds summed)."""
        g = nx.Graph()
        g.add_nodes_from(self.nodes)
        for e in self.edges:
            w = g.get_edge_data(e.source, e.target, {}).get("weight", 0.0)
            g.add_edge(e.source, e.target, weight=w + e.weight)
        return g

    def out_edges(self, node: str) -> list[EdgeRecord]:
        return [e for e in self.edges if e.source == node]

    def share(self) -> dict[str, float]:
        counts = Counter(e.kind.value for e in self.edges)
        total = sum(counts.values()) or 1
        return {k.value: counts.get(k.value, 0) / total for k in EdgeKind}


def build_graph(
    traces: Iterable[TraceRecord],
    *,
    state_pairs: set[tuple[str, int]] | None = None,
    min_count: int = 2,
    min_weight: float = 0.05,
    max_examples: int = 8,
) -> ToolGraph:
    """Mine G_TS. `state_pairs` holds (trace id, t) of pairs whose state edge the counterfactual
    replay witnessed; without it no state edge is claimed (nothing is guessed)."""
    state_pairs = state_pairs or set()
    nodes: dict[str, NodeRecord] = {}
    counts: dict[tuple[str, str, EdgeKind], int] = defaultdict(int)
    routes: dict[tuple[str, str], Counter[tuple[str, str, str]]] = defaultdict(Counter)
    pairs = 0
    for tr in traces:
        keys = [node_key(c) for c in tr.calls]
        for key, call in zip(keys, tr.calls, strict=True):
            n = nodes.get(key) or NodeRecord(
                key=key,
                mcp=call.mcp,
                tool=call.tool,
                argument_names=sorted(call.arguments),
                count=0,
            )
            n.count += 1
            n.mutations += int(bool(call.mutated))
            n.errors += int(not call.ok)
            if call.ok and call.arguments not in n.examples and len(n.examples) < max_examples:
                n.examples.append(call.arguments)
            nodes[key] = n
        for t in range(len(tr.calls) - 1):
            prev, nxt = tr.calls[t], tr.calls[t + 1]
            pairs += 1
            links = data_links(prev, nxt, tr.prompt) if nxt.ok else []
            if links:
                counts[(keys[t], keys[t + 1], EdgeKind.DATA)] += 1
                for link in links:
                    routes[(keys[t], keys[t + 1])][
                        (link.argument, link.output, link.json_type)
                    ] += 1
            if (tr.id, t) in state_pairs:
                counts[(keys[t], keys[t + 1], EdgeKind.STATE)] += 1
            if is_retry(prev, nxt):
                counts[(keys[t], keys[t + 1], EdgeKind.RETRY)] += 1
    edges: list[EdgeRecord] = []
    pruned: Counter[str] = Counter()
    for (src, dst, kind), n_ij in sorted(counts.items()):
        w = n_ij / nodes[src].count
        if n_ij < min_count or w < min_weight:
            pruned[kind.value] += 1
            continue
        links = (
            [
                DataLink(argument=a, output=o, json_type=t)
                for (a, o, t), _ in routes[(src, dst)].most_common(4)
            ]
            if kind is EdgeKind.DATA
            else []
        )
        edges.append(
            EdgeRecord(source=src, target=dst, kind=kind, count=n_ij, weight=w, links=links)
        )
    return ToolGraph(nodes=nodes, edges=edges, pairs=pairs, pruned=dict(pruned))
