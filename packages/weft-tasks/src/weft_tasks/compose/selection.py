"""Which atomic tasks a composed graph holds, and in what order (the programmatic proposal).

A pick takes one task per MCP of the combination first; a one-task swap then lets a value found
(or an id created) on one MCP feed a task on another; the execution order puts a feeding task
before the task it feeds, without reordering any MCP's own lifecycle.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from weft_core.models import AtomicTask
from weft_tasks.atomic.bundle import BundleView
from weft_tasks.compose.created import created_ids, id_references
from weft_tasks.compose.flows import needed_ids, reported_ids, reported_values, writable_text


def pick(ranked: list[AtomicTask], k: int, banned: set[str]) -> list[AtomicTask]:
    """k tasks in rank order, one per MCP first (every MCP of the combination gets a node),
    never two of one MCP with the same chain, none of `banned`."""
    pool = [t for t in ranked if t.id not in banned]
    chosen: list[AtomicTask] = []
    for m in sorted({t.mcp for t in pool}):
        first = next((t for t in pool if t.mcp == m), None)
        if first is not None and len(chosen) < k:
            chosen.append(first)
    for t in pool:
        if len(chosen) >= k:
            break
        if t not in chosen and all(c.tool_chain != t.tool_chain or c.mcp != t.mcp for c in chosen):
            chosen.append(t)
    return chosen


class FlowIndex:
    """Which task can feed which: a read that reports a real row's text and a write of text on
    another MCP, a read that reports an object's key (an order's customer) and a task on
    another MCP that names the same object or points a new record at one of its kind, or a
    create and a task on another MCP that files a reference to the kind of object it creates
    (`compose.created`)."""

    def __init__(self, tasks: list[AtomicTask], bundles: dict[str, BundleView]) -> None:
        self.reports: dict[str, bool] = {}
        self.writes: dict[str, bool] = {}
        self.found: dict[str, set[tuple[str, Any]]] = {}
        self.named: dict[str, set[tuple[str, Any]]] = {}
        self.creates: dict[str, set[str]] = {}
        self.refers: dict[str, set[str]] = {}
        for t in tasks:
            b = bundles[t.mcp]
            self.reports[t.id] = bool(reported_values(t, b, 0))
            self.writes[t.id] = bool(writable_text(b, t))
            self.found[t.id] = {(k, f.value) for k, f in reported_ids(t, b, 0)}
            self.creates[t.id] = {c.entity for c in created_ids(t, b, 0)}
            self.refers[t.id] = set(id_references(t, b).values())
            values = {i.name: i.value for i in t.inputs}
            needs = needed_ids(t, b).values()
            self.named[t.id] = {(n.identity, values.get(n.input)) for n in needs} | {
                (n.identity, None) for n in needs if n.reference
            }

    def feeds(self, a: AtomicTask, b: AtomicTask) -> bool:
        if a.mcp == b.mcp:
            return False
        if self.reports[a.id] and self.writes[b.id]:
            return True
        if self.creates[a.id] & self.refers[b.id]:
            return True  # b files a reference to the kind of object a creates
        named = self.named[b.id]
        return any((k, v) in named or (k, None) in named for k, v in self.found[a.id])

    def linked(self, ts: list[AtomicTask]) -> bool:
        return any(self.feeds(a, b) for a in ts for b in ts)

    def files_created(self, ts: list[AtomicTask]) -> bool:
        """Whether a task of `ts` files a reference to what another MCP's task of `ts` creates."""
        return any(
            a.mcp != b.mcp and self.creates[a.id] & self.refers[b.id] for a in ts for b in ts
        )


def execution_order(chosen: list[AtomicTask], base_key: Any, flows: FlowIndex) -> list[AtomicTask]:
    """`chosen` in `base_key` order (reads, creates, changes, removals), except that a task that
    feeds one on another MCP runs before it. Tasks of one MCP keep their base order, so no
    lifecycle is reordered; a feed that would close a cycle is ignored."""
    base = sorted(chosen, key=base_key)
    n = len(base)
    succ: list[set[int]] = [set() for _ in range(n)]

    def reaches(a: int, b: int) -> bool:
        seen, stack = {a}, [a]
        while stack:
            x = stack.pop()
            if x == b:
                return True
            for y in succ[x] - seen:
                seen.add(y)
                stack.append(y)
        return False

    for i in range(n):
        for j in range(i + 1, n):
            if base[i].mcp == base[j].mcp:
                succ[i].add(j)
    for i in range(n):
        for j in range(n):
            if i == j or j in succ[i] or not flows.feeds(base[i], base[j]):
                continue
            if flows.feeds(base[j], base[i]) or reaches(j, i):
                continue
            succ[i].add(j)
    indeg = [0] * n
    for i in range(n):
        for j in succ[i]:
            indeg[j] += 1
    ready = [i for i in range(n) if indeg[i] == 0]
    out: list[AtomicTask] = []
    while ready:
        i = min(ready)
        ready.remove(i)
        out.append(base[i])
        for j in succ[i]:
            indeg[j] -= 1
            if indeg[j] == 0:
                ready.append(j)
    return out


def with_information_edge(
    chosen: list[AtomicTask],
    ranked: list[AtomicTask],
    banned: set[str],
    flows: FlowIndex,
) -> list[AtomicTask]:
    """`chosen`, with one task swapped when that lets a value found on one MCP feed a task on
    another (`FlowIndex.feeds`)."""
    return swap_until(chosen, ranked, banned, flows.linked)


def with_created_reference(
    chosen: list[AtomicTask],
    ranked: list[AtomicTask],
    banned: set[str],
    flows: FlowIndex,
) -> list[AtomicTask]:
    """`chosen`, with one task swapped when that lets an id created on one MCP be filed as a
    reference on another (a new ticket named in an email, a new order in a payment); such a
    pair is an information edge itself."""
    return swap_until(chosen, ranked, banned, flows.files_created)


def swap_until(
    chosen: list[AtomicTask],
    ranked: list[AtomicTask],
    banned: set[str],
    holds: Callable[[list[AtomicTask]], bool],
) -> list[AtomicTask]:
    """`chosen` if it spans one MCP or `holds` already; else the first one-task swap (best
    ranked candidate first, latest position first) after which it holds. A swap keeps every MCP
    of the combination and never repeats a chain on one MCP."""
    if len({t.mcp for t in chosen}) < 2 or holds(chosen):
        return chosen
    for cand in ranked:
        if cand in chosen or cand.id in banned:
            continue
        for pos in range(len(chosen) - 1, -1, -1):
            victim = chosen[pos]
            same = [t for t in chosen if t.mcp == victim.mcp]
            if len(same) == 1 and cand.mcp != victim.mcp:
                continue
            trial = [*chosen[:pos], cand, *chosen[pos + 1 :]]
            if holds(trial) and all(
                t.tool_chain != cand.tool_chain or t.mcp != cand.mcp
                for t in chosen
                if t is not victim
            ):
                return trial
    return chosen
