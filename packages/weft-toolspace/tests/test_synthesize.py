from __future__ import annotations

import random

from weft_toolspace.graph import build_graph
from weft_toolspace.models import Chain, ChainStep, EdgeKind, TraceCall, TraceRecord
from weft_toolspace.synthesize import candidates, deduplicate, to_task_graph
from weft_toolspace.walk import fill_arguments


def _s(mcp: str, tool: str, args: dict, result: object, mutated: bool = False) -> ChainStep:
    return ChainStep(
        node=f"{mcp}/{tool}",
        mcp=mcp,
        tool=tool,
        arguments=args,
        result=result,
        environment=f"env-{mcp}",
        mutated=mutated,
    )


CHAIN = Chain(
    id="c1",
    steps=[
        _s(
            "sql",
            "read_query",
            {"query": "SELECT * FROM staff"},
            [{"id": 1, "name": "Ada Lovelace"}],
        ),
        _s(
            "mem",
            "create_entities",
            {"entities": [{"name": "Ada Lovelace", "entityType": "person"}]},
            {"entities": []},
            mutated=True,
        ),
        _s(
            "sql",
            "write_query",
            {"query": "INSERT INTO staff (name, note) VALUES ('Grace', 'x')"},
            [{"affected_rows": 1}],
            mutated=True,
        ),
        _s("fs", "write_file", {"path": "a.txt", "content": "hello"}, "ok", mutated=True),
    ],
)


def test_candidates_cover_state_trace_and_outputs() -> None:
    cand = candidates(CHAIN)
    assert sorted(cand.trace) == [1, 2, 3]
    kinds = sorted(c.kind for c, _ in cand.final)
    assert kinds == ["return_contains", "row_exists", "workspace_file", "workspace_file"]
    ret = next(c for c, _ in cand.final if c.kind == "return_contains")
    assert ret.model_dump()["value"] == "Ada Lovelace" and ret.mcp == "sql"
    row = next(c for c, _ in cand.final if c.kind == "row_exists")
    assert row.model_dump()["where"] == {"name": "Grace", "note": "x"}
    v = cand.verifier()
    assert set(v.checkpoints) == {"s1", "s2", "s3", "final"}


def test_task_graph_and_dedup() -> None:
    cand = candidates(CHAIN)
    g = to_task_graph(CHAIN, "Do it.", cand)
    assert [n.task.mcp for n in g.nodes] == ["sql", "mem", "sql", "fs"]
    assert [e.kind.value for e in g.edges] == ["information", "information", "information"]
    assert g.verifier().checkpoints["final"] == g.final_checks
    shorter = Chain(id="c2", steps=CHAIN.steps[:2])
    g2 = to_task_graph(shorter, "Do less.", candidates(shorter))
    kept, dropped = deduplicate([g2, g])
    assert [k.id for k in kept] == ["c1"] and dropped == 1


def test_fill_arguments_routes_values_from_the_actual_output() -> None:
    def tc(tool: str, args: dict, result: object) -> TraceCall:
        return TraceCall(mcp="m", tool=tool, arguments=args, result=result)

    traces = [
        TraceRecord(
            id=str(i),
            source="ledger",
            calls=[
                tc("list", {}, {"entities": [{"name": f"P{i}x"}]}),
                tc("open", {"names": [f"P{i}x"]}, {}),
            ],
        )
        for i in range(3)
    ]
    g = build_graph(traces)
    edge = next(e for e in g.edges if e.kind is EdgeKind.DATA)
    args = fill_arguments(g, edge, {"entities": [{"name": "Zed Z"}]}, random.Random(0))
    assert args == {"names": ["Zed Z"]}
    # the routed value is missing from o_t: the neighbour is not admissible
    assert fill_arguments(g, edge, {"other": 1}, random.Random(0)) is None
