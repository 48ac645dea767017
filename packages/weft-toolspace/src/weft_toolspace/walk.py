"""State-aware random walks with rollback (§4.2.1, Algorithm 1 lines 3–7), executed for real on a
MegaMCP group that hosts every server of the graph.

Walks start at nodes that began a recorded trace (callable at s_0). From v_t only admissible
neighbours are kept: the edge's recorded instance is re-bound to the actual chain (a data value is
taken from the same output path of o_t, or of an earlier return; a state edge's object name from
the actual x_t); the other arguments come from the recorded instance (the task's inputs). Among
them one is sampled proportionally to w(v_t, v) (times a bias towards environments the walk has
not covered yet while it lacks K; 1.0 is Eq. 3). After execution, a failed call or a violated
relation (a state edge whose source did not mutate) is discarded: state returns to s_{t-1} (if the
failed call changed nothing, state already is s_{t-1}; otherwise MegaMCP restores the latest
snapshot and the chain since is re-executed) and another neighbour is sampled. When no neighbour of
v_t works, v_t itself is rolled back and another neighbour of v_{t-1} is sampled. A neighbour
from which the graph holds no retained walk (given the chain so far, `admits_walk`) is not called
at all. Every neighbour tried is logged with its outcome (`WalkStats.log`). A walk ends when
it has L calls over K environments; it is discarded after too many rollbacks or when 2L calls still
cover fewer than K environments.
"""

from __future__ import annotations

import copy
import random
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from weft_toolspace.exceptions import ToolSpaceRuntimeError
from weft_toolspace.graph import ToolGraph, leaves, node_key
from weft_toolspace.models import (
    Binding,
    Chain,
    ChainStep,
    DataLink,
    EdgeExample,
    EdgeKind,
    EdgeRecord,
    TraceCall,
)
from weft_toolspace.traces import parse_value

if TYPE_CHECKING:
    from weft_core.models import SnapshotRef
    from weft_megamcp import GroupHandle, MegaMCPClient


class WalkConfig(BaseModel):
    length: int = Field(default=15, ge=1, description="L: calls per chain.")
    environments: int = Field(default=2, ge=1, description="K: environments a chain must cross.")
    attempts: int = Field(default=10, ge=1, description="Walk attempts (the walk budget).")
    max_rollbacks: int = Field(
        default=12, ge=0, description="Rollbacks (failed steps and backtracks) before discard."
    )
    new_environment_bias: float = Field(
        default=3.0,
        ge=1.0,
        description="Weight factor for neighbours in an environment the walk has not covered "
        "while it covers fewer than K (1.0: Eq. 3 exactly).",
    )
    revisit_decay: float = Field(
        default=1.0,
        gt=0.0,
        le=1.0,
        description="Weight factor per earlier visit of a neighbour in this chain (a node already "
        "called k times weighs decay^k; 1.0: Eq. 3 exactly). Below 1 the walk prefers tools it "
        "has not called yet; a failing alternative still costs a rollback, so in a graph whose "
        "only long walks are cycles a low decay keeps fewer walks (seed-7 corpus: 0.25 kept 0 of "
        "8, 1.0 kept 6 with 2.5 distinct tools per 15 calls).",
    )
    snapshot_every: int = Field(default=5, ge=1, description="Steps between rollback snapshots.")
    seed: int = 0


@dataclass
class WalkStats:
    tried: int = 0
    kept: int = 0
    rollbacks: int = 0
    discarded: Counter[str] = field(default_factory=Counter)
    # One record per neighbour tried (chain, depth, source, target, edge kind, outcome, error):
    # why walks of different tools fail is read from here, not guessed.
    log: list[dict[str, Any]] = field(default_factory=list)
    outcomes: Counter[str] = field(default_factory=Counter)

    def note(
        self,
        chain: str,
        depth: int,
        source: str | None,
        target: str,
        edge: EdgeRecord | None,
        outcome: str,
        error: str = "",
    ) -> None:
        self.outcomes[outcome] += 1
        self.log.append(
            {
                "chain": chain,
                "depth": depth,
                "source": source,
                "target": target,
                "via": edge.kind.value if edge else None,
                "outcome": outcome,
                "error": error[:200],
            }
        )


