"""The tool-space graph G_TS = (V, E, w) of §4.1.2, mined from adjacent calls by deterministic rules.

- nodes: (server, tool, normalised argument configuration = the set of argument names given);
- data edge: a non-trivial argument value of call t+1 equals an output leaf of call t with the
  same JSON type (or, for identifier-shaped strings, occurs in a text leaf), or an identifier-shaped
  output leaf occurs as a whole token in a string argument (a table name in a SQL query, an entity
  name in a note); it is not in the user's text (traceability), not a volatile value (UUID, clock
  timestamp) and not a constant of the later tool (a token in most of its calls, e.g. SQL words);
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

from weft_toolspace.models import (
    Binding,
    DataLink,
    EdgeExample,
    EdgeKind,
    EdgeRecord,
    NodeRecord,
    TraceCall,
    TraceRecord,
)

_UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$", re.I)
_CLOCK = re.compile(r"^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}")
_IDENT = re.compile(r"^[\w.@/:-]+(?: [\w.@/:-]+){0,3}$")
_INFRA = {"server_crash", "timeout", "infrastructure"}
_WORD = re.compile(r"[A-Za-z_][\w]*")
# A token is a constant of a tool when it is in at least this share of its calls' arguments.
CONSTANT_SHARE = 0.6


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


def _token_re(value: str) -> re.Pattern[str]:
    return re.compile(rf"(?<![\w.-]){re.escape(value)}(?![\w-])")


def _tokenable(v: Any, constants: frozenset[str]) -> bool:
    """An output leaf that may be carried inside a longer argument string: identifier-shaped,
    not trivial, not only digits, and not made of the later tool's constants."""
    if not isinstance(v, str) or trivial(v) or len(v.strip()) < 4 or v.strip().isdigit():
        return False
    words = _WORD.findall(v)
    return bool(_IDENT.match(v.strip())) and bool(words) and not set(words) <= constants


def data_links(
    prev: TraceCall, nxt: TraceCall, prompt: str = "", constants: frozenset[str] = frozenset()
) -> list[DataLink]:
    """Argument leaves of `nxt` traceable to a leaf of `prev`'s output: exact leaves first;
    substrings only for identifier-shaped strings, which over-count in listings otherwise (output
    path marked `~`); then identifier-shaped output leaves that occur as a token of a string
    argument (marked `^`; `constants` are the later tool's own constant tokens)."""
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
            found.append(DataLink(argument=apath, output=exact[0] or "$", json_type=t, value=value))
            continue
        if not isinstance(value, str):
            continue
        if _IDENT.match(value.strip()):
            pat = _token_re(value.strip())
            sub = [p for p, v in out_leaves if isinstance(v, str) and pat.search(v)]
            if sub:
                found.append(
                    DataLink(argument=apath, output=(sub[0] or "$") + "~", json_type=t, value=value)
                )
                continue
        carried: dict[str, str] = {}
        for p, v in out_leaves:
            fits = (
                isinstance(v, str)  # a number in a result (an amount) is no token of a text
                and v not in carried.values()
                and v not in prompt
                and _tokenable(v, constants)
            )
            if fits and _token_re(v.strip()).search(value):
                carried[p] = v
        for p, v in list(carried.items())[:3]:
            found.append(DataLink(argument=apath, output=(p or "$") + "^", json_type=t, value=v))
    return found


def node_constants(calls: Iterable[TraceCall]) -> frozenset[str]:
    """Word tokens in at least CONSTANT_SHARE of a tool's calls (its own vocabulary: SQL words,
    column names, fixed argument values); never evidence that a value was carried."""
    seen: Counter[str] = Counter()
    n = 0
    for c in calls:
        n += 1
        words = {w for _, v in leaves(c.arguments) if isinstance(v, str) for w in _WORD.findall(v)}
        seen.update(words)
    if n < 3:
        return frozenset()
    return frozenset(w for w, k in seen.items() if k / n >= CONSTANT_SHARE)


