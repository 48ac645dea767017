"""State-aware random walks with rollback (§4.2.1, Algorithm 1 lines 3–7), executed for real on a
MegaMCP group that hosts every server of the graph.

Walks start at nodes that began a recorded trace (callable at s_0). From v_t only admissible
neighbours are kept: the edge's recorded instance is re-bound to the actual chain
(`weft_toolspace.fill`); the other arguments come from the recorded instance (the task's inputs).
A neighbour from which the graph holds no retained walk (given the chain so far, `admits_walk`)
is not called at all. Among the others one is sampled proportionally to w(v_t, v) (Eq. 3), with
two documented deviations: a bias towards environments the walk has not covered while it lacks K
(`new_environment_bias`), and repeats put last (`repeat_weight`): a neighbour whose filled call
would do a (tool, object) pair the chain already did (`weft_toolspace.work`) is set aside while a
neighbour doing new work (a tool not called yet, or a called tool on a new object) is admissible.
After execution, a failed call or a violated relation (a state edge whose source did not mutate)
is discarded: state returns to s_{t-1} (if the failed call changed nothing, state already is
s_{t-1}; otherwise MegaMCP restores the latest snapshot and the chain since is re-executed) and
another neighbour is sampled. When no neighbour of v_t works, v_t itself is rolled back and
another neighbour of v_{t-1} is sampled. Every neighbour tried is logged with its outcome
(`WalkStats.log`).

Length is an outcome. The paper's walk "continues until its length reaches L and its tools cover
K environments" (fixed L), yet its chains have many lengths (§4.3: mean 18.86, max 209, counted
over trajectories of at least five calls); it does not say how. Here L is a maximum
(`max_length`) and `min_length` the least a chain may have: once a chain has min_length calls
over K environments it ends on its own when no admissible neighbour does new work (only repeats
are left: "no new work"; or no neighbour works at all: "no neighbour"), or at max_length. Below
min_length or K a repeat is taken when nothing else is admissible (the lookahead guarantees the
chain can still be completed). A walk is discarded after too many rollbacks or when max_length
calls still cover fewer than K environments.

Where such a chain ends, the walk does not stop at once: the paper rolls a walk back when it
cannot go on ("rollback to s_{t-1}") rather than ending it short of L, so the end node is rolled
back like any dead end and another neighbour of v_{t-1} is sampled, up to `search_past_end`
times per walk (and within `max_rollbacks`). The walk keeps the complete chain it reached that
did the most distinct work (`weft_toolspace.work`; not the most calls, which repeats would
give), with the reason that chain ended; each such search is logged ("searched past end").
Length stays an outcome: nothing makes a chain longer than the graph and the live calls let it
get, and a walk whose searches find nothing longer keeps its first chain.
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field, model_validator

from weft_toolspace.exceptions import ToolSpaceRuntimeError
from weft_toolspace.fill import _copy
from weft_toolspace.fill import fill_arguments as fill_arguments
from weft_toolspace.graph import ToolGraph, node_key
from weft_toolspace.models import Chain, ChainStep, EdgeKind, EdgeRecord, TraceCall
from weft_toolspace.traces import parse_value
from weft_toolspace.work import Work, work_of

if TYPE_CHECKING:
    from weft_core.models import SnapshotRef
    from weft_megamcp import GroupHandle, MegaMCPClient

Candidate = tuple[EdgeRecord | None, str]
# A neighbour set aside as a repeat, with the arguments it was filled with.
Deferred = tuple[EdgeRecord | None, str, dict[str, Any]]


class WalkConfig(BaseModel):
    max_length: int = Field(
        default=30,
        ge=1,
        description="L as a maximum: a chain stops at this many calls (the paper's L; 30 is "
        "twice the L = 15 walked before, the bound within which a walk had to cover K).",
    )
    min_length: int = Field(
        default=5,
        ge=1,
        description="Least calls a kept chain has; a chain shorter than this never ends on its "
        "own (paper §4.3 counts trajectories of at least five calls).",
    )
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
    repeat_weight: float = Field(
        default=0.0,
        ge=0.0,
        le=1.0,
        description="Weight factor of a neighbour whose filled call repeats a (tool, object) "
        "pair the chain already did (`weft_toolspace.work`), against w for one that does new "
        "work. 0.0: repeats are sampled only when no admissible neighbour does new work (and "
        "then only below min_length or K: otherwise the chain ends). 1.0: Eq. 3 over all "
        "admissible neighbours; the chain still ends when only repeats are left.",
    )
    revisit_decay: float = Field(
        default=1.0,
        gt=0.0,
        le=1.0,
        description="Weight factor per earlier visit of a neighbour in this chain (a node already "
        "called k times weighs decay^k; 1.0: Eq. 3 exactly). Superseded by repeat_weight, which "
        "sets a repeat aside only while new work is admissible (h16e: a decay of 0.25 kept 0 of "
        "8 seed-7 walks, the alternatives it preferred failed or dead-ended).",
    )
    search_past_end: int = Field(
        default=12,
        ge=0,
        description="Times a walk whose complete chain ended (no neighbour, no new work) rolls "
        "its end node back and samples another neighbour of v_{t-1}, keeping the complete chain "
        "that did the most distinct work (Algorithm 1 rolls back instead of ending a walk short "
        "of L). 0: a chain ends where it first stops.",
    )
    snapshot_every: int = Field(default=5, ge=1, description="Steps between rollback snapshots.")
    seed: int = 0

    @model_validator(mode="after")
    def _lengths(self) -> WalkConfig:
        if self.min_length > self.max_length:
            raise ValueError(f"min_length {self.min_length} > max_length {self.max_length}")
        return self


@dataclass
class WalkStats:
    tried: int = 0
    kept: int = 0
    rollbacks: int = 0
    discarded: Counter[str] = field(default_factory=Counter)
    # Why each kept chain ended: "no new work", "no neighbour", "max length", "too many
    # rollbacks" (after min_length calls over K environments a chain whose continuations keep
    # failing ends there instead of being discarded).
    ended: Counter[str] = field(default_factory=Counter)
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
                    self.stats.ended[chain.ended] += 1
                    chains.append(chain)
        finally:
            await self.client.close(group)
        return chains

    def _starts(self) -> list[str]:
        """Nodes the corpus shows callable at s_0 (a trace began there), else any with an edge;
        of those, the ones from which a walk can be retained at all: the graph holds a walk of
        min_length..max_length calls from there over K environments (`admits_walk`; else K
        environments are reachable, but the chain ends in a sink too early); a walk from any
        other only spends the walk budget on live calls and rollbacks. None: no walk can be
        retained."""
        if self._start_cache is None:
            nodes = self.graph.nodes
            out = [k for k, n in nodes.items() if n.examples and k in self._out]
            out = [k for k in out if nodes[k].starts] or out
            self._start_cache = [k for k in out if self.admits_walk(k)]
        return self._start_cache

    def admits_walk(self, start: str, covered: frozenset[str] = frozenset(), done: int = 1) -> bool:
        """Whether the graph has a walk from `start` (nodes may repeat, any edge kind: a retry
        edge can be a step too) that can be retained: at some length min_length <= t <=
        max_length it has covered K environments (a chain may end at any such t: the stop rule
        ends it when no new work is left, which the graph alone cannot tell). `covered` and
        `done`: the environments and calls of the chain so far, `start` its last call (a walk
        under way). Covered sets are kept only up to K, so the search stays small."""
        lo, hi, k = self.cfg.min_length, self.cfg.max_length, self.cfg.environments

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
        for t in range(done, hi + 1):
            if t >= lo and any(len(c) >= k for _, c in frontier):
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

    def _fill(self, edge: EdgeRecord | None, target: str, steps: list[ChainStep]) -> Any:
        node = self.graph.nodes[target]
        if edge is None:
            return _copy(self.rng.choice(node.examples)) if node.examples else None
        return fill_arguments(
            self.graph,
            edge,
            steps[-1].result if steps else None,
            self.rng,
            steps[-1].arguments if steps else None,
            earlier=[s.result for s in reversed(steps[:-1]) if not s.failed],
        )

    @staticmethod
    def _work(node: str, args: dict[str, Any], steps: list[ChainStep]) -> Work:
        return work_of(
            node, args, [v for s in steps if not s.failed for v in (s.result, s.arguments)]
        )

    async def _walk(self, group: GroupHandle, s0: str, chain_id: str) -> Chain | None:
        cfg, rng = self.cfg, self.rng
        starts = self._starts()
        if not starts:
            # No live call can help: the graph holds no walk of min_length..max_length calls
            # over K environments.
            self.stats.discarded["graph admits no walk"] += 1
            return None
        weights = [self.graph.nodes[k].starts or self.graph.nodes[k].count for k in starts]
        steps: list[ChainStep] = []
        works: list[Work] = []  # (tool, object) of each step, parallel to steps
        snaps: list[tuple[int, str]] = [(0, s0)]
        rollbacks = 0
        # frontier[i]: the still untried neighbours of v_i (frontier[0]: the start); deferred[i]:
        # those of them found to repeat work the chain did, with the arguments they were filled
        # with (sampled at repeat_weight, or when nothing else is left below min_length or K).
        frontier: list[list[Candidate]] = [[(None, rng.choices(starts, weights)[0])]]
        deferred: list[list[Deferred]] = [[]]

        # (distinct work, chain) of the complete chain reached so far that did the most distinct
        # work (not the most calls: a search past the end may also rebuild a chain with repeats
        # below min_length).
        best: tuple[int, Chain] | None = None
        searched = 0

        def kept(ended: str) -> tuple[int, Chain]:
            """The better of the chain so far, ending here, and `best`."""
            work = len(set(works) - {("", "")})
            if best is not None and best[0] >= work:
                return best
            return work, Chain(
                id=chain_id, steps=list(steps), rollbacks=rollbacks, s0={"group": s0}, ended=ended
            )

        while True:
            envs = {s.environment for s in steps}
            complete = len(steps) >= cfg.min_length and len(envs) >= cfg.environments
            if len(steps) >= cfg.max_length:
                if complete:
                    return kept("max length")[1]
                if best is not None:
                    return best[1]
                self.stats.discarded["too few environments"] += 1
                return None
            pending, aside = frontier[-1], deferred[-1]
            if not pending and not aside and not steps:
                if best is not None:  # searched back to the start: nothing longer
                    return best[1]
                pending.append((None, rng.choices(starts, weights)[0]))  # the start failed
            if not pending and complete:
                # Every admissible neighbour was tried or repeats work: the chain ends here,
                # unless a search past the end may still find a longer one.
                best = kept("no new work" if aside else "no neighbour")
                if searched >= cfg.search_past_end:
                    return best[1]
                searched += 1
                self.stats.note(
                    chain_id, len(steps), None, steps[-1].node, None, "searched past end"
                )
            if not pending and (not aside or complete or best is not None):
                # No admissible neighbour of v_t works (or the chain ended at v_t; or, searching
                # past an end, only repeats are left, which add no work): drop v_t, restore
                # s_{t-1} and resample among the other neighbours of v_{t-1} (rollback one level
                # up).
                rollbacks += 1
                self.stats.rollbacks += 1
                if rollbacks > cfg.max_rollbacks:
                    if best is not None:
                        return best[1]
                    self.stats.discarded["dead end"] += 1
                    return None
                frontier.pop()
                deferred.pop()
                dropped = steps.pop()
                works.pop()
                self.stats.note(chain_id, len(steps), None, dropped.node, None, "backtrack")
                snaps = [x for x in snaps if x[0] <= len(steps)]
                if dropped.mutated:
                    await self._rollback(group, steps, snaps)
                continue
            source = steps[-1].node if steps else None
            pick = self._sample(pending, aside, envs, Counter(s.node for s in steps))
            if len(pick) == 3:  # a repeat set aside before, taken now
                aside.remove(pick)
                edge, target, args = pick
                self.stats.note(chain_id, len(steps), source, target, edge, "repeat taken")
            else:
                pending.remove(pick)
                edge, target = pick
                filled = self._fill(edge, target, steps)
                if filled is None:
                    # not admissible: inputs not fillable from earlier returns
                    self.stats.note(chain_id, len(steps), source, target, edge, "not fillable")
                    continue
                args = filled
                if self._work(target, args, steps) in works:
                    # The same (tool, object) again: set aside while new work is admissible.
                    aside.append((edge, target, args))
                    self.stats.note(chain_id, len(steps), source, target, edge, "repeat set aside")
                    continue
            node = self.graph.nodes[target]
            step = ChainStep(
                node=target,
                mcp=node.mcp,
                tool=node.tool,
                arguments=args,
                environment=self.env_of.get(target, "env-?"),
                via=edge.kind if edge else None,
            )
            work = self._work(target, args, steps)
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
                works.append(("", ""))  # a failed call did no work
                frontier.append([(e, e.target) for e in retries])
                deferred.append([])
                continue
            if not ok or violated:
                outcome = "violated" if violated and ok else "error"
                self.stats.note(chain_id, len(steps), source, target, edge, outcome, str(result))
                rollbacks += 1
                self.stats.rollbacks += 1
                if mutated:
                    await self._rollback(group, steps, snaps)
                if rollbacks > cfg.max_rollbacks:
                    if complete:  # a chain that may end here ends here, it is not lost
                        return kept("too many rollbacks")[1]
                    if best is not None:
                        return best[1]
                    self.stats.discarded["too many rollbacks"] += 1
                    return None
                continue
            step.result, step.mutated = result, mutated
            self.stats.note(chain_id, len(steps), source, target, edge, "ok")
            steps.append(step)
            works.append(work)
            if len(steps) % cfg.snapshot_every == 0:
                snaps.append((len(steps), await self.client.snapshot(group)))
            # Only neighbours from which the graph still holds a retained walk (min_length..
            # max_length calls over K environments, given the chain so far): the rest are sinks
            # for this chain, and calling one only costs a live call and a rollback (the seed-7
            # walk log of main: most rollbacks were backtracks out of get_ticket /
            # escalate_ticket, nodes without an out-edge).
            covered = {s.environment for s in steps}
            onward: list[Candidate] = []
            for e in self._out.get(target, []) if len(steps) < cfg.max_length else []:
                if e.kind is EdgeKind.RETRY:
                    continue
                if self.admits_walk(e.target, frozenset(covered), len(steps) + 1):
                    onward.append((e, e.target))
                else:
                    self.stats.outcomes["no walk onward (not called)"] += 1
            frontier.append(onward)
            deferred.append([])

    def _sample(
        self,
        pending: list[Candidate],
        aside: list[Deferred] | None = None,
        visited: set[str] | None = None,
        calls: Counter[str] | None = None,
    ) -> Candidate | Deferred:
        """P(v | v_t) = w(v_t, v) / sum over the admissible (still untried) neighbours (Eq. 3),
        with neighbours set aside as repeats (`aside`) weighted by w x `repeat_weight`, or by w
        when no other neighbour is left. While the walk covers fewer than K environments, a
        neighbour in an unvisited one has its weight multiplied by `new_environment_bias`, and a
        neighbour the chain already called k times by `revisit_decay`^k (all three 1.0: the
        paper's Eq. 3)."""
        cfg = self.cfg
        calls = calls or Counter()
        aside = aside or []

        def weight(e: EdgeRecord | None, t: str) -> float:
            new_env = (
                visited is not None
                and len(visited) < cfg.environments
                and self.env_of.get(t, "env-?") not in visited
            )
            return (
                (e.weight if e is not None else 1.0)
                * cfg.revisit_decay ** calls[t]
                * (cfg.new_environment_bias if new_env else 1.0)
            )

        factor = cfg.repeat_weight if pending else 1.0
        pool: list[Candidate | Deferred] = [*pending, *aside]
        weights = [weight(e, t) for e, t in pending] + [weight(e, t) * factor for e, t, _ in aside]
        if sum(weights) <= 0:
            return self.rng.choice(pending) if pending else self.rng.choice(aside)
        return self.rng.choices(pool, weights)[0]


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