def _shape(path: str) -> str:
    return re.sub(r"(^|\.)\d+(?=\.|$)", r"\1*", path)


def _get(value: Any, path: str) -> list[Any]:
    """Leaves of `value` at a dotted path; a list index matches any index (`entities.0.name`
    finds the name of every entity), so a route learnt on one output applies to another."""
    if path == "$":
        return [value]
    want = _shape(path)
    return [v for p, v in leaves(value) if _shape(p) == want]


def _set(args: dict[str, Any], path: str, value: Any) -> None:
    parts = path.split(".")
    cur: Any = args
    for i, part in enumerate(parts):
        last = i == len(parts) - 1
        key: Any = int(part) if part.isdigit() and isinstance(cur, list) else part
        if last:
            if isinstance(cur, list) and isinstance(key, int):
                if key < len(cur):
                    cur[key] = value
            else:
                cur[key] = value
            return
        cur = (
            cur[key]
            if (isinstance(cur, list) and isinstance(key, int) and key < len(cur))
            or (isinstance(cur, dict) and key in cur)
            else None
        )
        if cur is None:
            return


def _copy(value: dict[str, Any]) -> dict[str, Any]:
    return copy.deepcopy(value)


def _typed(value: Any, json_type: str) -> bool:
    if json_type == "string":
        return isinstance(value, str)
    if json_type == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    return True


def fill_arguments(
    graph: ToolGraph,
    edge: EdgeRecord | None,
    prev_result: Any,
    rng: random.Random,
    prev_arguments: dict[str, Any] | None = None,
    earlier: list[Any] | None = None,
) -> dict[str, Any] | None:
    """Arguments for edge.target, or None when a routed argument has no value in o_t.

    With recorded instances of the edge, one is taken and each of its bindings gets the value the
    actual previous call produced (data: the leaf at the same output path) or touched (state: its
    argument at the same path, i.e. the same object); without, a node example and the edge's
    routes. A data value missing from o_t may come from an earlier return (`earlier`, newest
    first): the paper's "filled from earlier returns"."""
    node = graph.nodes[edge.target] if edge else None
    if edge is None or node is None or not node.examples:
        return None
    if edge.kind is EdgeKind.STATE:
        # The same pair seen carrying a value (create_ticket -> escalate_ticket: the ticket id
        # the create returned): its routes take that value from the actual o_t. A state edge's
        # own instance rebinds only what the two calls' *arguments* share, so the id stayed the
        # recorded one, a ticket this walk never made (walk log, seeds 1 and 7: "ticket
        # 'TIC-0008' not found"). The state relation is still checked on the call's outcome.
        twin = next(
            (
                e
                for e in graph.edges
                if e.kind is EdgeKind.DATA and (e.source, e.target) == (edge.source, edge.target)
            ),
            None,
        )
        if twin is not None:
            routed = fill_arguments(graph, twin, prev_result, rng, prev_arguments, earlier)
            if routed is not None:
                return routed
    if edge.examples:
        ex = rng.choice(edge.examples)
        returns = [prev_result, *(earlier or [])]
        return _from_example(ex, node.examples, edge.kind, returns, prev_arguments or {}, rng)
    args: dict[str, Any] = _copy(rng.choice(node.examples))
    if edge.kind is not EdgeKind.DATA:
        return args
    resolved = 0
    for link in edge.links:
        value = _route(link, node.examples, prev_result, rng)
        if value is not None:
            _set(args, link.argument, value)
            resolved += 1
    return args if resolved else None


def _index(path: str) -> str | None:
    first = path.split(".", 1)[0]
    return first if first.isdigit() else None


