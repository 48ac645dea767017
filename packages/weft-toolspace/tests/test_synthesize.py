from __future__ import annotations

import random

from weft_toolspace.fill import fill_arguments
from weft_toolspace.graph import build_graph
from weft_toolspace.models import Chain, ChainStep, EdgeKind, TraceCall, TraceRecord
from weft_toolspace.synthesize import candidates, deduplicate, to_task_graph


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


def test_walk_arguments_follow_the_same_object_and_the_same_row() -> None:
    def tc(tool: str, args: dict, result: object, mutated: bool = False) -> TraceCall:
        return TraceCall(mcp="m", tool=tool, arguments=args, result=result, mutated=mutated)

    traces = [
        TraceRecord(
            id=str(i),
            source="ledger",
            calls=[
                tc("create_table", {"query": f"CREATE TABLE tab{i} (name TEXT)"}, "ok", True),
                tc("write_query", {"query": f"INSERT INTO tab{i} (name) VALUES ('N{i}x')"}, "ok"),
                tc("read_query", {"query": "SELECT 1"}, [{"name": f"Per{i}", "note": f"No{i}"}]),
                tc("create_entities", {"entities": [{"name": f"Per{i}", "obs": [f"No{i}"]}]}, {}),
            ],
        )
        for i in range(3)
    ]
    g = build_graph(traces, state_pairs={(str(i), 0) for i in range(3)})
    state = next(e for e in g.edges if e.kind is EdgeKind.STATE)
    args = fill_arguments(
        g, state, "ok", random.Random(0), {"query": "CREATE TABLE fresh (name TEXT)"}
    )
    assert args is not None and args["query"].startswith("INSERT INTO fresh ")
    data = next(e for e in g.edges if e.kind is EdgeKind.DATA and "read_query" in e.source)
    rows = [{"name": "Ann", "note": "a"}, {"name": "Bob", "note": "b"}]
    for seed in range(5):
        got = fill_arguments(g, data, rows, random.Random(seed))
        assert got is not None
        ent = got["entities"][0]
        # name and observation come from one row, not mixed across rows
        assert (ent["name"], ent["obs"][0]) in {("Ann", "a"), ("Bob", "b")}
    assert fill_arguments(g, data, [{"other": "x"}], random.Random(0)) is None


def test_replays_mask_the_file_times_the_filesystem_server_reports() -> None:
    from weft_toolspace.counterfactual import observation_text

    a = "size: 29\ncreated: Wed Dec 02 2026 00:45:08 GMT+0000 (Coordinated Universal Time)"
    b = "size: 29\ncreated: Thu Dec 03 2026 10:05:18 GMT+0000 (Coordinated Universal Time)"
    assert observation_text(a) == observation_text(b)
    assert observation_text(a) != observation_text(a.replace("29", "30"))


def test_task_text_states_each_goal_once() -> None:
    from weft_toolspace.synthesize import task_goals

    step = ChainStep(
        node="n",
        mcp="fs",
        tool="write_file",
        arguments={"path": "a.md", "content": "Ada: x"},
        environment="e",
        mutated=True,
    )
    cand = candidates(Chain(id="c", steps=[step, step.model_copy()]))
    assert len(cand.final) == 2
    assert [g.text for g in task_goals(cand)] == ["the file 'a.md' contains \"Ada: x\""]


def test_a_state_edge_takes_the_id_the_actual_call_returned_not_the_recorded_one() -> None:
    """create_ticket -> escalate_ticket is both a state and a data edge (the escalate needs the
    ticket the create made). Walking the state edge used to keep the recorded ticket id (a
    ticket of the recording, not of the walk: "not found" live); it takes the returned one."""

    def tc(tool: str, args: dict, result: object) -> TraceCall:
        return TraceCall(mcp="h", tool=tool, arguments=args, result=result, mutated=True)

    traces = [
        TraceRecord(
            id=str(i),
            source="ledger",
            calls=[
                tc("create_ticket", {"customer_id": "CUS-0001"}, {"ticket": {"ticket_id": f"TIC-000{i}"}}),
                tc("escalate_ticket", {"ticket_id": f"TIC-000{i}"}, {"ticket": {"ticket_id": f"TIC-000{i}"}}),
            ],
        )
        for i in range(7, 10)
    ]  # fmt: skip
    g = build_graph(traces, state_pairs={(str(i), 0) for i in range(7, 10)})
    state = next(e for e in g.edges if e.kind is EdgeKind.STATE)
    made = {"ticket": {"ticket_id": "TIC-0042"}}
    for seed in range(5):
        args = fill_arguments(g, state, made, random.Random(seed), {"customer_id": "CUS-0001"})
        assert args == {"ticket_id": "TIC-0042"}, args
