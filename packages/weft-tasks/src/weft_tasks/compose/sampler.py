"""Coverage-aware sampling of MCP combinations and candidate atomic tasks (paper App. A.2).

Within a profile's ranges the sampler picks a shape (tasks, MCPs, domains), then domains and
MCPs that are underrepresented so far relative to their capacity (retained atomic tasks), and
ranks candidate combinations by shared entities, complementary operations and functional
redundancy. A combination must have capacity for ceil(k * (1 + rho)) candidate tasks: the surplus
rho is reserved because not every local objective fits a shared scenario. Usage is updated when a
combination is accepted, before its tasks are drawn.

With execution evidence (`witnessed`, ToolSpace §4.1.2: tool-to-tool data and state edges seen in
real traces) combinations whose MCPs real traces connected, and atomic tasks whose tool chains
real traces witnessed, rank higher; without it the ranking is exactly the evidence-free one.
"""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import combinations, islice

from pydantic import BaseModel, Field

from weft_core.models import AtomicTask, ExecutionEvidence
from weft_tasks.atomic.library import MCPLibrary
from weft_tasks.compose.created import created_ids, id_references
from weft_tasks.compose.flows import reported_ids
from weft_tasks.compose.links import (
    complementary_score,
    linked,
    redundancy_score,
    shared_entity_score,
)
from weft_tasks.compose.profiles import Profile
from weft_tasks.compose.witnessed import WitnessIndex

# Weights of the combination ranking; underrepresentation leads so coverage broadens.
W_UNDER, W_SHARED, W_COMPLEMENT, W_REDUNDANT = 2.0, 1.0, 0.3, 0.5
# Execution-witnessed connection counts as much as shared entities: a pair real traces connected
# is at least as good a sign of one workflow as a shared business object, but must not outweigh
# coverage (W_UNDER), or the witnessed corner of the library would be all that is composed.
W_WITNESSED = 1.0
MAX_COMBINATIONS = 300


class Shape(BaseModel):
    profile: str
    tasks: int
    mcps: int
    domains: int


@dataclass(frozen=True)
class _StaticFeatures:
    domains: list[str]
    connected: float
    shared: float
    complementary: float
    redundancy: float
    capacity: int


class Combination(BaseModel):
    mcps: list[str]
    domains: list[str]
    score: float
    features: dict[str, float] = Field(default_factory=dict)


def _key(c: Combination) -> tuple[float, float]:
    # a combination whose data-holding MCPs share no business object cannot serve one
    # objective: the judge sees connected combinations first
    return (-c.features.get("connected", 0.0), -c.score)


def _ranked(out: list[Combination]) -> list[Combination]:
    return sorted(out, key=_key)