def _from_example(
    ex: EdgeExample,
    examples: list[dict[str, Any]],
    kind: EdgeKind,
    returns: list[Any],
    prev_args: dict[str, Any],
    rng: random.Random,
) -> dict[str, Any] | None:
    args = _copy(ex.arguments)
    anchor: str | None = None  # the row / entity index the first value came from
    for b in ex.bindings:
        if b.source.startswith("args:"):
            new = _same_object(b, prev_args)
        elif b.source.endswith("~"):
            link = DataLink(argument=b.argument, output=b.source, json_type="string")
            new = next(
                (v for o in returns if (v := _route(link, [ex.arguments, *examples], o, rng))),
                None,
            )
        else:
            path = b.source.rstrip("^")
            found = _same_field(returns, path, b.value)
            aligned = [(p, v) for p, v in found if anchor is not None and _index(p) == anchor]
            pick = rng.choice(aligned or found) if found else None
            if pick is not None and anchor is None:
                anchor = _index(pick[0])
            new = pick[1] if pick is not None else None
        if new is None:
            if kind is EdgeKind.DATA:
                return None  # not admissible: the value is not in o_t
            continue
        _bind(args, b, new)
    return args


def _same_field(returns: list[Any], path: str, value: Any) -> list[tuple[str, Any]]:
    """Leaves of the newest return that has the recorded output path (list indices match any),
    else of the newest with a leaf under the same field name: a server materialised from its
    definitions (an envsynth bundle of a server known only from traces) may nest the field it
    returns differently (`book.book_id` for a recorded `book_id`); it is the same field."""
    for o in returns:  # o_t first, then earlier returns
        found = [
            (p, v)
            for p, v in leaves(o)
            if ((path == "$" and p == "") or _shape(p) == _shape(path)) and type(v) is type(value)
        ]
        if found:
            return found
    key = path.rsplit(".", 1)[-1]
    if path == "$" or key.isdigit():
        return []
    for o in returns:
        found = [
            (p, v) for p, v in leaves(o) if p.rsplit(".", 1)[-1] == key and type(v) is type(value)
        ]
        if found:
            return found
    return []


def _same_object(b: Binding, prev_args: dict[str, Any]) -> Any:
    cur = _get(prev_args, b.source.removeprefix("args:"))
    if not cur:
        return None
    if b.whole:
        return cur[0]
    if not isinstance(cur[0], str) or b.context is None:
        return None
    # The recorded x_i with the token as a group, matched against the actual x_i.
    at = b.context.find(b.value)
    pattern = re.escape(b.context[:at]) + r"(\w+)" + re.escape(b.context[at + len(b.value) :])
    m = re.fullmatch(pattern, cur[0])
    return m.group(1) if m else None


def _bind(args: dict[str, Any], b: Binding, new: Any) -> None:
    if b.whole:
        _set(args, b.argument, new)
        return
    cur = _get(args, b.argument)
    if cur and isinstance(cur[0], str) and isinstance(b.value, str):
        pat = re.compile(rf"(?<![\w.-]){re.escape(b.value)}(?![\w-])")
        _set(args, b.argument, pat.sub(lambda _: str(new), cur[0]))


def _route(link: DataLink, examples: list[dict[str, Any]], prev: Any, rng: random.Random) -> Any:
    if link.output.endswith("~"):
        # Substring route: a recorded value of this argument that the actual output mentions.
        text = " ".join(str(v) for _, v in leaves(prev))
        seen = [v for ex in examples for v in _get(ex, link.argument) if isinstance(v, str)]
        present = [v for v in seen if re.search(rf"(?<![\w.-]){re.escape(v)}(?![\w-])", text)]
        return rng.choice(present) if present else None
    found = [v for v in _get(prev, link.output) if _typed(v, link.json_type)]
    return rng.choice(found) if found else None


