"""Walk control flow on a fake MegaMCP client (`weft_toolspace.testing.FakeMegaMCP`: in-memory
state, real snapshot/restore semantics): a neighbour that leads nowhere is rolled back one level
and another neighbour is taken."""

from __future__ import annotations

from typing import Any

import pytest

from weft_toolspace.graph import ToolGraph
from weft_toolspace.models import EdgeKind, EdgeRecord, NodeRecord
from weft_toolspace.testing import FakeMegaMCP, FakeResult
from weft_toolspace.walk import WalkConfig, Walker


def _nodes(*keys: str) -> dict[str, NodeRecord]:
    """One node per key on server `s`; walks start at `a`."""
    return {
        k: NodeRecord(
            key=k,
            mcp="s",
            tool=k,
            argument_names=[],
            count=4,
            starts=4 * (k == "a"),
            examples=[{}],
        )
        for k in keys
    }


def _edge(src: str, dst: str, w: float) -> EdgeRecord:
    return EdgeRecord(source=src, target=dst, kind=EdgeKind.STATE, count=2, weight=w)


def _graph() -> ToolGraph:
    edges = [
        _edge("a", "dead", 0.95),
        _edge("a", "c", 0.05),
        _edge("c", "d", 1.0),
        _edge("d", "c", 1.0),
    ]
    return ToolGraph(nodes=_nodes("a", "dead", "c", "d"), edges=edges)


class _Failing(FakeMegaMCP):
    """Calls of the tools in `fail` return an error (and the log of every call is kept)."""

    def __init__(self, fail: set[str]) -> None:
        super().__init__()
        self.fail = fail
        self.calls: list[str] = []

    async def call_tool(self, group: str, mcp: str, tool: str, args: dict[str, Any]) -> FakeResult:
        self.calls.append(tool)
        if tool in self.fail:
            self._last = mcp
            return FakeResult(True, None, "not_found")
        return await super().call_tool(group, mcp, tool, args)


async def test_a_dead_end_is_rolled_back_and_another_neighbour_taken() -> None:
    """`dead` leads on in the graph (to `x`), but `x` fails live: `dead` has no neighbour that
    works, so it is rolled back and the other neighbour of `a` is taken."""
    g = _graph()
    g.nodes.update(_nodes("x"))
    g.edges += [_edge("dead", "x", 1.0), _edge("x", "c", 1.0)]
    client = _Failing({"x"})
    env_of = {"a": "e0", "dead": "e0", "x": "e0", "c": "e1", "d": "e1"}
    walker = Walker(
        client,  # type: ignore[arg-type]
        g,
        env_of,
        WalkConfig(min_length=5, max_length=5, environments=2, attempts=4, seed=3),
    )
    chains = await walker.run()
    assert walker.stats.kept == 4, walker.stats
    assert walker.stats.rollbacks >= 1  # `dead` was tried (p = 0.95) and undone
    assert walker.stats.outcomes["backtrack"] >= 1
    for c in chains:
        tools = [s.tool for s in c.steps]
        assert tools[0] == "a" and "dead" not in tools and len(tools) == 5


async def test_a_neighbour_the_graph_holds_no_walk_from_is_never_called() -> None:
    """`dead` (p = 0.95) is a sink: no walk of L calls goes on from it, so the walk does not call
    it and take it back; it goes to `c` (p = 0.05), whose cycle holds the walk. Before, most
    rollbacks of the benchmark's walks were such calls into sinks (get_ticket, escalate_ticket)."""
    client = _Failing(set())
    env_of = {"a": "e0", "dead": "e0", "c": "e1", "d": "e1"}
    walker = Walker(
        client,  # type: ignore[arg-type]
        _graph(),
        env_of,
        WalkConfig(min_length=5, max_length=5, environments=2, attempts=4, seed=3),
    )
    chains = await walker.run()
    assert walker.stats.kept == 4 and len(chains) == 4
    assert "dead" not in client.calls, client.calls
    assert walker.stats.rollbacks == 0
    assert walker.stats.outcomes["no walk onward (not called)"] == 4
    # Mid-walk: from `c` with one environment covered and 4 calls made, `d` still leads to a
    # retained walk; from the sink `dead` none does.
    assert walker.admits_walk("d", frozenset({"e0"}), 4)
    assert not walker.admits_walk("dead", frozenset({"e0"}), 2)


async def test_walks_start_only_where_k_environments_are_reachable() -> None:
    g = _graph()
    g.nodes["lone"] = NodeRecord(
        key="lone", mcp="s", tool="lone", argument_names=[], count=9, starts=9, examples=[{}]
    )
    g.edges.append(EdgeRecord(source="lone", target="lone", kind=EdgeKind.STATE, count=9, weight=1))
    env_of = {"a": "e0", "dead": "e0", "c": "e1", "d": "e1", "lone": "e2"}
    walker = Walker(FakeMegaMCP(), g, env_of, WalkConfig(environments=2))  # type: ignore[arg-type]
    assert walker._starts() == ["a"]


