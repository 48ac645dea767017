from __future__ import annotations

from weft_toolspace.clusters import cluster
from weft_toolspace.graph import build_graph, data_links, is_retry
from weft_toolspace.models import EdgeKind, EnvironmentKind, TraceCall, TraceRecord


def _c(
    mcp: str,
    tool: str,
    args: dict,
    result: object = None,
    error: str | None = None,
    mutated: bool = False,
) -> TraceCall:
    return TraceCall(
        mcp=mcp, tool=tool, arguments=args, result=result, error=error, mutated=mutated
    )


LIST = _c("fs", "list", {"path": "."}, "[FILE] lantern.txt\n[FILE] a.md")
READ = _c("fs", "read", {"path": "lantern.txt"}, "Notes about Ada Lovelace")
ADD = _c(
    "mem",
    "create",
    {"entities": [{"name": "Ada Lovelace", "limit": 10}]},
    {"ok": True},
    mutated=True,
)
OPEN = _c("mem", "open", {"names": ["Ada Lovelace"]}, {"entities": [{"name": "Ada Lovelace"}]})
FAIL = _c(
    "fs",
    "read",
    {"path": "nope.txt"},
    error="ENOENT",
)


def test_data_links_need_a_traceable_non_trivial_value() -> None:
    links = data_links(LIST, READ)
    assert [(lk.argument, lk.output) for lk in links] == [("path", "$~")]  # substring of a listing
    assert [lk.argument for lk in data_links(READ, ADD)] == ["entities.0.name"]
    # the value was in the user's text: not traceable to the output
    assert data_links(READ, ADD, prompt="remember Ada Lovelace") == []
    # small constants (limit=10) never link
    assert all(
        lk.argument != "entities.0.limit" for lk in data_links(_c("x", "y", {}, {"n": 10}), ADD)
    )
    assert data_links(FAIL, READ) == []


def test_retry_needs_an_error_then_another_tool_that_succeeds() -> None:
    assert is_retry(FAIL, LIST)
    assert not is_retry(FAIL, READ)  # same tool again
    assert not is_retry(LIST, READ)
    infra = FAIL.model_copy(update={"error_kind": "timeout"})
    assert not is_retry(infra, LIST)


def test_weights_pruning_and_state_pairs() -> None:
    traces = [
        TraceRecord(id=f"t{i}", source="ledger", calls=[LIST, READ, ADD, OPEN, FAIL, LIST])
        for i in range(3)
    ] + [TraceRecord(id="t9", source="ledger", calls=[READ, LIST])]
    g = build_graph(traces, state_pairs={("t0", 2), ("t1", 2)}, min_count=2)
    kinds = {(e.source.split("/")[1][:4], e.target.split("/")[1][:4], e.kind) for e in g.edges}
    assert ("list", "read", EdgeKind.DATA) in kinds
    assert ("crea", "open", EdgeKind.STATE) in kinds
    assert ("crea", "open", EdgeKind.DATA) not in kinds  # {"ok": true} carries no name
    assert ("read", "list", EdgeKind.RETRY) in kinds  # FAIL and READ share the node fs/read(path)
    e = next(e for e in g.edges if e.kind is EdgeKind.DATA and "list" in e.source)
    assert e.count == 3 and e.weight == 3 / g.nodes[e.source].count
    # t9's READ->LIST is seen once: pruned at min_count=2 (and never a data edge: no shared value)
    assert g.nodes["fs/read(path)"].errors == 3 and g.nodes["mem/create(entities)"].mutations == 3
    assert sum(g.share().values()) == 1.0
    nx_graph = g.to_networkx()
    assert nx_graph.number_of_edges() == len(g.edges)


def test_clusters_are_typed_by_mutation() -> None:
    traces = [
        TraceRecord(id=f"t{i}", source="ledger", calls=[LIST, READ, ADD, OPEN]) for i in range(2)
    ]
    g = build_graph(traces, state_pairs={("t0", 2), ("t1", 2)})
    envs = cluster(g, seed=0)
    assert sorted(n for e in envs for n in e.nodes) == sorted(g.nodes)
    kinds = {n: e.kind for e in envs for n in e.nodes}
    assert kinds["mem/create(entities)"] is EnvironmentKind.OPERATION
    assert kinds["fs/list(path)"] in (EnvironmentKind.STATELESS, EnvironmentKind.OPERATION)


def _sql(tool: str, query: str, result: object, mutated: bool = False) -> TraceCall:
    return _c("sqlite", tool, {"query": query}, result, mutated=mutated)


def test_a_value_carried_inside_a_longer_argument_is_a_data_link_but_constants_are_not() -> None:
    rows = _sql("read_query", "SELECT * FROM staff", [{"id": 1, "name": "Ada Lovelace"}])
    note = _c("fs", "write_file", {"path": "a.md", "content": "Ada Lovelace: engines"}, "ok")
    links = data_links(rows, note)
    assert [(lk.argument, lk.output, lk.value) for lk in links] == [
        ("content", "0.name^", "Ada Lovelace")
    ]
    # A column name in the describe output is in every INSERT the tool makes: a constant of it.
    desc = _sql("describe_table", "", [{"cid": 1, "name": "note", "type": "TEXT"}])
    insert = _sql("write_query", "INSERT INTO staff (name, note) VALUES ('Bo', 'x')", "ok")
    assert [lk.value for lk in data_links(desc, insert)] == ["note"]
    assert data_links(desc, insert, constants=frozenset({"INSERT", "name", "note"})) == []


def test_state_edges_record_which_argument_names_the_same_object() -> None:
    traces = [
        TraceRecord(
            id=f"t{i}",
            source="ledger",
            calls=[
                _sql("create_table", f"CREATE TABLE tab{i}x (id INTEGER, name TEXT)", "ok", True),
                _sql("write_query", f"INSERT INTO tab{i}x (name) VALUES ('A{i}')", "ok", True),
            ],
        )
        for i in range(3)
    ]
    g = build_graph(traces, state_pairs={(f"t{i}", 0) for i in range(3)})
    (edge,) = [e for e in g.edges if e.kind is EdgeKind.STATE]
    assert g.nodes[edge.source].starts == 3
    b = edge.examples[0].bindings[0]
    # the table name, not a SQL word (those are constants of both tools)
    assert (b.argument, b.source, b.value, b.whole) == ("query", "args:query", "tab0x", False)


def test_numbers_in_a_result_are_not_tokens_of_a_text_argument() -> None:
    # An example MCP's deal carries an amount (a float leaf); the next call's text argument is
    # searched for carried tokens: the number must be skipped, not crash the miner.
    prev = TraceCall(
        mcp="crm",
        tool="update_deal",
        arguments={"deal_id": "DEA-0007"},
        result={"deal": {"deal_id": "DEA-0007", "amount": 25.5, "title": "alpha"}},
    )
    nxt = TraceCall(mcp="helpdesk", tool="add_comment", arguments={"body": "DEA-0007 is won"})
    links = data_links(prev, nxt)
    assert [(x.argument, x.output, x.value) for x in links] == [
        ("body", "deal.deal_id^", "DEA-0007")
    ]
