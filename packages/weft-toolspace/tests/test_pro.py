"""The §5 Pro upgrade on a hand-built graph: which outside tools are linked (data and state edges
only, hop by hop), and that Pro walks (L x 2, K + 1) on the expanded graph cover more
environments, calls and servers than the environment's own walks. Walks run on the fake MegaMCP
client of `weft_toolspace.testing` (in-memory state, real snapshot/restore semantics)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from weft_toolspace.cli import main
from weft_toolspace.clusters import cluster, environment_of
from weft_toolspace.exceptions import ToolSpaceUserError
from weft_toolspace.graph import ToolGraph
from weft_toolspace.models import DataLink, EdgeKind, EdgeRecord, NodeRecord
from weft_toolspace.pro import ProConfig, link_outside, subgraph, walk_environment
from weft_toolspace.testing import FakeMegaMCP
from weft_toolspace.walk import WalkConfig


def _graph() -> ToolGraph:
    """Environment `bench` (a <-> b); outside: `crm` c <-> d, reached by a data edge b -> c;
    `mail` x, related only to d (hop 2); `log` r, reached from a only by a retry edge."""
    where = {"a": "bench", "b": "bench", "c": "crm", "d": "crm", "x": "mail", "r": "log"}
    nodes = {
        k: NodeRecord(
            key=k, mcp=m, tool=k, argument_names=[], count=4, starts=4 * (k == "a"), examples=[{}]
        )
        for k, m in where.items()
    }

    def e(src: str, dst: str, kind: EdgeKind = EdgeKind.STATE) -> EdgeRecord:
        links = [DataLink(argument="ref", output="done", json_type="string")]
        return EdgeRecord(
            source=src,
            target=dst,
            kind=kind,
            count=2,
            weight=0.5,
            links=links if kind is EdgeKind.DATA else [],
        )

    edges = [
        e("a", "b"),
        e("b", "a"),
        e("b", "c", EdgeKind.DATA),
        e("c", "d"),
        e("d", "c"),
        e("x", "d", EdgeKind.DATA),
        e("a", "r", EdgeKind.RETRY),
    ]
    return ToolGraph(nodes=nodes, edges=edges)


def test_outside_tools_are_linked_by_data_and_state_edges_only() -> None:
    env = link_outside(_graph(), ["bench"])
    assert env.base_nodes == ["a", "b"]
    assert [(t.node, t.hop, t.via) for t in env.linked] == [("c", 1, ["b -data-> c"])]
    assert sorted(env.graph.nodes) == ["a", "b", "c"] and env.linked_servers == ["crm"]
    # hop 2: d is related to c (state, both ways); x reaches d by data only at hop 3
    two = link_outside(_graph(), ["bench"], hops=2)
    assert [(t.node, t.hop) for t in two.linked] == [("c", 1), ("d", 2)]
    three = link_outside(_graph(), ["bench"], hops=3)
    assert [(t.node, t.hop) for t in three.linked] == [("c", 1), ("d", 2), ("x", 3)]
    assert "r" not in three.graph.nodes  # a retry edge relates no data or state
    assert all(
        e.source in three.graph.nodes and e.target in three.graph.nodes for e in three.graph.edges
    )
    with pytest.raises(ToolSpaceUserError, match="no tool of nowhere in the graph"):
        link_outside(_graph(), ["nowhere"])


async def test_pro_walks_are_longer_and_cross_more_environments() -> None:
    base = WalkConfig(min_length=3, max_length=3, environments=1, attempts=4, seed=2)
    pro = ProConfig(hops=2)
    assert (pro.walk(base).max_length, pro.walk(base).environments) == (6, 2)
    assert pro.walk(base).min_length == 6
    graph = _graph()
    env = link_outside(graph, ["bench"], hops=pro.hops)
    own = subgraph(graph, set(env.base_nodes))
    env_of = environment_of(cluster(env.graph, seed=0, resolution=1.0))
    assert env_of["a"] == env_of["b"] != env_of["c"] == env_of["d"]
    fake: Any = FakeMegaMCP()
    _, b = await walk_environment(fake, own, env_of, base)
    chains, p = await walk_environment(fake, env.graph, env_of, pro.walk(base))
    assert b.kept == 4 and p.kept == 4, (b, p)
    assert all(len(c.steps) >= 6 and len(c.environments) >= 2 for c in chains)
    assert p.calls > b.calls and p.environments_covered > b.environments_covered
    assert (b.environments_per_chain, p.environments_per_chain) == (1.0, 2.0)
    assert b.servers_covered == ["bench"] and p.servers_covered == ["bench", "crm"]
    # without the linked tools the environment admits no walk of Pro's L and K at all
    _, alone = await walk_environment(fake, own, env_of, pro.walk(base))
    assert alone.kept == 0 and alone.discarded == {"graph admits no walk": 4}


def test_pro_cli_rejects_an_unknown_environment_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "graph.json").write_text(_graph().model_dump_json())
    assert main(["pro", "-o", str(tmp_path), "--servers", "nowhere"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "no tool of nowhere" in err
    assert main(["evidence", "-o", str(tmp_path)]) == 0
    ev = json.loads((tmp_path / "evidence.json").read_text())
    assert {(e["source_tool"], e["target_tool"]) for e in ev["edges"]} >= {("b", "c")}