class CoverageSampler:
    """Keeps capacity and usage per MCP, domain and task, and samples against them."""

    def __init__(
        self,
        libraries: Sequence[MCPLibrary],
        *,
        surplus: float = 0.5,
        seed: int = 0,
        witnessed: ExecutionEvidence | None = None,
    ) -> None:
        self.libs = {lib.mcp: lib for lib in libraries if lib.tasks}
        self.capacity = {m: len(lib.tasks) for m, lib in self.libs.items()}
        self.surplus = surplus
        self.rng = random.Random(seed)
        self.usage_mcp: Counter[str] = Counter()
        self.usage_domain: Counter[str] = Counter()
        self.usage_task: Counter[str] = Counter()
        # The libraries are fixed for the sampler's life, so their domains, capacities and each
        # combination's features are computed once: scoring every combination anew for every
        # task was half of composition's CPU.
        self._domains: dict[str, list[str]] = {}
        for m, lib in sorted(self.libs.items()):
            self._domains.setdefault(lib.domain, []).append(m)
        self._domain_capacity = {
            d: sum(self.capacity[m] for m in ms) for d, ms in self._domains.items()
        }
        self._static: dict[tuple[str, ...], _StaticFeatures] = {}
        self._finder_memo: dict[str, bool] = {}
        self._ids_memo: dict[str, tuple[set[str], set[str]]] = {}
        # None = the evidence-free ranking, byte for byte (no feature added, no draw reordered)
        self.witness: WitnessIndex | None = (
            WitnessIndex(witnessed, {m: lib.bundle.tools for m, lib in self.libs.items()})
            if witnessed is not None
            else None
        )

    # ------------------------------------------------------------------ statistics
    @property
    def domains(self) -> dict[str, list[str]]:
        return {d: list(ms) for d, ms in self._domains.items()}

    def domain_capacity(self, d: str) -> int:
        return self._domain_capacity.get(d, 0)

    def mcp_rate(self, m: str) -> float:
        return self.usage_mcp[m] / self.capacity[m]

    def domain_rate(self, d: str) -> float:
        return self.usage_domain[d] / max(1, self.domain_capacity(d))

    def required(self, k: int) -> int:
        """Candidate tasks to draw for a k-node graph: k plus the surplus rho."""
        return math.ceil(k * (1 + self.surplus))

    # ------------------------------------------------------------------ sampling
    def best_shape(
        self, profile: Profile, tries: int = 3
    ) -> tuple[Shape, list[Combination]] | None:
        """Of a few random shapes of the profile, the one whose best combination ranks highest, so
        a shape only one overused corner of the library can serve does not keep winning."""
        best: tuple[Shape, list[Combination]] | None = None
        for _ in range(tries):
            shape = self.shape(profile)
            if shape is None:
                return None
            ranked = self.candidates(shape)
            if (
                ranked and (best is None or not best[1] or _key(ranked[0]) < _key(best[1][0]))
            ) or best is None:
                best = (shape, ranked)
        return best

    def shape(self, profile: Profile) -> Shape | None:
        """A random (tasks, MCPs, domains) inside the profile that this library can serve."""
        n_mcps, n_domains = len(self.libs), len(self._domains)
        sizes = sorted((len(v) for v in self._domains.values()), reverse=True)
        total_cap = sum(self.capacity.values())
        options = [
            (k, m, d)
            for k in profile.tasks.clip(total_cap)
            for m in profile.mcps.clip(n_mcps)
            for d in profile.domains.clip(min(m, n_domains))
            if k >= m and sum(sizes[:d]) >= m
        ]
        if not options:
            return None
        k, m, d = self.rng.choice(options)
        return Shape(profile=profile.name, tasks=k, mcps=m, domains=d)

    def combinations(self, shape: Shape, domains: Sequence[str]) -> list[Combination]:
        """MCP combinations over exactly `domains`, best first."""
        pool = [m for d in domains for m in self._domains[d]]
        self.rng.shuffle(pool)
        scored = (
            self.score(c, shape.tasks)
            for c in islice(combinations(pool, shape.mcps), MAX_COMBINATIONS)
        )
        out = [
            c
            for c in scored
            if c is not None and set(c.domains) == set(domains) and self._fits(c, shape)
        ]
        return _ranked(out)

    def candidates(self, shape: Shape) -> list[Combination]:
        """Combinations of the shape's MCP count and domain breadth, best first: connected ones
        (their data-holding MCPs share a business object), then by score, where the usage of
        domains and MCPs relative to capacity counts as much as shared entities. Small libraries
        are enumerated; large ones sampled."""
        names = sorted(self.libs)
        if math.comb(len(names), shape.mcps) <= 4 * MAX_COMBINATIONS:
            combos: Iterable[tuple[str, ...]] = combinations(names, shape.mcps)
        else:
            combos = {
                tuple(sorted(self.rng.sample(names, shape.mcps)))
                for _ in range(2 * MAX_COMBINATIONS)
            }
        out = []
        for combo in combos:
            if len({self.libs[m].domain for m in combo}) != shape.domains:
                continue
            c = self.score(combo, shape.tasks)
            if c is not None and self._fits(c, shape):
                out.append(c)
        return _ranked(out)

    def _fits(self, c: Combination, shape: Shape) -> bool:
        return sum(self.capacity[m] for m in c.mcps) >= shape.tasks

    def _features(self, combo: Sequence[str]) -> _StaticFeatures:
        """What a combination is, whatever has been sampled so far (computed once per combination)."""
        key = tuple(combo)
        found = self._static.get(key)
        if found is None:
            bundles = [self.libs[m].bundle for m in combo]
            core = [b for b in bundles if any(not e.reference_data for e in b.entities.entities)]
            found = self._static[key] = _StaticFeatures(
                domains=sorted({self.libs[m].domain for m in combo}),
                # no MCP holding business data (only reference lookups or a workspace): nothing
                # to act on
                connected=1.0 if core and linked(core) else 0.0,
                shared=shared_entity_score(bundles),
                complementary=complementary_score(bundles),
                redundancy=redundancy_score(bundles),
                capacity=sum(self.capacity[m] for m in combo),
            )
        return found

    def score(self, combo: Sequence[str], tasks: int = 1) -> Combination | None:
        """Rank features of one combination: underrepresentation of its MCPs and domains, shared
        entities, complementary operations, functional redundancy, surplus capacity."""
        f = self._features(combo)
        doms = f.domains
        connected, shared, comp, red = f.connected, f.shared, f.complementary, f.redundancy
        # usage relative to the library-wide mean rate, so the signal stays sharp as the corpus grows
        mean_m = max(1e-9, sum(self.mcp_rate(m) for m in self.libs) / len(self.libs))
        mean_d = max(1e-9, sum(self.domain_rate(d) for d in self._domains) / len(self._domains))
        under = sum(1 / (1 + self.mcp_rate(m) / mean_m) for m in combo) / len(combo)
        under_dom = sum(1 / (1 + self.domain_rate(d) / mean_d) for d in doms) / len(doms)
        surplus_ok = 1.0 if f.capacity >= self.required(tasks) else 0.0
        score = (
            W_UNDER * (under + under_dom) / 2
            + W_SHARED * shared
            + W_COMPLEMENT * comp
            - W_REDUNDANT * red
            + 0.2 * surplus_ok
        )
        features = {
            "underrepresented": under,
            "underrepresented_domains": under_dom,
            "shared_entities": shared,
            "complementary": comp,
            "redundancy": red,
            "surplus": surplus_ok,
            "connected": connected,
        }
        if self.witness is not None:
            features["witnessed"] = witnessed = self.witness.combination(combo)
            score += W_WITNESSED * witnessed
        return Combination(
            mcps=sorted(combo),
            domains=list(doms),
            score=score + 1e-6 * self.rng.random(),
            features=features,
        )

    def commit(self, combo: Combination, tasks: int) -> None:
        """Charge a combination's planned tasks to its MCPs and domains (before drawing tasks)."""
        share = self._split(combo.mcps, tasks)
        for m, n in share.items():
            self.usage_mcp[m] += n
            self.usage_domain[self.libs[m].domain] += n

    def _split(self, mcps: Sequence[str], total: int) -> dict[str, int]:
        """At least one per MCP, the rest in proportion to capacity."""
        out = dict.fromkeys(mcps, 1)
        rest = total - len(mcps)
        cap = sum(self.capacity[m] for m in mcps)
        extra = {m: rest * self.capacity[m] / cap for m in mcps}
        for m in mcps:
            out[m] += math.floor(extra[m])
        left = total - sum(out.values())
        for m in sorted(mcps, key=lambda m: -(extra[m] - math.floor(extra[m])))[:left]:
            out[m] += 1
        return out

    def draw(self, combo: Combination, tasks: int) -> list[AtomicTask]:
        """Candidate tasks for a graph of `tasks` nodes: ceil(tasks * (1 + rho)) of them (as the
        combination allows), every MCP represented, least-used tasks first; with execution
        evidence, of equally used tasks those whose tool chains real traces witnessed first."""
        need = min(self.required(tasks), sum(self.capacity[m] for m in combo.mcps))
        share = self._split(combo.mcps, need)
        out: list[AtomicTask] = []
        for m in combo.mcps:
            ranked = sorted(self.libs[m].tasks, key=lambda t: self._task_key(t, combo.mcps))
            took = ranked[: share[m]]
            if len(combo.mcps) > 1 and share[m] >= 2 and not any(self._finds(t) for t in took):
                # a task that finds an object's key lets another MCP's task use it: without
                # one in the pool, nothing can flow between the services
                finder = next((t for t in ranked[share[m] :] if self._finds(t)), None)
                if finder is not None:
                    took[-1] = finder
            out.extend(took)
        return self._with_filed_id(combo, out)

    def _ids(self, task: AtomicTask) -> tuple[set[str], set[str]]:
        """(kinds of object `task` creates, kinds it files a reference to)."""
        got = self._ids_memo.get(task.id)
        if got is None:
            b = self.libs[task.mcp].bundle
            got = self._ids_memo[task.id] = (
                {c.entity for c in created_ids(task, b, 0)},
                set(id_references(task, b).values()),
            )
        return got

    def _with_filed_id(self, combo: Combination, pool: list[AtomicTask]) -> list[AtomicTask]:
        """`pool`, holding a task that creates an object on one MCP of the combination and one
        that files a reference to it on another (a new order and its payment) when the
        libraries have such a pair and the pool has none: each takes the place of the pool's
        last task of its MCP, so every MCP stays represented."""
        if len(combo.mcps) < 2:
            return pool

        def pairs(ts: Sequence[AtomicTask]) -> Iterable[tuple[AtomicTask, AtomicTask]]:
            return (
                (a, b)
                for a in ts
                for b in ts
                if a.mcp != b.mcp and self._ids(a)[0] & self._ids(b)[1]
            )

        if next(iter(pairs(pool)), None) is not None:
            return pool
        every = [t for m in combo.mcps for t in self.libs[m].tasks]
        pair = min(
            pairs(every),
            key=lambda ab: self.usage_task[ab[0].id] + self.usage_task[ab[1].id],
            default=None,
        )
        if pair is None:
            return pool
        out = list(pool)
        for t in pair:
            if t in out:
                continue
            pos = max(
                (i for i, o in enumerate(out) if o.mcp == t.mcp and o not in pair), default=None
            )
            if pos is None:
                return pool
            out[pos] = t
        return out

    def _task_key(self, task: AtomicTask, mcps: Sequence[str]) -> tuple[float, ...]:
        used, tie = float(self.usage_task[task.id]), self.rng.random()
        if self.witness is None:
            return (used, tie)
        others = [m for m in mcps if m != task.mcp]
        return (used, -self.witness.task(task, others), tie)

    def _finds(self, task: AtomicTask) -> bool:
        found = self._finder_memo.get(task.id)
        if found is None:
            found = self._finder_memo[task.id] = bool(
                reported_ids(task, self.libs[task.mcp].bundle, 0)
            )
        return found

    def record(self, used: Sequence[AtomicTask]) -> None:
        for t in used:
            self.usage_task[t.id] += 1

    def unrecord(self, used: Sequence[AtomicTask]) -> None:
        """Take back the usage of a composed graph that was then rejected."""
        for t in used:
            self.usage_task[t.id] -= 1