async def test_no_walk_is_tried_where_the_graph_holds_none_of_length_l_over_k_environments() -> (
    None
):
    """Two environments are reachable from `a`, but every walk ends in the sink `c` after three
    calls: a walk of L = 5 can never be retained, so no live call is spent on one."""
    g = _graph()
    g.edges = [e for e in g.edges if (e.source, e.target) != ("d", "c")]
    g.edges = [e for e in g.edges if (e.source, e.target) != ("c", "d")]
    calls: list[str] = []

    class Counting(FakeMegaMCP):
        async def call_tool(
            self, group: str, mcp: str, tool: str, args: dict[str, Any]
        ) -> FakeResult:
            calls.append(tool)
            return await super().call_tool(group, mcp, tool, args)

    client = Counting()
    env_of = {"a": "e0", "dead": "e0", "c": "e1", "d": "e1"}
    walker = Walker(
        client,  # type: ignore[arg-type]
        g,
        env_of,
        WalkConfig(min_length=5, max_length=5, environments=2, attempts=3, seed=3),
    )
    assert not walker.admits_walk("a")
    assert await walker.run() == []
    assert walker.stats.discarded == {"graph admits no walk": 3}
    assert calls == [] and walker.stats.rollbacks == 0
    # With the c <-> d cycle back, a walk of 5 (a, c, d, c, d) exists.
    assert Walker(client, _graph(), env_of, walker.cfg).admits_walk("a")  # type: ignore[arg-type]
    # ... but not one over three environments.
    three = walker.cfg.model_copy(update={"environments": 3})
    assert not Walker(client, _graph(), env_of, three).admits_walk("a")  # type: ignore[arg-type]


async def test_a_heavy_self_loop_does_not_make_the_chain_one_repeated_call() -> None:
    """In a small mined graph the heaviest edge is often a self-loop (`create_ticket` after
    `create_ticket`). Eq. 3 alone (`repeat_weight` 1.0) then fills the chain by repeating one
    call; with repeats set aside (`repeat_weight` 0.0, the default) or with `revisit_decay` the
    other tools get their turn."""
    g = ToolGraph(
        nodes=_nodes("a", "b", "c", "d"),
        edges=[
            _edge("a", "a", 0.9),
            _edge("a", "b", 0.1),
            _edge("b", "c", 1.0),
            _edge("c", "d", 1.0),
            _edge("d", "a", 1.0),
        ],
    )
    env_of = {"a": "e0", "b": "e0", "c": "e1", "d": "e1"}

    async def distinct(decay: float, repeat: float) -> list[int]:
        cfg = WalkConfig(
            min_length=8,
            max_length=8,
            environments=1,
            attempts=12,
            seed=1,
            revisit_decay=decay,
            repeat_weight=repeat,
        )
        chains = await Walker(FakeMegaMCP(), g, env_of, cfg).run()  # type: ignore[arg-type]
        assert len(chains) == 12
        return [len({s.tool for s in c.steps}) for c in chains]

    eq3 = await distinct(1.0, 1.0)
    assert min(eq3) == 1 and sum(d <= 2 for d in eq3) >= 3  # a, a, a, ... (seed 1)
    assert min(await distinct(0.25, 1.0)) == 4  # a, b, c, d, a, ...
    assert min(await distinct(1.0, WalkConfig().repeat_weight)) == 4


def _cycle() -> tuple[ToolGraph, dict[str, str]]:
    """`a` calls itself (w 0.9) or goes round b, c, d back to `a`; a call of one node always
    does the same work here (no arguments, so no object: `work.work_of`)."""
    g = ToolGraph(
        nodes=_nodes("a", "b", "c", "d"),
        edges=[
            _edge("a", "a", 0.9),
            _edge("a", "b", 0.1),
            _edge("b", "c", 1.0),
            _edge("c", "d", 1.0),
            _edge("d", "a", 1.0),
        ],
    )
    return g, {"a": "e0", "b": "e0", "c": "e1", "d": "e1"}


async def test_a_walk_ends_on_its_own_when_only_repeats_are_left() -> None:
    """L is a maximum: with min_length 3 and max_length 30 every chain does the four tools once
    (a, b, c, d) and ends at d, whose only neighbour `a` would repeat work the chain did. Before,
    every chain had exactly L calls (here 30: `a` and the cycle over and over)."""
    g, env_of = _cycle()
    cfg = WalkConfig(min_length=3, max_length=30, environments=2, attempts=6, seed=5)
    walker = Walker(FakeMegaMCP(), g, env_of, cfg)  # type: ignore[arg-type]
    chains = await walker.run()
    assert len(chains) == 6
    assert {tuple(s.tool for s in c.steps) for c in chains} == {("a", "b", "c", "d")}
    assert {c.ended for c in chains} == {"no new work"}
    assert walker.stats.ended == {"no new work": 6}
    # At max_length the chain is cut whatever is left to do.
    short = cfg.model_copy(update={"min_length": 2, "max_length": 3})
    cut = await Walker(FakeMegaMCP(), g, env_of, short).run()  # type: ignore[arg-type]
    assert {len(c.steps) for c in cut} == {3} and {c.ended for c in cut} == {"max length"}