def state_bindings(
    prev: TraceCall, nxt: TraceCall, constants: frozenset[str], prev_constants: frozenset[str]
) -> list[Binding]:
    """Values of `nxt`'s arguments that name what `prev` changed ("the same object"): an argument
    leaf of `prev` equal to one of `nxt`, or a non-constant word of one found in the other."""
    out: list[Binding] = []
    src = [(p, v) for p, v in leaves(prev.arguments) if isinstance(v, str) and not trivial(v)]
    for apath, value in leaves(nxt.arguments):
        if not isinstance(value, str) or trivial(value):
            continue
        same = [p for p, v in src if v == value]
        if same:
            out.append(Binding(argument=apath, source=f"args:{same[0]}", value=value, whole=True))
            continue
        for p, v in src:
            words = [
                w
                for w in _WORD.findall(v)
                if len(w) >= 4 and w not in constants and w not in prev_constants
            ]
            hit = next((w for w in words if _token_re(w).search(value)), None)
            if hit is not None:
                out.append(
                    Binding(argument=apath, source=f"args:{p}", value=hit, whole=False, context=v)
                )
                break
    return out


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


def _add_example(
    store: list[EdgeExample], args: dict[str, Any], bindings: list[Binding], cap: int
) -> None:
    if len(store) < cap and all(e.arguments != args for e in store):
        store.append(EdgeExample(arguments=args, bindings=bindings))


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
    traces = list(traces)
    by_node: dict[str, list[TraceCall]] = defaultdict(list)
    for tr in traces:
        for c in tr.calls:
            by_node[node_key(c)].append(c)
    consts = {k: node_constants(cs) for k, cs in by_node.items()}
    nodes: dict[str, NodeRecord] = {}
    counts: dict[tuple[str, str, EdgeKind], int] = defaultdict(int)
    routes: dict[tuple[str, str], Counter[tuple[str, str, str]]] = defaultdict(Counter)
    examples: dict[tuple[str, str, EdgeKind], list[EdgeExample]] = defaultdict(list)
    pairs = 0
    for tr in traces:
        keys = [node_key(c) for c in tr.calls]
        for t, (key, call) in enumerate(zip(keys, tr.calls, strict=True)):
            n = nodes.get(key) or NodeRecord(
                key=key,
                mcp=call.mcp,
                tool=call.tool,
                argument_names=sorted(call.arguments),
                count=0,
            )
            n.count += 1
            n.starts += int(t == 0 and call.ok)
            n.mutations += int(bool(call.mutated))
            n.errors += int(not call.ok)
            if call.ok and call.arguments not in n.examples and len(n.examples) < max_examples:
                n.examples.append(call.arguments)
            nodes[key] = n
        for t in range(len(tr.calls) - 1):
            prev, nxt = tr.calls[t], tr.calls[t + 1]
            src, dst = keys[t], keys[t + 1]
            pairs += 1
            links = data_links(prev, nxt, tr.prompt, consts[dst]) if nxt.ok else []
            if links:
                counts[(src, dst, EdgeKind.DATA)] += 1
                for link in links:
                    routes[(src, dst)][(link.argument, link.output, link.json_type)] += 1
                bindings = [
                    Binding(
                        argument=lk.argument,
                        source=lk.output,
                        value=lk.value,
                        whole=not lk.output.endswith("^"),
                    )
                    for lk in links
                ]
                _add_example(
                    examples[(src, dst, EdgeKind.DATA)], nxt.arguments, bindings, max_examples
                )
            if (tr.id, t) in state_pairs:
                counts[(src, dst, EdgeKind.STATE)] += 1
                bindings = state_bindings(prev, nxt, consts[dst], consts[src])
                _add_example(
                    examples[(src, dst, EdgeKind.STATE)], nxt.arguments, bindings, max_examples
                )
            if is_retry(prev, nxt):
                counts[(src, dst, EdgeKind.RETRY)] += 1
                _add_example(examples[(src, dst, EdgeKind.RETRY)], nxt.arguments, [], max_examples)
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
            EdgeRecord(
                source=src,
                target=dst,
                kind=kind,
                count=n_ij,
                weight=w,
                links=links,
                examples=examples[(src, dst, kind)],
            )
        )
    return ToolGraph(nodes=nodes, edges=edges, pairs=pairs, pruned=dict(pruned))