class Walker:
    """Runs walk attempts on one group; `env_of` maps a node to its environment id."""

    def __init__(
        self,
        client: MegaMCPClient,
        graph: ToolGraph,
        env_of: dict[str, str],
        cfg: WalkConfig,
        initial: dict[str, SnapshotRef] | None = None,
    ) -> None:
        """`initial`: stored s_0 per server (`export.store_initial_state`: seeded state-query
        environments, bundle seeds); servers without one start from their own start state."""
        self.client = client
        self.initial = initial or {}
        self.graph = graph
        self.env_of = env_of
        self.cfg = cfg
        self.rng = random.Random(cfg.seed)
        self.stats = WalkStats()
        self._out: dict[str, list[EdgeRecord]] = {}
        self._start_cache: list[str] | None = None
        self._admits: dict[tuple[str, frozenset[str], int], bool] = {}
        for e in graph.edges:
            self._out.setdefault(e.source, []).append(e)

    async def run(self) -> list[Chain]:
        mcps = sorted({n.mcp for n in self.graph.nodes.values()})
        refs = self.initial
        group = (
            await self.client.create_group(
                {m: refs[m].uri if m in refs else None for m in mcps},
                workspaces={
                    m: r.workspace_uri for m, r in refs.items() if r.workspace_uri and m in mcps
                },
            )
            if refs
            else await self.client.create_group(mcps)
        )
        chains: list[Chain] = []
        try:
            s0 = await self.client.snapshot(group)
            for attempt in range(self.cfg.attempts):
                self.stats.tried += 1
                await self.client.restore(group, s0)
                chain = await self._walk(group, s0, f"walk-{self.cfg.seed}-{attempt}")
                if chain is not None:
                    self.stats.kept += 1
                    chains.append(chain)
        finally:
            await self.client.close(group)
        return chains

    def _starts(self) -> list[str]:
        """Nodes the corpus shows callable at s_0 (a trace began there), else any with an edge;
        of those, the ones from which a walk can be retained at all: the graph holds a walk of
        L..2L calls from there over K environments (`admits_walk`; else K environments are
        reachable, but the chain ends in a sink before L calls); a walk from any other only
        spends the walk budget on live calls and rollbacks. None: no walk can be retained."""
        if self._start_cache is None:
            nodes = self.graph.nodes
            out = [k for k, n in nodes.items() if n.examples and k in self._out]
            out = [k for k in out if nodes[k].starts] or out
            self._start_cache = [k for k in out if self.admits_walk(k)]
        return self._start_cache

    def admits_walk(self, start: str, covered: frozenset[str] = frozenset(), done: int = 1) -> bool:
        """Whether the graph has a walk from `start` (nodes may repeat, any edge kind: a retry
        edge can be a step too) that is retained: at some length L <= t <= 2L it has covered K
        environments. `covered` and `done`: the environments and calls of the chain so far,
        `start` its last call (a walk under way). Covered sets are kept only up to K, so the
        search stays small."""
        length, k = self.cfg.length, self.cfg.environments

        def env(n: str) -> str:
            return self.env_of.get(n, "env-?")

        first = covered | {env(start)}
        if len(first) >= k:  # every covered set of size >= K is as good as any other
            first = frozenset(f"*{i}" for i in range(k))
        key = (start, first, done)
        if key in self._admits:
            return self._admits[key]
        frontier = {(start, first)}
        answer = False
        for t in range(done, 2 * length + 1):
            if t >= length and any(len(c) >= k for _, c in frontier):
                answer = True
                break
            nxt: set[tuple[str, frozenset[str]]] = set()
            for node, cov in frontier:
                for e in self._out.get(node, []):
                    nxt.add((e.target, cov if len(cov) >= k else cov | {env(e.target)}))
            if not nxt:
                break
            frontier = nxt
        self._admits[key] = answer
        return answer

    async def _call(self, group: GroupHandle, step: ChainStep) -> tuple[bool, Any, bool]:
        res = await self.client.call_tool(group, step.mcp, step.tool, dict(step.arguments))
        entries = (await self.client.ledger(group)).get(step.mcp, [])
        mutated = bool(entries and entries[-1].mutated)
        value = parse_value(res.structured if res.structured is not None else res.text)
        return not res.is_error, value, mutated

    async def _rollback(
        self, group: GroupHandle, steps: list[ChainStep], snaps: list[tuple[int, str]]
    ) -> None:
        at, snap = snaps[-1]
        await self.client.restore(group, snap)
        for s in steps[at:]:  # deterministic re-execution from the snapshot to s_{t-1}
            await self.client.call_tool(group, s.mcp, s.tool, dict(s.arguments))

    async def _walk(self, group: GroupHandle, s0: str, chain_id: str) -> Chain | None:
        cfg, rng = self.cfg, self.rng
        starts = self._starts()
        if not starts:
            # No live call can help: the graph holds no walk of L calls over K environments.
            self.stats.discarded["graph admits no walk"] += 1
            return None
        weights = [self.graph.nodes[k].starts or self.graph.nodes[k].count for k in starts]
        steps: list[ChainStep] = []
        snaps: list[tuple[int, str]] = [(0, s0)]
        rollbacks = 0
        # frontier[i]: the still untried neighbours of v_i (frontier[0]: the start).
        frontier: list[list[tuple[EdgeRecord | None, str]]] = [
            [(None, rng.choices(starts, weights)[0])]
        ]
        while True:
            envs = {s.environment for s in steps}
            if len(steps) >= cfg.length and len(envs) >= cfg.environments:
                return Chain(id=chain_id, steps=steps, rollbacks=rollbacks, s0={"group": s0})
            if len(steps) >= 2 * cfg.length:
                self.stats.discarded["too few environments"] += 1
                return None
            pending = frontier[-1]
            if not pending and not steps:
                pending.append((None, rng.choices(starts, weights)[0]))  # the start failed
            if not pending:
                # No admissible neighbour of v_t works: drop v_t, restore s_{t-1} and resample
                # among the other neighbours of v_{t-1} (rollback one level up).
                rollbacks += 1
                self.stats.rollbacks += 1
                if rollbacks > cfg.max_rollbacks:
                    self.stats.discarded["dead end"] += 1
                    return None
                frontier.pop()
                dropped = steps.pop()
                self.stats.note(chain_id, len(steps), None, dropped.node, None, "backtrack")
                snaps = [x for x in snaps if x[0] <= len(steps)]
                if dropped.mutated:
                    await self._rollback(group, steps, snaps)
                continue
            edge, target = self._sample(pending, envs, Counter(s.node for s in steps))
            pending.remove((edge, target))
            node = self.graph.nodes[target]
            args = (
                _copy(rng.choice(node.examples))
                if edge is None and node.examples
                else fill_arguments(
                    self.graph,
                    edge,
                    steps[-1].result if steps else None,
                    rng,
                    steps[-1].arguments if steps else None,
                    earlier=[s.result for s in reversed(steps[:-1]) if not s.failed],
                )
            )
            source = steps[-1].node if steps else None
            if args is None:
                # not admissible: inputs not fillable from earlier returns
                self.stats.note(chain_id, len(steps), source, target, edge, "not fillable")
                continue
            step = ChainStep(
                node=target,
                mcp=node.mcp,
                tool=node.tool,
                arguments=args,
                environment=self.env_of.get(target, "env-?"),
                via=edge.kind if edge else None,
            )
            ok, result, mutated = await self._call(group, step)
            violated = edge is not None and edge.kind is EdgeKind.STATE and not steps[-1].mutated
            retries = [e for e in self._out.get(target, []) if e.kind is EdgeKind.RETRY]
            if not ok and not violated and not mutated and retries and steps:
                # A recoverable error (§4.1.2): kept as an observation; only a retry edge may follow.
                step.result, step.failed = result, True
                self.stats.note(
                    chain_id, len(steps), source, target, edge, "recoverable", str(result)
                )
                steps.append(step)
                frontier.append([(e, e.target) for e in retries])
                continue
            if not ok or violated:
                outcome = "violated" if violated and ok else "error"
                self.stats.note(chain_id, len(steps), source, target, edge, outcome, str(result))
                rollbacks += 1
                self.stats.rollbacks += 1
                if mutated:
                    await self._rollback(group, steps, snaps)
                if rollbacks > cfg.max_rollbacks:
                    self.stats.discarded["too many rollbacks"] += 1
                    return None
                continue
            step.result, step.mutated = result, mutated
            self.stats.note(chain_id, len(steps), source, target, edge, "ok")
            steps.append(step)
            if len(steps) % cfg.snapshot_every == 0:
                snaps.append((len(steps), await self.client.snapshot(group)))
            # Only neighbours from which the graph still holds a retained walk (L..2L calls over
            # K environments, given the chain so far): the rest are sinks for this chain, and
            # calling one only costs a live call and a rollback (the seed-7 walk log of main:
            # most rollbacks were backtracks out of get_ticket / escalate_ticket, nodes without
            # an out-edge).
            covered = {s.environment for s in steps}
            onward: list[tuple[EdgeRecord | None, str]] = []
            for e in self._out.get(target, []):
                if e.kind is EdgeKind.RETRY:
                    continue
                if self.admits_walk(e.target, frozenset(covered), len(steps) + 1):
                    onward.append((e, e.target))
                else:
                    self.stats.outcomes["no walk onward (not called)"] += 1
            frontier.append(onward)

    def _sample(
        self,
        pending: list[tuple[EdgeRecord | None, str]],
        visited: set[str] | None = None,
        calls: Counter[str] | None = None,
    ) -> tuple[EdgeRecord | None, str]:
        """P(v | v_t) = w(v_t, v) / sum over the admissible (still untried) neighbours (Eq. 3);
        while the walk covers fewer than K environments, a neighbour in an unvisited one has its
        weight multiplied by `new_environment_bias`, and a neighbour the chain already called k
        times by `revisit_decay`^k (both 1.0: the paper's Eq. 3)."""
        bias = self.cfg.new_environment_bias
        calls = calls or Counter()
        weights = [
            (e.weight if e is not None else 1.0)
            * self.cfg.revisit_decay ** calls[t]
            * (
                bias
                if visited is not None
                and len(visited) < self.cfg.environments
                and self.env_of.get(t, "env-?") not in visited
                else 1.0
            )
            for e, t in pending
        ]
        return self.rng.choices(pending, weights)[0]