async def test_a_repeat_is_taken_only_when_nothing_else_reaches_min_length() -> None:
    """`a` -> `b` reaches the second environment but `b` is a sink: below min_length 4 the only
    continuation that can still make a retained chain is `a` again (the lookahead does not offer
    `b`), so the walk repeats `a` until `b` completes it: a, a, a, b. Avoiding the repeat
    there would dead-end every walk (h16e: a revisit decay of 0.25 kept 0 of 8)."""
    g = ToolGraph(nodes=_nodes("a", "b"), edges=[_edge("a", "a", 0.5), _edge("a", "b", 0.5)])
    env_of = {"a": "e0", "b": "e1"}
    cfg = WalkConfig(min_length=4, max_length=30, environments=2, attempts=4, seed=1)
    walker = Walker(FakeMegaMCP(), g, env_of, cfg)  # type: ignore[arg-type]
    chains = await walker.run()
    assert [[s.tool for s in c.steps] for c in chains] == [["a", "a", "a", "b"]] * 4
    assert {c.ended for c in chains} == {"no neighbour"}
    assert walker.stats.outcomes["repeat taken"] == 8
    # Each walk searched past its end once: back to the start, taking no repeat (a repeat adds
    # no work), and found nothing better; without the search nothing is rolled back.
    assert walker.stats.outcomes["searched past end"] == 4
    once = cfg.model_copy(update={"search_past_end": 0})
    first = Walker(FakeMegaMCP(), g, env_of, once)  # type: ignore[arg-type]
    assert [[s.tool for s in c.steps] for c in await first.run()] == [["a", "a", "a", "b"]] * 4
    assert first.stats.rollbacks == 0
    # The lookahead follows the lengths: from `a` a walk of 4..30 calls over both exists, not
    # one of at least 31.
    assert walker.admits_walk("a")
    long = cfg.model_copy(update={"min_length": 31, "max_length": 40})
    assert Walker(FakeMegaMCP(), g, env_of, long).admits_walk("a")  # type: ignore[arg-type]
    assert not Walker(FakeMegaMCP(), g, env_of, cfg).admits_walk("b", frozenset({"e0"}), 2)


def test_min_length_may_not_exceed_max_length() -> None:
    with pytest.raises(ValueError, match="min_length"):
        WalkConfig(min_length=9, max_length=5)


async def test_a_complete_chain_whose_continuations_fail_ends_instead_of_being_lost() -> None:
    """After min_length calls over K environments every neighbour of `b` fails live: the chain
    a, b ends there (more failures than max_rollbacks), it is not discarded."""
    g = ToolGraph(
        nodes=_nodes("a", "b", "x1", "x2", "x3"),
        edges=[_edge("a", "b", 1.0), *(_edge("b", f"x{i}", 1.0) for i in (1, 2, 3))],
    )
    env_of = {"a": "e0", "b": "e1", "x1": "e1", "x2": "e1", "x3": "e1"}
    cfg = WalkConfig(min_length=2, max_length=30, environments=2, attempts=2, max_rollbacks=1)
    client = _Failing({"x1", "x2", "x3"})
    walker = Walker(client, g, env_of, cfg)  # type: ignore[arg-type]
    chains = await walker.run()
    assert [[s.tool for s in c.steps] for c in chains] == [["a", "b"]] * 2
    assert walker.stats.ended == {"too many rollbacks": 2} and not walker.stats.discarded


async def test_a_search_past_the_end_keeps_the_chain_that_did_more_work() -> None:
    """a -> b (w 0.9) ends at once: b is a sink. a -> c -> d -> e (w 0.1) does more. Without a
    search every walk of seed 2 keeps a, b (the first chain that may end); with one, the end b
    is rolled back and the other neighbour of `a` taken, and the walk keeps a, c, d, e. A search
    that finds nothing better keeps the first chain (the test above)."""
    g = ToolGraph(
        nodes=_nodes("a", "b", "c", "d", "e"),
        edges=[
            _edge("a", "b", 0.9),
            _edge("a", "c", 0.1),
            _edge("c", "d", 1.0),
            _edge("d", "e", 1.0),
        ],
    )
    env_of = {"a": "e0", "b": "e1", "c": "e1", "d": "e1", "e": "e0"}
    cfg = WalkConfig(min_length=2, max_length=30, environments=2, attempts=6, seed=2)
    first = await Walker(  # type: ignore[arg-type]
        FakeMegaMCP(), g, env_of, cfg.model_copy(update={"search_past_end": 0})
    ).run()
    assert ["a", "b"] in [[s.tool for s in c.steps] for c in first]
    walker = Walker(FakeMegaMCP(), g, env_of, cfg)  # type: ignore[arg-type]
    chains = await walker.run()
    assert [[s.tool for s in c.steps] for c in chains] == [["a", "c", "d", "e"]] * 6
    assert {c.ended for c in chains} == {"no neighbour"}
    assert walker.stats.outcomes["searched past end"] >= 1