async def chain_of_route(
    client: MegaMCPClient,
    chain_id: str,
    route: list[tuple[str, str, dict[str, Any]]],
    env_of: dict[str, str] | None = None,
) -> Chain:
    """A given route of (server, tool, arguments) executed from s_0 on a fresh group, recorded
    as a walk records its steps (result, mutated as the ledger says); a call that fails stops
    with ToolSpaceRuntimeError. For a route taken from a trace or written by hand."""
    mcps = sorted({m for m, _, _ in route})
    group = await client.create_group(mcps)
    steps: list[ChainStep] = []
    try:
        for k, (mcp, tool, args) in enumerate(route):
            res = await client.call_tool(group, mcp, tool, dict(args))
            if res.is_error:
                raise ToolSpaceRuntimeError(
                    f"route {chain_id}, call {k} ({mcp}/{tool}): {res.text}"
                )
            entries = (await client.ledger(group)).get(mcp, [])
            key = node_key(TraceCall(mcp=mcp, tool=tool, arguments=args))
            steps.append(
                ChainStep(
                    node=key,
                    mcp=mcp,
                    tool=tool,
                    arguments=dict(args),
                    result=parse_value(res.structured if res.structured is not None else res.text),
                    environment=(env_of or {}).get(key, mcp),
                    mutated=bool(entries and entries[-1].mutated),
                )
            )
    finally:
        await client.close(group)
    return Chain(id=chain_id, steps=steps)
